// SPDX-License-Identifier: MIT
// This file defines the affinity and memory-placement expressions of scenario files, as Xen's
// xl.cfg `cpus` / `cpus_soft` express them: `all`, `node:N`, `socket:N`, `core:N`,
// `cpus:[0,2,4-7]` (or `cpus:0-3`), and `node-round-robin` (VM instance i gets node i mod nodes,
// i counting every VM instance in file order).
#pragma once

#include <string>
#include <vector>

#include "app/yaml_reader.h"
#include "topology/topology.h"

namespace vcpusim::app {

/// Resolves an affinity expression for VM instance `vm_index`; errors name the field.
topo::CpuSet resolve_affinity(const YamlReader& at, const std::string& text, const topo::Topology& t,
                              std::uint32_t vm_index);
/// One spelling of an affinity expression's set where it does not depend on the machine: a
/// `cpus:` list sorted with its ranges merged (cpus:[1,0], cpus:0-1 and cpus:[0, 1] are all
/// cpus:[0-1]), and node:N, socket:N and core:N with N as a plain number. Other text (all,
/// node-round-robin, or an expression resolve_affinity refuses) comes back as it was.
std::string canonical_affinity(const std::string& text);
/// The nodes a CpuSet touches.
std::vector<topo::NodeId> nodes_of(const topo::CpuSet& s, const topo::Topology& t);

}  // namespace vcpusim::app
