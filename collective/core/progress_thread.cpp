#include "collective/core/progress_thread.h"

namespace ruccl {

ProgressThread::~ProgressThread() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ProgressThread::started() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return thread_.joinable();
}

void ProgressThread::submit(std::function<void()> job) {
  pending_.fetch_add(1, std::memory_order_relaxed);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  work_cv_.notify_one();
}

void ProgressThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every queued call has run
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // the call's captures (its tensors) go before it counts as done
    pending_.fetch_sub(1, std::memory_order_release);
    lock.lock();
  }
}

}  // namespace ruccl
