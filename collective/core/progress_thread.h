#pragma once
// ProgressThread: the one communication thread of a communicator, which runs its asynchronous
// calls one at a time in the order they were started (docs/collectives.md, "Threads per rank").
// Started on the first *_async call (a rank that only makes blocking calls has none); idle, it
// sleeps on a condition variable (no core is spun). Its destructor lets the queued calls run out
// (each is bounded by its deadline, and fails at once when the group is finished), then joins.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ruccl {

class ProgressThread {
 public:
  ProgressThread() = default;
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  /// Queues `job` behind every call started before it (it must not throw).
  void submit(std::function<void()> job);
  /// Whether no call is queued or running: a blocking call then runs on its caller's thread.
  /// Acquire: what the last job wrote is visible to the caller.
  bool idle() const { return pending_.load(std::memory_order_acquire) == 0; }
  /// Whether the thread was started (for tests and docs: threads per rank).
  bool started() const;

 private:
  void loop();

  std::atomic<int> pending_{0};  // queued + running
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread thread_;
};

}  // namespace ruccl
