// The CPU kernels' thread pool. One job runs at a time: the caller publishes (task, count), wakes
// the workers it wants, claims tasks from a shared atomic counter like them, and waits until every
// participant has finished. Workers spin briefly after a job (back-to-back ops are common) before
// blocking on a condition variable.
#include "tensor/backend/cpu/cpu_parallel.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RUCCL_CPU_RELAX() _mm_pause()
#else
#define RUCCL_CPU_RELAX() std::this_thread::yield()
#endif

namespace ruccl::cpu {

namespace {

// Iterations of pause (~40-140 cycles each) a worker spins for before sleeping: about 20-50 µs.
constexpr int kSpinIterations = 1000;

thread_local bool in_parallel_region = false;

class ThreadPool {
 public:
  // Runs the job on `threads` participants (the caller and threads - 1 workers).
  void run(std::int64_t n_tasks, int threads, TaskRef task) {
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock()) {  // another thread's job is running: do ours alone
      run_serial(n_tasks, task);
      return;
    }
    ensure_workers(threads - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      n_tasks_ = n_tasks;
      next_.store(0, std::memory_order_relaxed);
      wanted_ = threads - 1;
      pending_.store(threads - 1, std::memory_order_relaxed);
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work();
    // Wait for the workers: spin first, then sleep.
    for (int i = 0; i < kSpinIterations && pending_.load(std::memory_order_acquire) != 0; ++i) {
      RUCCL_CPU_RELAX();
    }
    if (pending_.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error = error_;
      task_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
  }

  static void run_serial(std::int64_t n_tasks, TaskRef task) {
    for (std::int64_t i = 0; i < n_tasks; ++i) task(i);
  }

 private:
  void ensure_workers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size());
      workers_.emplace_back([this, index] { worker_loop(index); });
      workers_.back().detach();  // the pool lives for the whole process
    }
  }

  // Claims and runs tasks until none are left; records the first exception.
  void work() {
    const bool was_nested = in_parallel_region;
    in_parallel_region = true;
    while (true) {
      const std::int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= n_tasks_) break;
      try {
        (*task_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
    in_parallel_region = was_nested;
  }

  void worker_loop(int index) {
    std::uint64_t seen = 0;
    while (true) {
      // Spin for a new generation, then sleep on the condition variable.
      std::uint64_t gen = generation_.load(std::memory_order_acquire);
      for (int i = 0; i < kSpinIterations && gen == seen; ++i) {
        RUCCL_CPU_RELAX();
        gen = generation_.load(std::memory_order_acquire);
      }
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (index >= wanted_) continue;  // this job does not need this worker
      }
      work();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
  }

  std::mutex job_mutex_;  // held by the caller for the whole job
  std::mutex mutex_;      // guards the job fields and the condition variables
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};
  const TaskRef* task_ = nullptr;
  std::int64_t n_tasks_ = 0;
  std::atomic<std::int64_t> next_{0};
  int wanted_ = 0;
  std::atomic<int> pending_{0};
  std::exception_ptr error_;
};

ThreadPool& pool() {
  // Never destroyed: detached workers may still be waiting on it while the process exits.
  static ThreadPool* instance = new ThreadPool();
  return *instance;
}

}  // namespace

void parallel_for(std::int64_t n_tasks, int threads, TaskRef task) {
  if (n_tasks <= 0) return;
  if (threads > n_tasks) threads = static_cast<int>(n_tasks);
  if (threads <= 1 || in_parallel_region) {
    ThreadPool::run_serial(n_tasks, task);
    return;
  }
  pool().run(n_tasks, threads, task);
}

}  // namespace ruccl::cpu
