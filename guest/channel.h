// SPDX-License-Identifier: MIT
// This file defines Channel, the guest's request/reply facility: a FIFO of messages with a FIFO
// of threads waiting to receive, as a socket, pipe or futex-backed work queue is inside one OS
// instance. A thread that receives on an empty channel sleeps until a message is sent to it;
// a send to a channel with a waiting thread hands the message straight to the first waiter,
// which the OS then wakes (the loopback send that wakes the reader's epoll_wait, or the
// futex_wake of a thread-pool hand-off). One receiver per channel is a private mailbox
// (a connection); several are a shared work queue (a stage of a thread pool).
//
// A channel is only the queue: GuestOs (guest_os.h, "Channels") blocks and wakes the threads.
// It allocates only when its queue grows past its largest size so far, so a closed loop in
// steady state allocates nothing per message.
#pragma once

#include <cstdint>
#include "guest/fifo_ring.h"
#include "sim/sim_time.h"

namespace vcpusim::guest {

struct Message {
  std::uint64_t payload = 0;  ///< what the workload put in (a request's sender, a stage's job)
  sim::Time sent_at = 0;
};

class Channel {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  /// Sends `m`. Returns the first waiting thread, which now owns `m` (the caller hands it over
  /// and wakes it), or kNone when nobody waits and `m` was queued.
  std::uint32_t send(const Message& m);
  /// Thread t asks for a message. True: one was queued and is in `out`; false: t now waits.
  bool receive(std::uint32_t t, Message& out);
  std::size_t queued() const { return messages_.size(); }
  std::size_t waiting() const { return waiters_.size(); }

 private:
  FifoRing<Message> messages_;
  FifoRing<std::uint32_t> waiters_;
};

}  // namespace vcpusim::guest
