#pragma once
// BusyCalendar: when a shared resource of the simulated world (a rank's receive port, a host's
// NIC) is busy, as disjoint intervals of virtual time. Ranks act one at a time but not in the
// order of their clocks (a rank runs until it blocks), so a message posted later may be ready
// earlier than one already booked: it takes the first gap that fits instead of queueing behind
// it (first fit, not a FIFO in simulation order, which would form convoys).
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>

namespace ruccl {

class BusyCalendar {
 public:
  /// Books `duration` seconds at the first free time >= `ready`; returns that start.
  double reserve(double ready, double duration) {
    if (duration <= 0) return ready;
    double t = ready;
    auto it = busy_.upper_bound(t);
    if (it != busy_.begin()) {
      const auto prev = std::prev(it);
      t = std::max(t, prev->second);
    }
    while (it != busy_.end() && it->first < t + duration) {
      t = std::max(t, it->second);
      ++it;
    }
    insert(t, t + duration);
    return t;
  }

 private:
  // Inserts [begin, end) (free by construction), merging with touching neighbours.
  void insert(double begin, double end) {
    auto next = busy_.lower_bound(begin);
    if (next != busy_.end() && next->first == end) {
      end = next->second;
      next = busy_.erase(next);
    }
    if (next != busy_.begin()) {
      const auto prev = std::prev(next);
      if (prev->second == begin) {
        prev->second = end;
        return trim();
      }
    }
    busy_.emplace(begin, end);
    trim();
  }
  // Bounds the memory: the oldest intervals go once there are many (a message ready before all
  // of them then books from the earliest one kept: the world has long moved past that time).
  void trim() {
    if (busy_.size() <= kMaxIntervals) return;
    auto cut = busy_.begin();
    std::advance(cut, kMaxIntervals / 2);
    const double floor = busy_.begin()->first;
    const double until = std::prev(cut)->second;
    busy_.erase(busy_.begin(), cut);
    busy_.emplace(floor, until);
  }

  static constexpr std::size_t kMaxIntervals = 4096;
  std::map<double, double> busy_;  // start -> end
};

}  // namespace ruccl
