#include "tensor/backend/cpu/cpu_memory_counter.h"

#include <algorithm>
#include <atomic>

#include "tensor/core/error.h"

namespace ruccl::cpu {

struct MemoryCounter::State {
  std::atomic<std::int64_t> in_use{0};
  std::atomic<std::int64_t> peak{0};
};

namespace {

thread_local std::shared_ptr<MemoryCounter::State> t_active;

/// What a counted storage's deleter gets.
struct Counted {
  std::shared_ptr<MemoryCounter::State> state;
  std::int64_t bytes;
};

}  // namespace

MemoryCounter::MemoryCounter() : state_(std::make_shared<State>()) {
  RUCCL_CHECK(t_active == nullptr, ValueError,
              "cpu::MemoryCounter: expected no other counter on this thread, got one");
  t_active = state_;
}

MemoryCounter::~MemoryCounter() {
  if (t_active == state_) t_active.reset();
}

std::int64_t MemoryCounter::bytes_in_use() const { return state_->in_use.load(); }
std::int64_t MemoryCounter::peak_bytes() const { return state_->peak.load(); }
void MemoryCounter::reset_peak() { state_->peak.store(state_->in_use.load()); }

std::shared_ptr<MemoryCounter::State> active_memory_counter() { return t_active; }

void* count_allocation(const std::shared_ptr<MemoryCounter::State>& state, std::size_t bytes) {
  const auto n = static_cast<std::int64_t>(bytes);
  const std::int64_t now = state->in_use.fetch_add(n) + n;
  std::int64_t peak = state->peak.load();
  while (now > peak && !state->peak.compare_exchange_weak(peak, now)) {
  }
  return new Counted{state, n};
}

void count_free(void* context) {
  const auto* counted = static_cast<Counted*>(context);
  counted->state->in_use.fetch_sub(counted->bytes);
  delete counted;
}

}  // namespace ruccl::cpu
