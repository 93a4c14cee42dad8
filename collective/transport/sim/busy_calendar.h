#pragma once
// BusyCalendar: when a shared resource of the simulated world (a rank's receive port, a host's
// NIC) is busy, as disjoint intervals of virtual time. Ranks act one at a time but not in the
// order of their clocks (a rank runs until it blocks), so a message posted later may be ready
// earlier than one already booked: it takes the first gap that fits instead of queueing behind
// it (first fit, not a FIFO in simulation order, which would form convoys). First fit looks at
// 32 intervals at most, then books after the last one.
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
    // First fit among the next kMaxLook intervals, else after the last one (always free): a
    // port booked by 1,023 senders would otherwise be scanned end to end by every message.
    for (std::size_t look = 0; it != busy_.end() && it->first < t + duration; ++look, ++it) {
      if (look == kMaxLook) {
        t = std::max(t, busy_.rbegin()->second);
        break;
      }
      t = std::max(t, it->second);
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

  static constexpr std::size_t kMaxIntervals = 128;
  static constexpr std::size_t kMaxLook = 32;
  std::map<double, double> busy_;  // start -> end
};

}  // namespace ruccl
