// SPDX-License-Identifier: MIT
// Tests of app/topology_loader and app/config_paths: a scenario's `topology:` value as an inline
// mapping, a preset name or a file path; every mistake a ConfigError carrying the line of the
// offending YAML node; the shipped presets in configs/topologies/ describing the machines they
// are named after. YAML is given inline through YamlReader::load_string, so each expected line
// number can be read off the literal.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "app/config_error.h"
#include "app/config_paths.h"
#include "app/topology_loader.h"
#include "app/yaml_reader.h"
#include "topology/topology.h"

namespace vcpusim::app {
namespace {
namespace fs = std::filesystem;

// The `topology:` value of a scenario text.
YamlReader topology_of(const std::string& text, const std::string& file = "scenario.yaml") {
  return YamlReader::load_string(text, file).at("topology");
}

ConfigError config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError("", 0, 0, "", "none");
}

ConfigError load_error(const std::string& text) {
  return config_error([&] { (void)load_topology(topology_of(text)); });
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A scratch directory, removed at the end of the test.
struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "vcpusim-topo-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel) << text;
  }
  fs::path path;
};

// Sets VCPUSIM_CONFIG_DIR for the scope of a test and restores what was there.
struct ScopedConfigDir {
  explicit ScopedConfigDir(const std::string& dir) {
    if (const char* old = std::getenv("VCPUSIM_CONFIG_DIR")) {
      had_ = true;
      old_ = old;
    }
    setenv("VCPUSIM_CONFIG_DIR", dir.c_str(), 1);
  }
  ~ScopedConfigDir() {
    if (had_) setenv("VCPUSIM_CONFIG_DIR", old_.c_str(), 1);
    else unsetenv("VCPUSIM_CONFIG_DIR");
  }
  bool had_ = false;
  std::string old_;
};

// ---------------------------------------------------------------------------------------------
// Inline mappings.

TEST(TopologyLoader, InlineMapGivesTheSpec) {
  const auto s = load_topology_spec(topology_of(
      "topology:\n"
      "  name: box\n"
      "  sockets: 2\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  distances: [[10, 21], [21, 10]]\n"
      "  latency_ns:\n"
      "    - [65, 106]\n"
      "    - [106, 65]\n"
      "  node_bandwidth_mbps: 19000\n"
      "  remote_bandwidth_ratio: 0.6\n"));
  EXPECT_EQ(s.name, "box");
  EXPECT_EQ(s.sockets, 2u);
  EXPECT_EQ(s.cores_per_socket, 4u);
  EXPECT_EQ(s.threads_per_core, 2u);
  EXPECT_EQ(s.nodes, 2u);
  EXPECT_EQ(s.distances, (std::vector<double>{10, 21, 21, 10}));
  EXPECT_EQ(s.latency_ns, (std::vector<double>{65, 106, 106, 65}));
  EXPECT_EQ(s.node_bandwidth_mbps, 19000.0);
  EXPECT_EQ(s.remote_bandwidth_ratio, 0.6);
}

TEST(TopologyLoader, InlineMapDefaults) {
  const auto t = load_topology(topology_of(
      "topology: {sockets: 1, cores_per_socket: 2, threads_per_core: 1, nodes: 1}\n"));
  EXPECT_EQ(t.name(), "inline");
  EXPECT_EQ(t.num_threads(), 2u);
  EXPECT_EQ(t.distance(0, 0), 10.0);
  EXPECT_EQ(t.node_bandwidth_mbps(), 0.0);
  EXPECT_EQ(t.remote_bandwidth_ratio(), 0.5);
}

TEST(TopologyLoader, UnknownKeyReportsItsLine) {
  const ConfigError e = load_error(
      "name: x\n"
      "topology:\n"
      "  sockets: 2\n"
      "  socket: 2\n"  // line 4
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.column(), 3);
  EXPECT_EQ(e.field(), "topology.socket");
  EXPECT_EQ(e.file(), "scenario.yaml");
}

TEST(TopologyLoader, WrongTypeReportsItsLine) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: two\n"  // line 2
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.column(), 12);
  EXPECT_EQ(e.field(), "topology.sockets");
}

TEST(TopologyLoader, ThreadsPerCoreOutOfRangeReportsItsLine) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 1\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 9\n"  // line 4
      "  nodes: 1\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.field(), "topology.threads_per_core");
  EXPECT_TRUE(contains(e.what(), "out of range")) << e.what();
}

TEST(TopologyLoader, MissingShapeKeyIsAnError) {
  const ConfigError e = load_error(
      "topology:\n"  // line 1: the mapping lacking the key starts on line 2
      "  sockets: 1\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.field(), "topology");
  EXPECT_TRUE(contains(e.what(), "'nodes'")) << e.what();
}

TEST(TopologyLoader, CoresPerLlcIsReadAndAnLlcLeavingItsNodeReportsItsLine) {
  const auto t = load_topology(topology_of(
      "topology: {sockets: 1, cores_per_socket: 8, threads_per_core: 2, nodes: 1, cores_per_llc: 4}\n"));
  EXPECT_EQ(t.llc_mask(0).count(), 8u);
  EXPECT_FALSE(t.same_llc(3, 4));
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 1\n"
      "  cores_per_socket: 8\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  cores_per_llc: 8\n");  // line 6: a node has 4 cores
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.field(), "topology.cores_per_llc");
  EXPECT_TRUE(contains(e.what(), "does not divide the 4 cores a node has within a socket")) << e.what();
  EXPECT_EQ(load_error("topology: {sockets: 1, cores_per_socket: 8, threads_per_core: 2, nodes: 1, cores_per_llc: 0}\n")
                .field(),
            "topology.cores_per_llc");
}

TEST(TopologyLoader, NonSquareDistancesReportTheRow) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 2\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  distances:\n"
      "    - [10, 21]\n"
      "    - [21, 10, 21]\n");  // line 8
  EXPECT_EQ(e.line(), 8);
  EXPECT_EQ(e.field(), "topology.distances[1]");
}

TEST(TopologyLoader, NonNumericLatencyReportsTheElement) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 2\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  latency_ns:\n"
      "    - [65, 106]\n"
      "    - [106, fast]\n");  // line 8, column 13
  EXPECT_EQ(e.line(), 8);
  EXPECT_EQ(e.column(), 13);
  EXPECT_EQ(e.field(), "topology.latency_ns[1][1]");
}

// A remote latency below the local one ran remote memory faster than local: sysbench memory got
// 2.9x its equal-latency figure.
TEST(TopologyLoader, RemoteLatencyBelowLocalReportsTheElement) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 2\n"
      "  cores_per_socket: 2\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  latency_ns: [[80, 1], [1, 80]]\n");  // line 6; [0][1] at column 21
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.column(), 21);
  EXPECT_EQ(e.field(), "topology.latency_ns[0][1]");
  EXPECT_TRUE(contains(e.what(), "remote memory is never faster")) << e.what();
}

// An 8-thread machine of `nodes` nodes (a socket each) whose sixth line is `line6`.
ConfigError machine_error(int nodes, const std::string& line6) {
  const std::string n = std::to_string(nodes), cores = std::to_string(4 / nodes);
  return load_error("topology:\n  sockets: " + n + "\n  cores_per_socket: " + cores +
                    "\n  threads_per_core: 2\n  nodes: " + n + "\n  " + line6 + "\n");
}
ConfigError one_node_error(const std::string& line6) { return machine_error(1, line6); }
ConfigError two_node_error(const std::string& line6) { return machine_error(2, line6); }

TEST(TopologyLoader, ZeroRemoteBandwidthRatioIsRejected) {
  const ConfigError e = one_node_error("remote_bandwidth_ratio: 0");
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.field(), "topology.remote_bandwidth_ratio");
}

TEST(TopologyLoader, NegativeBandwidthIsOutOfRange) {
  const ConfigError e = one_node_error("node_bandwidth_mbps: -5");
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.field(), "topology.node_bandwidth_mbps");
}

// 1e-9 MB/s ran, its memory-bound threads all but stopped.
TEST(TopologyLoader, BandwidthBelowOneMegabyteASecondIsRefused) {
  const ConfigError e = one_node_error("node_bandwidth_mbps: 1e-9");
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.field(), "topology.node_bandwidth_mbps");
  EXPECT_TRUE(contains(e.what(), "at least 1 MB/s")) << e.what();
}

// 1e-300 ran with remote threads at 0.00 MiB/s: the ratio is at least 1% of local.
TEST(TopologyLoader, RemoteBandwidthRatioBelowOnePercentIsRefused) {
  const ConfigError e = one_node_error("remote_bandwidth_ratio: 1e-300");
  EXPECT_EQ(e.field(), "topology.remote_bandwidth_ratio");
  EXPECT_TRUE(contains(e.what(), "at least 0.01")) << e.what();
  EXPECT_NO_THROW((void)load_topology(topology_of("topology:\n  sockets: 1\n  cores_per_socket: 4\n  threads_per_core: 2\n"
                                                 "  nodes: 1\n  remote_bandwidth_ratio: 0.01\n")));
}

// A SLIT entry is a byte: 20.5 ran with a NUMA factor between 20's and 21's. Latencies under a
// nanosecond or over a millisecond (1e-300, 1e308) ran too.
TEST(TopologyLoader, FractionalDistanceAndAbsurdLatencyAreRefused) {
  const ConfigError d = two_node_error("distances: [[10, 20.5], [20, 10]]");  // [0][1] at column 20
  EXPECT_EQ(d.line(), 6);
  EXPECT_EQ(d.column(), 20);
  EXPECT_EQ(d.field(), "topology.distances[0][1]");
  EXPECT_TRUE(contains(d.what(), "whole number")) << d.what();
  for (const char* bad : {"1e-300", "1e308", "0.5"}) {
    const ConfigError l = two_node_error(std::string("latency_ns: [[80, 120], [120, ") + bad + "]]");
    EXPECT_EQ(l.field(), "topology.latency_ns[1][1]") << bad << ": " << l.what();
    EXPECT_TRUE(contains(l.what(), "out of range [1, 1000000]")) << l.what();
  }
}

TEST(TopologyLoader, MatrixOfWrongSizePointsAtTheMatrix) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 2\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  distances: [[10, 20, 20], [20, 10, 20], [20, 20, 10]]\n");  // line 6
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.field(), "topology.distances");
  EXPECT_TRUE(contains(e.what(), "3 rows")) << e.what();
}

// Errors found by build_topology() come back at the field's node.

TEST(TopologyLoader, InconsistentNodesPointAtNodes) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 2\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 3\n");  // line 5, column 10
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.column(), 10);
  EXPECT_EQ(e.field(), "topology.nodes");
}

TEST(TopologyLoader, BadSlitDiagonalPointsAtTheElement) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 2\n"
      "  cores_per_socket: 4\n"
      "  threads_per_core: 2\n"
      "  nodes: 2\n"
      "  distances:\n"
      "    - [10, 21]\n"
      "    - [21, 12]\n");  // line 8, element [1][1] at column 12
  EXPECT_EQ(e.line(), 8);
  EXPECT_EQ(e.column(), 12);
  EXPECT_EQ(e.field(), "topology.distances[1][1]");
  EXPECT_TRUE(contains(e.what(), "10")) << e.what();
}

TEST(TopologyLoader, TooManyThreadsPointsAtCoresPerSocket) {
  const ConfigError e = load_error(
      "topology:\n"
      "  sockets: 4\n"
      "  cores_per_socket: 64\n"  // line 3: 4 x 64 x 4 = 1024 threads
      "  threads_per_core: 4\n"
      "  nodes: 4\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "topology.cores_per_socket");
}

TEST(TopologyLoader, ListIsNotATopology) {
  const ConfigError e = load_error("x: 1\ntopology: [1, 2]\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.field(), "topology");
}

// ---------------------------------------------------------------------------------------------
// Presets and files.

TEST(TopologyLoader, PresetNameLoadsThePresetFile) {
  const auto t = load_topology(topology_of("topology: xeon-x5570-2s\n"));
  EXPECT_EQ(t.name(), "xeon-x5570-2s");
  EXPECT_EQ(t.num_sockets(), 2u);
  EXPECT_EQ(t.num_threads(), 16u);
}

TEST(TopologyLoader, UnknownPresetIsAConfigErrorListingTheKnownOnes) {
  const ConfigError e = load_error("seed: 1\ntopology: xeon-x9999-8s\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.column(), 11);
  EXPECT_EQ(e.field(), "topology");
  EXPECT_TRUE(contains(e.what(), "unknown topology preset 'xeon-x9999-8s'")) << e.what();
  EXPECT_TRUE(contains(e.what(), "xeon-x5570-2s")) << e.what();
  EXPECT_TRUE(contains(e.what(), "epyc-2s-64c")) << e.what();
}

TEST(TopologyLoader, ConfigDirectoryRelativePathWorks) {
  // The form DESIGN.md's scenario sketch uses.
  const auto t = load_topology(topology_of("topology: topologies/desktop-4c8t.yaml\n"));
  EXPECT_EQ(t.name(), "desktop-4c8t");
  EXPECT_EQ(t.num_threads(), 8u);
}

TEST(TopologyLoader, MissingFileIsAConfigError) {
  const ConfigError e = load_error("topology: no/such/file.yaml\n");
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.field(), "topology");
  EXPECT_TRUE(contains(e.what(), "not found")) << e.what();
}

// /dev/null and a directory were reported as "not found", though they exist.
TEST(TopologyLoader, APathThatIsNotARegularFileSaysSo) {
  for (const char* path : {"/dev/null", "/tmp"}) {
    const ConfigError e = load_error(std::string("topology: ") + path + "\n");
    EXPECT_EQ(e.field(), "topology");
    EXPECT_TRUE(contains(e.what(), "is not a regular file")) << e.what();
  }
}

// A relative path to a directory, beside the scenario or in the config directory
// (`topologies` is one), was "not found".
TEST(TopologyLoader, ARelativePathThatIsADirectorySaysSo) {
  TempDir dir;
  dir.write("machines/box.yaml/x", "");
  const std::string scenario = (dir.path / "scenario.yaml").string();
  for (const char* path : {"machines/box.yaml", "topologies/"}) {
    try {
      load_topology(topology_of(std::string("topology: ") + path + "\n", scenario));
      ADD_FAILURE() << path << " loaded";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(contains(e.what(), "is not a regular file")) << e.what();
    }
  }
}

TEST(TopologyLoader, PathIsRelativeToTheScenarioFile) {
  TempDir dir;
  dir.write("machines/box.yaml",
            "sockets: 1\ncores_per_socket: 2\nthreads_per_core: 2\nnodes: 1\n");
  const std::string scenario = (dir.path / "scenario.yaml").string();
  const auto t = load_topology(topology_of("topology: machines/box.yaml\n", scenario));
  EXPECT_EQ(t.name(), "box");  // the file's stem when it has no name
  EXPECT_EQ(t.num_threads(), 4u);
  // Absolute paths work too.
  const auto u = load_topology(topology_of("topology: " + (dir.path / "machines/box.yaml").string() + "\n"));
  EXPECT_EQ(u.num_cores(), 2u);
}

TEST(TopologyLoader, ErrorsInATopologyFileNameThatFile) {
  TempDir dir;
  dir.write("bad.yaml",
            "name: bad\n"
            "sockets: 2\n"
            "cores_per_socket: 3\n"
            "threads_per_core: 1\n"
            "nodes: 4\n"  // line 5: 6 cores do not divide into 4 nodes
            "node_bandwidth_mbps: 1000\n");
  const std::string scenario = (dir.path / "scenario.yaml").string();
  const ConfigError e = config_error([&] { (void)load_topology(topology_of("topology: bad.yaml\n", scenario)); });
  EXPECT_EQ(e.file(), (dir.path / "bad.yaml").string());
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.field(), "nodes");
}

// ---------------------------------------------------------------------------------------------
// Config search path.

TEST(ConfigPaths, EnvironmentDirectoryComesFirst) {
  TempDir dir;
  dir.write("topologies/tiny.yaml", "sockets: 1\ncores_per_socket: 1\nthreads_per_core: 1\nnodes: 1\n");
  dir.write("topologies/README", "not a preset\n");
  ScopedConfigDir env(dir.path.string());
  EXPECT_EQ(config_search_dirs().front(), dir.path.string());
  EXPECT_EQ(find_config("topologies/tiny.yaml"), (dir.path / "topologies/tiny.yaml").string());
  const auto names = list_topology_presets();
  EXPECT_NE(std::find(names.begin(), names.end(), "tiny"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "README"), names.end());
  const auto t = load_topology(topology_of("topology: tiny\n"));
  EXPECT_EQ(t.num_threads(), 1u);
}

TEST(ConfigPaths, MissingFileGivesEmptyString) {
  EXPECT_EQ(find_config("topologies/no-such-machine.yaml"), "");
  EXPECT_EQ(find_config(""), "");
}

// ---------------------------------------------------------------------------------------------
// The shipped presets. Expected shapes and SLITs are the real machines' (see each file's
// comments); everything else is derived from them.

struct Machine {
  const char* name;
  std::uint32_t sockets, cores_per_socket, threads_per_core, nodes;
  double same_socket_distance;  // between two nodes of one socket (NPS4 only)
  double remote_distance;       // between nodes of different sockets
  std::uint32_t cores_per_llc;  // Intel: a socket's cores; Zen 2: a CCX of 4
};

const std::vector<Machine>& machines() {
  static const std::vector<Machine> m = {
      {"desktop-4c8t", 1, 4, 2, 1, 0, 0, 4},
      {"epyc-2s-64c", 2, 32, 2, 8, 12, 32, 4},
      {"one-core-ht", 1, 1, 2, 1, 0, 0, 1},
      {"xeon-gold-2s", 2, 20, 2, 2, 0, 21, 20},
      {"xeon-x5570-2s", 2, 4, 2, 2, 0, 21, 4},
      {"xeon-x7560-4s", 4, 8, 2, 4, 0, 20, 8},
  };
  return m;
}

TEST(TopologyPresets, ExactlyTheSixMachinesShip) {
  std::vector<std::string> want;
  for (const Machine& m : machines()) want.emplace_back(m.name);
  EXPECT_EQ(list_topology_presets(), want);  // sorted, as machines() is
}

TEST(TopologyPresets, EveryPresetMatchesItsMachine) {
  for (const Machine& m : machines()) {
    SCOPED_TRACE(m.name);
    const topo::Topology t = load_topology(topology_of(std::string("topology: ") + m.name + "\n"));
    const std::uint32_t cores = m.sockets * m.cores_per_socket;
    const std::uint32_t threads = cores * m.threads_per_core;
    EXPECT_EQ(t.name(), m.name);
    EXPECT_EQ(t.num_sockets(), m.sockets);
    EXPECT_EQ(t.num_cores(), cores);
    EXPECT_EQ(t.num_threads(), threads);
    EXPECT_EQ(t.num_nodes(), m.nodes);
    EXPECT_EQ(t.threads_per_core(), m.threads_per_core);

    // Thread t and thread t + cores are SMT siblings (Linux x86 enumeration).
    for (topo::ThreadId th = 0; th < threads; ++th) {
      topo::CpuSet want;
      for (std::uint32_t k = 0; k < m.threads_per_core; ++k) want.set(k * cores + th % cores);
      ASSERT_EQ(t.smt_mask(th), want) << th;
      ASSERT_EQ(t.siblings(th).count(), m.threads_per_core - 1) << th;
    }

    // Nodes partition the threads into equal blocks of whole cores.
    topo::CpuSet all;
    for (topo::NodeId n = 0; n < m.nodes; ++n) {
      const topo::CpuSet& ns = t.threads_of_node(n);
      EXPECT_FALSE(ns.intersects(all)) << n;
      EXPECT_EQ(ns.count(), threads / m.nodes) << n;
      ns.for_each([&](topo::ThreadId th) {
        EXPECT_EQ(t.node_of(th), n);
        EXPECT_TRUE(t.smt_mask(th).subset_of(ns));
      });
      all |= ns;
    }
    EXPECT_EQ(all, t.all_threads());
    EXPECT_EQ(all, topo::CpuSet::first_n(threads));

    // An LLC is a block of cores_per_llc consecutive cores with all their threads, inside one
    // node and one socket.
    for (topo::ThreadId th = 0; th < threads; ++th) {
      const std::uint32_t first_core = (th % cores) / m.cores_per_llc * m.cores_per_llc;
      topo::CpuSet want;
      for (std::uint32_t c = first_core; c < first_core + m.cores_per_llc; ++c) want |= t.threads_of_core(c);
      ASSERT_EQ(t.llc_mask(th), want) << th;
      ASSERT_TRUE(t.llc_mask(th).subset_of(t.threads_of_node(t.node_of(th)))) << th;
      ASSERT_TRUE(t.llc_mask(th).subset_of(t.threads_of_socket(t.socket_of(th)))) << th;
    }

    // SLIT: 10 locally, the machine's published value elsewhere, symmetric.
    for (topo::NodeId a = 0; a < m.nodes; ++a)
      for (topo::NodeId b = 0; b < m.nodes; ++b) {
        const bool same_socket = t.same_socket(t.threads_of_node(a).first(), t.threads_of_node(b).first());
        const double want = a == b ? 10.0 : same_socket ? m.same_socket_distance : m.remote_distance;
        EXPECT_EQ(t.distance(a, b), want) << a << "," << b;
        EXPECT_EQ(t.distance(a, b), t.distance(b, a));
      }

    // Memory: some bandwidth figure and a ratio in (0, 1] (one-core-ht models no bandwidth).
    EXPECT_GE(t.node_bandwidth_mbps(), 0.0);
    if (std::string(m.name) != "one-core-ht") {
      EXPECT_GT(t.node_bandwidth_mbps(), 0.0);
    }
    EXPECT_GT(t.remote_bandwidth_ratio(), 0.0);
    EXPECT_LE(t.remote_bandwidth_ratio(), 1.0);
  }
}

// Multi-node presets carry measured (or estimated) latencies: remote is slower than local, but
// by less than SLIT/10 says (spinlocks-and-workloads.md section 5: SLIT/10 overstates it).
TEST(TopologyPresets, LatencyRatiosExceedOneButStayBelowSlitOverTen) {
  for (const Machine& m : machines()) {
    if (m.nodes < 2) continue;
    SCOPED_TRACE(m.name);
    const topo::Topology t = load_topology(topology_of(std::string("topology: ") + m.name + "\n"));
    for (topo::NodeId a = 0; a < m.nodes; ++a)
      for (topo::NodeId b = 0; b < m.nodes; ++b) {
        if (a == b) {
          EXPECT_DOUBLE_EQ(t.latency_ratio(a, b), 1.0);
          continue;
        }
        EXPECT_GT(t.latency_ratio(a, b), 1.0) << a << "," << b;
        EXPECT_LT(t.latency_ratio(a, b), t.distance(a, b) / 10.0) << a << "," << b;
        // Farther by SLIT means slower by latency too.
        for (topo::NodeId c = 0; c < m.nodes; ++c)
          if (c != a && t.distance(a, c) > t.distance(a, b)) {
            EXPECT_GT(t.latency_ratio(a, c), t.latency_ratio(a, b));
          }
      }
  }
}

}  // namespace
}  // namespace vcpusim::app
