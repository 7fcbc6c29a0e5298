// SPDX-License-Identifier: MIT
// This file declares where vcpusim looks for its data files (topology presets, scenarios), so a
// scenario can say `topology: xeon-x5570-2s` and work from the source tree, from an installed
// copy and from a test binary alike. The search order is: $VCPUSIM_CONFIG_DIR, the source tree's
// configs/ compiled in as VCPUSIM_CONFIG_DIR, then ../share/vcpusim/configs beside the executable.
#pragma once

#include <string>
#include <vector>

namespace vcpusim::app {

/// The configuration directories in search order (those that are set, existing or not), for
/// messages that say where a file was looked for.
std::vector<std::string> config_search_dirs();

/// Where find_config found nothing, but not because nothing was there: the path whose lookup
/// failed for another reason than absence, and why (the system's "Too many levels of symbolic
/// links", or a symbolic link to nothing). Both are empty when every place simply lacked the file.
struct ConfigMiss {
  std::string path;
  std::string reason;
};

/// The first existing path `dir/relative` over config_search_dirs(), e.g. for
/// "topologies/xeon-x5570-2s.yaml"; "" if there is none, or if something at that name in an
/// earlier directory cannot be reached (a later directory's file would run in its place), and
/// then, if `miss` is given, it names that place and why.
std::string find_config(const std::string& relative, ConfigMiss* miss = nullptr);

/// Names of the topology presets (topologies/NAME.yaml) in all config directories, sorted and
/// without duplicates; each one resolves through find_config().
std::vector<std::string> list_topology_presets();

}  // namespace vcpusim::app
