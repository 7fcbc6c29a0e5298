#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Randomized stress test of VALID scenario combinations (not part of CI).

Draws random scenarios that the README documents as valid -- every policy (rr, credit2, cfs),
every topology preset in configs/topologies/, SMT on and off, core scheduling none / cookie
(every variant preset, cookie granularity, some explicit switches) / core (Xen units, credit2
and rr), credit2 runqueue options, weights and caps, hard and soft affinity in every form,
memory placements, every workload kind with its documented parameters and lock kinds
(ticket, pvticket with the kvm and xen flavours, mutex, adaptive), host.ple (scan 3.10 and
5.10), halt polling, the kick boost, PV TLB flush, cpuidle states, cfs cgroups, guest start
jitter, bare-metal tasks beside VMs, overcommit 0.25x to 4x, 100-500 ms of simulated time --
writes each to OUT/NNNN.yaml, runs `vcpusim run` on it with a timeout and records the exit
status, and prints a summary. Every run whose status is not 0 is listed in OUT/failures.txt
with its stderr tail, for triage: 0 is ok, 2 is a refusal (check the README says the
combination is invalid), 3 an invariant violation, anything else (1, a signal, a timeout) a
defect.

Run (from the repository root, after `ninja -C build`):

    python3 scripts/stress_scenarios.py --count 300 --seed 1 --out /tmp/stress --jobs 2

`--only N` re-runs scenario N of the same --seed (to reproduce one finding). The generator
only writes and runs files; it needs nothing beyond the Python standard library.
"""

import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import time

TOPOLOGIES = {
    # name: (sockets, cores_per_socket, threads_per_core, nodes)
    "one-core-ht": (1, 1, 2, 1),
    "desktop-4c8t": (1, 4, 2, 1),
    "xeon-x5570-2s": (2, 4, 2, 2),
    "xeon-x7560-4s": (4, 8, 2, 4),
    "xeon-gold-2s": (2, 20, 2, 2),
    "epyc-2s-64c": (2, 32, 2, 8),
}
# Big machines take long at 4x; draw them less often.
TOPO_WEIGHTS = {"one-core-ht": 3, "desktop-4c8t": 5, "xeon-x5570-2s": 4, "xeon-x7560-4s": 2,
                "xeon-gold-2s": 1, "epyc-2s-64c": 1}
VARIANTS = ["csc", "csc-stallfix", "csc-vruntime", "aaron-first-2", "aaron-3rd", "aaron-full",
            "tim", "tim-sched", "csc-tim", "v4", "v5", "mainline"]
KINDS = ["program", "sysbench-cpu", "sysbench-memory", "ebizzy", "dbench", "mutilate",
         "specint-rate", "cassandra", "hammerdb", "specvirt-mix"]


def dur(r, lo_us, hi_us):
    v = r.randint(lo_us, hi_us)
    if v % 1000 == 0:
        return f"{v // 1000}ms"
    return f"{v}us"


class Gen:
    def __init__(self, r, duration_scale=1):
        self.r = r
        self.duration_scale = duration_scale

    def pick(self, *xs):
        return self.r.choice(xs)

    def chance(self, p):
        if getattr(self, "tight", False):
            p = min(1.0, p * 1.8)
        return self.r.random() < p

    # ---- host -------------------------------------------------------------------------------
    def scenario(self, idx):
        r = self.r
        self.tight = self.chance(0.3)
        topo = r.choices(list(TOPO_WEIGHTS), weights=list(TOPO_WEIGHTS.values()))[0]
        if self.tight:
            topo = self.pick("one-core-ht", "desktop-4c8t", "xeon-x5570-2s")
        sockets, cps, tpc, nodes = TOPOLOGIES[topo]
        cores = sockets * cps
        policy = self.pick("rr", "credit2", "cfs")
        cs = self.pick("none", "none", "cookie", "cookie", "core")
        if cs == "core" and policy == "cfs":
            cs = "cookie"
        smt = "off" if (cs == "none" and self.chance(0.3)) else "on"
        self.topo, self.cores, self.tpc, self.nodes, self.sockets = topo, cores, tpc, nodes, sockets
        self.policy, self.cs, self.smt = policy, cs, smt
        usable = cores if smt == "off" else cores * tpc
        self.usable = usable
        host = {"smt": smt, "core_scheduling": cs}
        host["scheduler"] = self.scheduler()
        if cs == "cookie":
            host["core_sched"] = self.core_sched()
        if cs == "core" and self.chance(0.5):
            host["sched_gran"] = {"rendezvous": dur(r, 0, 20)}
        if self.chance(0.3):
            host["context_switch"] = dur(r, 0, 5)
        if policy in ("cfs", "credit2") and cs != "core" and self.chance(0.3):
            host["resched_ipi"] = dur(r, 0, 3)
        if self.chance(0.2):
            host["migration"] = {"cold": dur(r, 0, 300), "cold_rate": round(r.uniform(0.1, 1.0), 2),
                                 "cross_node_factor": r.randint(1, 4)}
        if self.chance(0.4):
            host["ple"] = self.ple()
        if policy == "cfs":
            if self.chance(0.4):
                hp = {"enabled": self.chance(0.85)}
                if self.chance(0.5):
                    hp["ns"] = dur(r, 0, 500)
                    hp["grow"] = r.randint(0, 4)
                    hp["grow_start"] = dur(r, 1, 50)
                    hp["shrink"] = r.randint(0, 3)
                host["halt_poll"] = hp
            if self.chance(0.35):
                host["kick_boost"] = True
        if self.chance(0.3):
            host["cpuidle"] = self.cpuidle()
        guest = {}
        if self.chance(0.3):
            guest["slice"] = self.pick("10us", dur(r, 500, 6000))
        if self.chance(0.4):
            guest["start_jitter"] = dur(r, 0, 5000)
        if self.chance(0.2):
            guest["wake_ipi"] = dur(r, 0, 5)
        if self.chance(0.3):
            guest["hz"] = self.pick(0, 100, 250, 1000)
        if self.chance(0.2):
            guest["context_switch"] = dur(r, 0, 4)
        if policy == "cfs" and self.chance(0.35):
            guest["pv_tlb_flush"] = True

        sc = {"name": f"stress-{idx}", "seed": r.randint(1, 5),
              "duration": f"{r.randint(100, 500) * self.duration_scale}ms"}
        if self.chance(0.4):
            sc["warmup"] = f"{r.randint(0, 50)}ms"
        if self.chance(0.1):
            sc["repetitions"] = 2
        sc["topology"] = topo
        sc["host"] = host
        if guest:
            sc["guest"] = guest
        # Overcommit: total vCPUs and bare-metal threads over the usable threads.
        oc = self.pick(0.25, 0.5, 1, 1, 1.5, 2, 3, 4)
        if cores >= 32 and oc > 2 and self.chance(0.6):
            oc = 2
        total = max(1, int(round(oc * usable)))
        self.vm_instance = 0
        vms, bms = [], []
        left = total
        gi = 0
        while left > 0 and gi < 5:
            if gi > 0 and self.chance(0.25):
                n = min(left, r.randint(1, max(1, min(8, left))))
                bms.append(self.baremetal(gi, n))
                left -= n
            else:
                vmax = min(left, max(1, min(64, usable)))
                vcpus = r.randint(1, vmax)
                count = max(1, min(left // vcpus, r.randint(1, 4)))
                vms.append(self.vm(gi, vcpus, count))
                left -= vcpus * count
            gi += 1
        if vms and not bms and all(v["count"] == 0 for v in vms):
            vms[0]["count"] = 1  # a file whose every count is 0 is refused (documented)
        if vms:
            sc["vms"] = vms
        if bms:
            sc["baremetal"] = bms
        if not vms and not bms:
            sc["vms"] = [self.vm(0, 1, 1)]
        return sc

    def scheduler(self):
        r, p = self.r, self.policy
        s = {"policy": p}
        if p == "rr":
            if self.chance(0.5):
                s["slice"] = self.pick("100us", dur(self.r, 1000, 30000))
        elif p == "credit2":
            if self.chance(0.7):
                s["runqueue"] = self.pick("cpu", "core", "socket", "node", "all")
            if self.chance(0.4):
                s["ratelimit"] = self.pick("0", "100us", "1ms", "5ms", "500ms")
            if self.chance(0.3):
                s["migrate_resist"] = dur(r, 0, 2000)
            if self.chance(0.3):
                s["cap_period"] = f"{r.randint(1, 20)}ms"
            if self.chance(0.3):
                s["max_cpus_runqueue"] = r.randint(1, 32)
            if self.chance(0.2):
                s["balance_under"] = r.randint(-2, 2)
                s["balance_over"] = r.randint(-4, 0)
        else:
            if self.chance(0.5):
                s["cgroups"] = self.pick("none", "per-domain")
            if self.chance(0.3):
                s["hz"] = self.pick(100, 250, 300, 1000)
            if self.chance(0.2):
                s["tunable_scaling"] = self.pick("none", "log", "linear")
                s["latency"] = self.pick("6ms", "12ms", "24ms")
                s["min_granularity"] = self.pick("750us", "3ms")
                s["wakeup_granularity"] = self.pick("1ms", "4ms")
            if self.chance(0.2):
                s["weights"] = self.pick("linear", "nice")
            if self.chance(0.15):
                s["gentle_fair_sleepers"] = self.pick("on", "off")
            if self.chance(0.15):
                s["wakeup_preemption"] = self.pick("on", "off")
            if self.chance(0.15):
                s["migration_cost"] = dur(r, 0, 1000)
                s["nr_migrate"] = r.randint(1, 64)
        return s

    def core_sched(self):
        c = {"variant": self.pick(*VARIANTS)}
        if self.chance(0.5):
            c["cookies"] = self.pick("per-vm", "per-task", "none")
        if self.chance(0.3):
            c["compare"] = self.pick("naive", "core_wide", "fi_snapshot", "fi_time", "fi_budget")
            if c["compare"] == "fi_budget" and self.chance(0.5):
                c["fi_allowance"] = dur(self.r, 100, 10000)
        if self.chance(0.2):
            c["tie"] = self.pick("prefer_max", "prefer_tagged")
        if self.chance(0.3):
            c["tick"] = self.pick("none", "full_slice", "half_slice")
            if c["tick"] != "none" and self.policy != "cfs" and self.chance(0.5):
                c["fi_slice"] = dur(self.r, 1000, 30000)
        if self.chance(0.2):
            c["wake"] = self.pick("cookie_blind", "cookie_aware")
        if self.chance(0.2):
            c["balance"] = self.pick("blind", "refuse", "hot")
        return c

    def ple(self):
        r = self.r
        p = {"enabled": self.chance(0.85)}
        flavour = "xen" if self.policy == "credit2" else "kvm"
        if self.chance(0.3):
            flavour = p["flavour"] = self.pick("xen", "kvm")
        if flavour == "kvm" and self.chance(0.7):
            p["scan"] = self.pick("3.10", "5.10")
        if self.chance(0.4):
            p["window"] = self.pick(512, 4096, 16384)
            p["gap"] = self.pick(0, 128)
        if self.chance(0.4):
            p["grow"] = r.randint(0, 4)
            p["shrink"] = r.randint(0, 4)
        if self.chance(0.3):
            p["tsc_ghz"] = self.pick(2.26, 2.4, 2.5, 3.4)
        if self.chance(0.3):
            p["exit_cost"] = self.pick("100ns", "1us", "5us", "1ms")
        return p

    def cpuidle(self):
        if self.chance(0.7):
            return {"states": self.pick("nehalem", "skx", "skl")}
        n = self.r.randint(1, 4)
        states, lat, res = [], 0, 0
        for i in range(n):
            lat += self.r.randint(1, 100)
            res = max(res + 1, lat * self.r.randint(1, 4))
            states.append({"name": f"C{i + 1}", "exit_latency": f"{lat}us",
                           "target_residency": f"{res}us"})
        return {"states": states}

    # ---- affinity ---------------------------------------------------------------------------
    def cpuset(self):
        """A cpus: list valid at this SMT/core setting (some first threads always)."""
        r = self.r
        ncores = r.randint(1, self.cores)
        cs = sorted(r.sample(range(self.cores), ncores))
        cpus = list(cs)
        if self.smt == "on" and self.chance(0.6):
            cpus += [c + self.cores * i for c in cs for i in range(1, self.tpc)]
        cpus = sorted(cpus)
        if self.chance(0.5):
            return cpus  # a YAML list
        return "cpus:[" + ",".join(map(str, cpus)) + "]"

    def hard(self, bare=False):
        forms = ["all", "node", "socket", "core", "cpus", "node-round-robin"]
        if bare:
            forms.remove("node-round-robin")
        f = self.pick(*forms)
        if f == "all":
            return "all"
        if f == "node":
            return f"node:{self.r.randrange(self.nodes)}"
        if f == "socket":
            return f"socket:{self.r.randrange(self.sockets)}"
        if f == "core":
            return f"core:{self.r.randrange(self.cores)}"
        if f == "cpus":
            return self.cpuset()
        return "node-round-robin"

    def affinity(self, vcpus):
        a = {}
        if self.chance(0.6):
            a["hard"] = self.hard()
        xen = self.policy in ("rr", "credit2")
        if xen and self.chance(0.4):
            a["soft"] = self.hard()
        if self.chance(0.3) and vcpus <= 8:
            a["per_vcpu"] = []
            for i in range(vcpus):
                if self.cs == "core" and i % self.tpc:
                    a["per_vcpu"].append(dict(a["per_vcpu"][-1]))
                    continue
                e = {"hard": self.hard()}
                if xen and self.chance(0.3):
                    e["soft"] = self.hard()
                a["per_vcpu"].append(e)
        return a

    # ---- groups -----------------------------------------------------------------------------
    def vm(self, gi, vcpus, count):
        r = self.r
        v = {"name": f"vm{gi}", "count": 0 if self.chance(0.03) else count, "vcpus": vcpus}
        if self.policy != "rr" and self.chance(0.4):
            v["weight"] = self.pick(1, 64, 128, 256, 512, 1024, 65535)
        if self.policy == "credit2" and self.chance(0.3):
            units = (vcpus + self.tpc - 1) // self.tpc if self.cs == "core" else vcpus
            v["cap"] = r.randint(1, 100 * units)
        if self.chance(0.5):
            a = self.affinity(vcpus)
            if a:
                v["affinity"] = a
        if self.chance(0.4):
            m = {"placement": self.pick("auto", "follow-affinity", "interleave",
                                        f"node:{r.randrange(self.nodes)}")}
            if self.chance(0.5):
                m["size"] = self.pick("512MiB", "1GiB", "8GiB")
            v["memory"] = m
        if self.cs == "cookie" and self.chance(0.2):
            v["cookie"] = r.randint(0, 3)
        v["workload"] = self.workload(vcpus, bare=False)
        return v

    def baremetal(self, gi, nthreads):
        b = {"name": f"bm{gi}", "count": 1}
        if self.chance(0.5):
            b["affinity"] = {"hard": self.hard(bare=True)}
        if self.cs == "cookie" and self.chance(0.3):
            b["cookie"] = self.r.randint(0, 3)
        w = self.workload(nthreads, bare=True)
        b["workload"] = w
        return b

    # ---- workloads --------------------------------------------------------------------------
    def lock(self, w, bare, default="ticket"):
        kinds = ["ticket", "mutex", "adaptive"] + ([] if bare else ["pvticket", "pvticket"])
        if self.chance(0.8):
            w["lock"] = self.pick(*kinds)
        lk = w.get("lock", default)
        if self.chance(0.3):
            w["spin_loop"] = self.r.randint(1, 60)
        if self.chance(0.2):
            w["handoff"] = self.r.randint(10, 60)
        if lk == "pvticket":
            if self.chance(0.6):
                w["pv_flavour"] = self.pick("kvm", "xen")
            if self.chance(0.3):
                w["spin_threshold"] = self.pick(1, 16, 256, 4096, 32768)
            if self.chance(0.3):
                w["kick_latency"] = dur(self.r, 0, 30)
        if lk == "adaptive" and self.chance(0.4):
            w["spin_wait"] = self.r.randint(10, 10000)

    def workload(self, vcpus, bare):
        r = self.r
        kind = self.pick(*KINDS)
        th = max(1, int(round(vcpus * r.choice([0.5, 1, 1, 1.5, 2]))))
        w = {"kind": kind}
        if kind == "program":
            w["threads"] = th
            ph = []
            for _ in range(r.randint(1, 4)):
                if self.chance(0.6) or not ph:
                    p = {"compute": dur(r, 1, 3000)}
                    if self.chance(0.5):
                        p["profile"] = self.pick("cpu", "memory", "mixed")
                    if self.chance(0.3):
                        p["mem_intensity"] = round(r.random(), 2)
                else:
                    p = {"block": self.pick("0", dur(r, 1, 5000), dur(r, 1, 50))}
                if self.chance(0.5):
                    p["dist"] = self.pick("const", "exp", "uniform")
                ph.append(p)
            w["phases"] = ph
        elif kind == "sysbench-cpu":
            w["threads"] = th
            if self.chance(0.3):
                w["event_cv"] = round(r.uniform(0, 0.5), 2)
            if self.chance(0.2):
                w["events_per_step"] = r.randint(0, 20)
        elif kind == "sysbench-memory":
            w["threads"] = th
            if self.chance(0.3):
                w["block_size"] = self.pick("1KiB", "16KiB", "1MiB")
            if self.chance(0.2):
                w["mem_intensity"] = round(r.random(), 2)
            if self.chance(0.4):
                w["version"] = self.pick("1.0", "0.4", "0.5")
                if w["version"] != "1.0" and self.chance(0.5):
                    w["cs_frac"] = round(r.uniform(0.01, 0.5), 2)
            w["event_cv"] = round(r.uniform(0.05, 0.3), 2) if self.chance(0.5) else 0
        elif kind == "ebizzy":
            w["threads"] = th
            if self.chance(0.4):
                w["burst"] = dur(r, 20, 500)
            if self.chance(0.4):
                w["kernel"] = self.pick("mmap-lock", "arena-trim")
            if w.get("kernel", "mmap-lock") == "mmap-lock":
                if self.chance(0.3):
                    w["cs_frac"] = round(r.uniform(0.05, 0.5), 2)
                    w["sections"] = r.randint(1, 8)
            else:
                if self.chance(0.3):
                    w["pcp_batch"] = r.randint(8, 63)
                    w["pcp_high"] = w["pcp_batch"] * r.randint(2, 6)
            if self.chance(0.2):
                w["shootdown"] = dur(r, 0, 5)
            self.lock(w, bare)
        elif kind == "dbench":
            w["threads"] = th
            if self.chance(0.3):
                w["op_time"] = dur(r, 2, 20)
                w["cs_frac"] = round(r.uniform(0.05, 0.3), 2)
                w["sections"] = r.randint(1, 6)
                w["hot_locks"] = r.randint(1, 6)
            self.lock(w, bare)
        elif kind == "mutilate":
            w["threads"] = max(1, min(th, 8))
            if self.chance(0.3):
                w["server_threads"] = r.randint(1, 8)
            if self.chance(0.2):
                w["value_size"] = self.pick("1KiB", "16KiB", "64KiB")
            if self.chance(0.2):
                w["cache_footprint"] = self.pick("4KiB", "64KiB", "4MiB")
                w["client_time"] = dur(r, 1, 20)
                w["server_time"] = dur(r, 1, 20)
        elif kind == "specint-rate":
            w["threads"] = th
            if self.chance(0.3):
                w["benchmark_time"] = dur(r, 10000, 50000)
        elif kind == "cassandra":
            w["threads"] = th
            if self.chance(0.3):
                w["concurrent_reads"] = r.randint(1, 32)
                w["concurrent_writes"] = r.randint(1, 32)
            if self.chance(0.3):
                w["read_ratio"] = round(r.random(), 2)
                w["read_io_frac"] = round(r.random(), 2)
            if self.chance(0.3):
                w["hop_time"] = dur(r, 5, 300)
                w["net_rtt"] = dur(r, 0, 300)
                w["io_time"] = dur(r, 0, 3000)
        elif kind == "hammerdb":
            w["threads"] = th
            if self.chance(0.3):
                w["txn_time"] = dur(r, 200, 2000)
                w["sections"] = r.randint(1, 30)
                w["latches"] = r.randint(1, 6)
            if self.chance(0.3):
                w["commit_time"] = dur(r, 0, 1000)
                w["cs_frac"] = round(r.uniform(0.01, 0.6), 2)
            self.lock(w, bare, default="adaptive")
        elif kind == "specvirt-mix":
            w["threads"] = th
            w["role"] = self.pick("web", "mail", "app", "db")
        return w


# ---- a small YAML writer (block mappings, flow lists of scalars, quoted strings) -----------
def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(v)


def emit(v, indent=0):
    pad = "  " * indent
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, dict):
                out.append(f"{pad}{k}:")
                out.extend(emit(x, indent + 1))
            elif isinstance(x, list) and x and isinstance(x[0], dict):
                out.append(f"{pad}{k}:")
                for item in x:
                    sub = emit(item, indent + 2)
                    sub[0] = "  " * (indent + 1) + "- " + sub[0].lstrip()
                    out.extend(sub)
            elif isinstance(x, list):
                out.append(f"{pad}{k}: [" + ", ".join(scalar(e) for e in x) + "]")
            else:
                out.append(f"{pad}{k}: {scalar(x)}")
    return out


def run_one(binary, path, timeout):
    t0 = time.time()
    try:
        p = subprocess.run([binary, "run", path], capture_output=True, text=True, timeout=timeout)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = "timeout", ""
    return rc, err, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="/tmp/vcpusim-stress")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--binary", default="build/app/vcpusim")
    ap.add_argument("--duration-scale", type=int, default=1,
                    help="multiply the drawn 100-500 ms of simulated time (longer runs)")
    ap.add_argument("--only", type=int, help="write and run only scenario N")
    ap.add_argument("--no-run", action="store_true", help="only write the files")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    paths = []
    for i in range(a.count):
        sc = Gen(random.Random(f"{a.seed}/{i}"), a.duration_scale).scenario(i)
        if a.only is not None and i != a.only:
            continue
        path = os.path.join(a.out, f"{i:04d}.yaml")
        with open(path, "w") as f:
            f.write("\n".join(emit(sc)) + "\n")
        paths.append(path)
    if a.no_run:
        return 0
    counts, fails = {}, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {ex.submit(run_one, a.binary, p, a.timeout): p for p in paths}
        for n, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            p = futs[fut]
            rc, err, secs = fut.result()
            counts[rc] = counts.get(rc, 0) + 1
            if rc != 0:
                fails.append((p, rc, err.strip().splitlines()[-3:] if err else []))
                print(f"[{n}/{len(paths)}] {p}: exit {rc} ({secs:.1f}s) {err.strip()[-300:]}",
                      flush=True)
    with open(os.path.join(a.out, "failures.txt"), "w") as f:
        for p, rc, tail in sorted(fails):
            f.write(f"{p}\t{rc}\t{' | '.join(tail)}\n")
    print("exit status counts:", json.dumps({str(k): v for k, v in sorted(counts.items(), key=str)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
