// SPDX-License-Identifier: MIT
#include "app/perfetto_trace.h"

#include "app/config_error.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

namespace vcpusim::app {
namespace {

// chrome://tracing's reserved colour names (Perfetto colours by slice name instead).
constexpr const char* kPalette[] = {"thread_state_running", "rail_response", "rail_animation", "rail_idle",
                                    "rail_load", "cq_build_passed", "good", "yellow", "olive", "startup",
                                    "thread_state_iowait", "generic_work"};
constexpr int kVcpuPidBase = 100000;

std::string us(sim::Time t) { return fmt::format("{}.{:03}", t / 1000, t % 1000); }

std::string quote(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

int PerfettoTrace::pcpu_pid(hv::PcpuId p) const { return 1 + static_cast<int>(host_->topology().node_of(p)); }
int PerfettoTrace::vcpu_pid(hv::VcpuId v) const { return kVcpuPidBase + static_cast<int>(host_->vcpu(v).domain); }

std::string PerfettoTrace::vcpu_label(hv::VcpuId v) const {
  const hv::Vcpu& x = host_->vcpu(v);
  return host_->domain(x.domain).name + (host_->domain(x.domain).bare_metal ? " task " : " vCPU ") + std::to_string(x.index);
}

void PerfettoTrace::attach(hv::Host& host, const std::vector<guest::GuestOs*>& guests) {
  host_ = &host;
  host.set_trace(this);
  for (auto* g : guests) g->set_trace(this);
  const topo::Topology& t = host.topology();
  pcpu_open_.assign(t.num_threads(), sim::kNever);
  pcpu_who_.assign(t.num_threads(), hv::kIdle);
  vcpu_open_.assign(host.num_vcpus(), sim::kNever);
  vcpu_thread_.assign(host.num_vcpus(), 0);
  domain_name_.clear();
  for (hv::DomainId d = 0; d < host.num_domains(); ++d) domain_name_.push_back(quote(host.domain(d).name));
  vcpu_domain_.clear();
  vcpu_index_.clear();
  vcpu_label_.clear();
  for (hv::VcpuId v = 0; v < host.num_vcpus(); ++v) {
    vcpu_domain_.push_back(static_cast<std::uint32_t>(host.vcpu(v).domain));
    vcpu_index_.push_back(static_cast<std::uint32_t>(host.vcpu(v).index));
    vcpu_label_.push_back(quote(vcpu_label(v)));
  }
  for (topo::NodeId n = 0; n < t.num_nodes(); ++n) {
    meta_.push_back(fmt::format(R"j({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"node {} (pCPUs)"}}}})j", 1 + n, n));
    meta_.push_back(fmt::format(R"j({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})j", 1 + n, n));
  }
  for (hv::PcpuId p = 0; p < t.num_threads(); ++p) {
    const auto smt = static_cast<int>(t.smt_mask(p).count() > 1 ? (t.smt_mask(p).first() == p ? 0 : 1) : 0);
    const std::string name = fmt::format("pCPU {} (socket {}, core {}, thread {}){}", p, t.socket_of(p), t.core_of(p), smt,
                                         host.pcpu(p).usable ? "" : " [off]");
    meta_.push_back(fmt::format(R"j({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})j", pcpu_pid(p), p, quote(name)));
    meta_.push_back(fmt::format(R"j({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})j",
                                pcpu_pid(p), p, t.socket_of(p) * 100000 + t.core_of(p) * 8 + static_cast<unsigned>(smt)));
  }
  for (hv::DomainId d = 0; d < host.num_domains(); ++d) {
    const hv::Domain& dom = host.domain(d);
    meta_.push_back(fmt::format(R"j({{"name":"process_name","ph":"M","pid":{},"args":{{"name":{}}}}})j", kVcpuPidBase + static_cast<int>(d),
                                quote((dom.bare_metal ? "tasks " : "VM ") + dom.name)));
    meta_.push_back(fmt::format(R"j({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})j", kVcpuPidBase + static_cast<int>(d), 1000 + d));
    for (hv::VcpuId v : dom.vcpus)
      meta_.push_back(fmt::format(R"j({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})j", vcpu_pid(v), v, quote(vcpu_label(v))));
  }
}

void PerfettoTrace::push(Ev&& ev) {
  if (ev.dur >= 0) {
    const sim::Time b = std::max(ev.ts, from_), e = std::min(ev.ts + ev.dur, to_);
    if (e <= b) return;
    ev.ts = b;
    ev.dur = e - b;
  }
  if (events_.size() >= kMaxEvents)
    throw ConfigError("<command line>", 0, 0, "--window",
                      "the window holds more than " + std::to_string(kMaxEvents) +
                          " trace events, more than a trace viewer opens; narrow it");
  events_.push_back(ev);
}

std::uint16_t PerfettoTrace::intern(std::string_view s) {
  const std::string q = quote(std::string(s));
  const auto it = std::find(what_.begin(), what_.end(), q);
  if (it != what_.end()) return static_cast<std::uint16_t>(it - what_.begin());
  // A handful of mark names exist (wake, halt, preempt, ...) and of idle-state names.
  if (what_.size() >= 0xFFFE) throw std::logic_error("trace: too many distinct event names");
  what_.push_back(q);
  return static_cast<std::uint16_t>(what_.size() - 1);
}

void PerfettoTrace::run_begin(hv::PcpuId p, hv::VcpuId v, sim::Time t) {
  pcpu_open_[p] = t;
  pcpu_who_[p] = v;
}

void PerfettoTrace::run_end(hv::PcpuId p, hv::VcpuId v, sim::Time t) {
  if (pcpu_open_[p] == sim::kNever) return;
  push(Ev{pcpu_open_[p], t - pcpu_open_[p], pcpu_pid(p), static_cast<std::int32_t>(p), static_cast<std::uint32_t>(v), 0, 0,
          Kind::kRun});
  pcpu_open_[p] = sim::kNever;
  pcpu_who_[p] = hv::kIdle;
}

void PerfettoTrace::instant(std::string_view what, hv::VcpuId v, hv::PcpuId p, sim::Time t) {
  if (t < from_ || t > to_ || p == hv::kNoPcpu) return;
  push(Ev{t, -1, pcpu_pid(p), static_cast<std::int32_t>(p), static_cast<std::uint32_t>(v), intern(what), 0, Kind::kInstant});
}

void PerfettoTrace::instant(std::string_view what, hv::VcpuId v, hv::PcpuId p, sim::Time t, std::string_view detail) {
  if (t < from_ || t > to_ || p == hv::kNoPcpu) return;
  const std::uint16_t w = intern(what);
  push(Ev{t, -1, pcpu_pid(p), static_cast<std::int32_t>(p), static_cast<std::uint32_t>(v), w,
          static_cast<std::uint16_t>(intern(detail) + 1), Kind::kInstant});
}

void PerfettoTrace::thread_on(hv::VcpuId v, std::uint32_t thread, sim::Time t) {
  vcpu_open_[v] = t;
  vcpu_thread_[v] = thread;
}

void PerfettoTrace::thread_off(hv::VcpuId v, std::uint32_t thread, sim::Time t) {
  if (vcpu_open_[v] == sim::kNever) return;
  push(Ev{vcpu_open_[v], t - vcpu_open_[v], vcpu_pid(v), static_cast<std::int32_t>(v), thread, 0, 0, Kind::kThread});
  vcpu_open_[v] = sim::kNever;
}

void PerfettoTrace::finish(hv::Host& host) {
  // Close what is still open at the end of the run.
  for (hv::PcpuId p = 0; p < pcpu_open_.size(); ++p)
    if (pcpu_open_[p] != sim::kNever) run_end(p, pcpu_who_[p], host.now());
  for (hv::VcpuId v = 0; v < vcpu_open_.size(); ++v)
    if (vcpu_open_[v] != sim::kNever) thread_off(v, vcpu_thread_[v], host.now());
  host.set_trace(nullptr);
  std::stable_sort(events_.begin(), events_.end(), [](const Ev& a, const Ev& b) {
    return std::tie(a.pid, a.tid, a.ts) < std::tie(b.pid, b.tid, b.ts);
  });
}

void PerfettoTrace::write(std::ostream& os) const {
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"vcpusim trace\",\"window_us\":["
     << us(from_) << "," << us(to_) << "]},\"traceEvents\":[\n";
  bool first = true;
  for (const std::string& m : meta_) {
    os << (first ? "" : ",\n") << m;
    first = false;
  }
  for (const Ev& e : events_) {
    os << (first ? "" : ",\n");
    first = false;
    switch (e.kind) {
      case Kind::kRun: {
        const std::uint32_t d = vcpu_domain_[e.who];
        fmt::print(os, R"j({{"name":{},"cat":"vcpu-run","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"cname":"{}","args":{{"vm":{},"vcpu":{},"entity":{}}}}})j",
                   domain_name_[d], e.pid, e.tid, us(e.ts), us(e.dur), kPalette[d % std::size(kPalette)], domain_name_[d],
                   vcpu_index_[e.who], e.who);
        break;
      }
      case Kind::kThread:
        fmt::print(os, R"j({{"name":"thread {}","cat":"guest-thread","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"cname":"{}","args":{{"thread":{}}}}})j",
                   e.who, e.pid, e.tid, us(e.ts), us(e.dur), kPalette[e.who % std::size(kPalette)], e.who);
        break;
      case Kind::kInstant:
        fmt::print(os, R"j({{"name":{},"cat":"sched","ph":"i","s":"t","pid":{},"tid":{},"ts":{},"args":{{"entity":{},"who":{}{}}}}})j",
                   what_[e.what], e.pid, e.tid, us(e.ts), e.who, vcpu_label_[e.who],
                   e.detail ? ",\"state\":" + what_[e.detail - 1] : std::string());
        break;
    }
  }
  os << "\n]}\n";
}

}  // namespace vcpusim::app
