// SPDX-License-Identifier: MIT
// This file declares how a scenario's `topology:` value becomes a machine. The value is a preset
// name (`xeon-x5570-2s`, found as topologies/NAME.yaml on the config search path), a path to a
// topology file (relative to the scenario's directory, absolute, or relative to a config
// directory as in `topologies/xeon-x5570-2s.yaml`), or an inline mapping with the same keys as a
// topology file:
//
//   name: my-box                  # optional; default: the file's stem, or "inline"
//   sockets: 2                    # required, 1..512
//   cores_per_socket: 4           # required, per socket, 1..512
//   threads_per_core: 2           # required, 1..8
//   nodes: 2                      # required; a multiple or a divisor of sockets
//   distances: [[10, 21], [21, 10]]    # optional ACPI SLIT, nodes x nodes; default 10/20
//   latency_ns: [[65, 106], [106, 65]] # optional, measured; default: distance / 10 as ratio
//   node_bandwidth_mbps: 19000    # optional, STREAM-like MB/s per node; 0 = unlimited (default)
//   remote_bandwidth_ratio: 0.6   # optional, remote / local bandwidth, (0, 1]; default 0.5
//   cores_per_llc: 4              # optional, cores sharing an LLC; divides a node's cores within
//                                 # a socket; default all of them
//
// Every mistake is a ConfigError at the offending line: YamlReader checks keys, types and
// ranges; load_topology() also turns build_topology()'s TopologyError into one.
#pragma once

#include "app/yaml_reader.h"
#include "topology/topology.h"
#include "topology/topology_spec.h"

namespace vcpusim::app {

/// Reads the spec that `r` (the scenario's `topology:` value) names or holds. Checks keys, types
/// and ranges, not the consistency of the whole (that is build_topology()'s job): prefer
/// load_topology(), whose errors point at the line.
topo::TopologySpec load_topology_spec(const YamlReader& r);

/// The file that `r` (the scenario's `topology:` value) makes the loader read, resolved as
/// load_topology() resolves it: a preset's file, or a path (beside the scenario, absolute, or in
/// a config directory); "" for an inline mapping. An input of the command, so no output may
/// replace it. ConfigError, as load_topology()'s, for a value that names no file.
std::string topology_file(const YamlReader& r);

/// Reads the spec and builds the machine. A TopologyError becomes a ConfigError at the
/// offending field's node (the element, for a bad distances or latency_ns entry), in whichever
/// file holds it, or at `r` when the field was left out.
topo::Topology load_topology(const YamlReader& r);

}  // namespace vcpusim::app
