// SPDX-License-Identifier: MIT
// This file defines cfs::Timeline, the ordered set of runnable-but-waiting entities of one CFS
// runqueue (Linux's cfs_rq->tasks_timeline, a red-black tree keyed by vruntime with a cached
// leftmost). It is a binary min-heap with index tracking instead of a tree because the policy
// only ever needs the leftmost entity, the few entities after it (pick_next_entity's "second"
// for the skip buddy), insertion and removal of an arbitrary entity: all O(log n) or O(1), with
// no allocation once the storage has grown to the runqueue's largest size (std::multiset would
// allocate a node per insertion). Ties on vruntime break by insertion order, as the rbtree
// does ("Nodes with the same key stay together": an equal key goes right), so runs are
// deterministic.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "hypervisor/ids.h"

namespace vcpusim::policy::cfs {

class Timeline {
 public:
  static constexpr std::uint32_t kNotQueued = std::numeric_limits<std::uint32_t>::max();

  struct Slot {
    std::int64_t vruntime = 0;  ///< the key (ns of virtual time)
    std::uint64_t seq = 0;      ///< insertion order, the tie-break
    hv::VcpuId v = hv::kIdle;
  };

  /// `pos` maps an entity id to its slot in whichever Timeline holds it (kNotQueued: none).
  /// It is shared by all runqueues' timelines, since an entity is on at most one of them.
  void bind(std::vector<std::uint32_t>* pos) { pos_ = pos; }
  void reserve(std::size_t n) { heap_.reserve(n); }

  bool empty() const { return heap_.empty(); }
  std::uint32_t size() const { return static_cast<std::uint32_t>(heap_.size()); }
  /// The leftmost entity (smallest vruntime, earliest queued among equals); kIdle if empty.
  hv::VcpuId leftmost() const { return heap_.empty() ? hv::kIdle : heap_[0].v; }
  /// Slot i of the heap array (0 = leftmost). The k smallest entries all lie in slots
  /// [0, 2^k - 1), which lets callers find the best entry that is not one of k-1 excluded ones
  /// by looking at a handful of slots.
  const Slot& slot(std::uint32_t i) const { return heap_[i]; }
  bool contains(hv::VcpuId v) const { return v < pos_->size() && (*pos_)[v] != kNotQueued; }

  void insert(hv::VcpuId v, std::int64_t vruntime) {
    heap_.push_back(Slot{vruntime, next_seq_++, v});
    const auto i = static_cast<std::uint32_t>(heap_.size() - 1);
    (*pos_)[v] = i;
    sift_up(i);
  }

  void erase(hv::VcpuId v) {
    const std::uint32_t i = (*pos_)[v];
    (*pos_)[v] = kNotQueued;
    const auto last = static_cast<std::uint32_t>(heap_.size() - 1);
    if (i != last) {
      heap_[i] = heap_[last];
      (*pos_)[heap_[i].v] = i;
      heap_.pop_back();
      if (i > 0 && less(heap_[i], heap_[(i - 1) / 2])) sift_up(i);
      else sift_down(i);
    } else {
      heap_.pop_back();
    }
  }

  /// a is before b in timeline order (Linux entity_before, plus the insertion tie-break).
  static bool less(const Slot& a, const Slot& b) {
    return a.vruntime < b.vruntime || (a.vruntime == b.vruntime && a.seq < b.seq);
  }

 private:
  void place(std::uint32_t i, const Slot& s) {
    heap_[i] = s;
    (*pos_)[s.v] = i;
  }
  void sift_up(std::uint32_t i) {
    const Slot s = heap_[i];
    while (i > 0) {
      const std::uint32_t parent = (i - 1) / 2;
      if (!less(s, heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, s);
  }
  void sift_down(std::uint32_t i) {
    const Slot s = heap_[i];
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && less(heap_[c + 1], heap_[c])) ++c;
      if (!less(heap_[c], s)) break;
      place(i, heap_[c]);
      i = c;
    }
    place(i, s);
  }

  std::vector<Slot> heap_;
  std::vector<std::uint32_t>* pos_ = nullptr;
  std::uint64_t next_seq_ = 0;
};

}  // namespace vcpusim::policy::cfs
