// SPDX-License-Identifier: MIT
// LongHolder, a test workload shared by the guest tests: two threads take turns on lock 0,
// thread 0 holding it `long_hold_ns` at a time and thread 1 for 10 us, each after 10 us of
// work. So thread 1 waits out every long hold (sleeping on a mutex, spinning or halting on a
// spinlock), and thread 0's release hands the lock over to it.
#pragma once

#include <string_view>
#include <vector>

#include "guest/spinlock.h"
#include "guest/workload.h"

namespace vcpusim::test {

class LongHolder final : public guest::Workload {
 public:
  LongHolder(guest::LockParams p, double long_hold_ns) : p_(p), long_hold_(long_hold_ns) {}
  std::string_view kind() const override { return "long-holder"; }
  std::uint32_t threads() const override { return 2; }
  guest::Step next(std::uint32_t thread, sim::RngStream&) override {
    guest::Step s;
    s.work_ns = 10e3;
    s.result = 1;
    s.lock = 0;
    s.hold_ns = thread == 0 ? long_hold_ : 10e3;
    return s;
  }
  std::string_view unit() const override { return "steps/s"; }
  std::vector<guest::LockSpec> locks() const override { return {guest::LockSpec{"l", p_}}; }

 private:
  guest::LockParams p_;
  double long_hold_;
};

}  // namespace vcpusim::test
