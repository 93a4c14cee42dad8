// cpu::MemoryCounter: the allocator's per-thread accounting of CPU tensor memory (bytes in use and
// the peak), which the ZeRO memory test reads.
#include <catch2/catch.hpp>

#include <thread>

#include "tensor/backend/cpu/cpu_memory_counter.h"
#include "tensor/core/tensor.h"

using namespace ruccl;

TEST_CASE("MemoryCounter counts this thread's tensors while they live, and the peak", "[tensor]") {
  cpu::MemoryCounter counter;
  REQUIRE(counter.bytes_in_use() == 0);
  {
    const Tensor a = Tensor::zeros({100}, DType::F32);  // small: aligned_alloc
    REQUIRE(counter.bytes_in_use() == 400);
    {
      const Tensor b = Tensor::zeros({1 << 17}, DType::F64);  // 1 MiB: the block cache
      REQUIRE(counter.bytes_in_use() == 400 + (8 << 17));
      const Tensor view = b.narrow(0, 0, 10);  // a view allocates nothing
      REQUIRE(counter.bytes_in_use() == 400 + (8 << 17));
    }
    REQUIRE(counter.bytes_in_use() == 400);
    REQUIRE(counter.peak_bytes() == 400 + (8 << 17));
    counter.reset_peak();
    REQUIRE(counter.peak_bytes() == 400);
    Tensor elsewhere;
    std::thread([&] { elsewhere = Tensor::zeros({1000}, DType::F32); }).join();
    REQUIRE(counter.bytes_in_use() == 400);  // another thread's allocation is not counted
    const Tensor empty = Tensor::zeros({0}, DType::F32);
    REQUIRE(counter.bytes_in_use() == 400);
  }
  REQUIRE(counter.bytes_in_use() == 0);
  REQUIRE(counter.peak_bytes() == 400);
}

TEST_CASE("MemoryCounter: a tensor freed on another thread, or after the counter, is subtracted",
          "[tensor]") {
  Tensor kept;
  {
    cpu::MemoryCounter counter;
    kept = Tensor::zeros({64}, DType::F32);
    Tensor moved = Tensor::zeros({32}, DType::F32);
    std::thread([t = std::move(moved)]() mutable { t = Tensor(); }).join();
    REQUIRE(counter.bytes_in_use() == 256);
  }
  kept = Tensor();          // its counter is gone: no crash, nothing leaks (ASan would say)
  cpu::MemoryCounter next;  // the thread may count again
  REQUIRE(next.bytes_in_use() == 0);
}

TEST_CASE("MemoryCounter: one counter per thread at a time", "[tensor]") {
  cpu::MemoryCounter first;
  REQUIRE_THROWS_AS(cpu::MemoryCounter(), ValueError);
  REQUIRE_THROWS_WITH(cpu::MemoryCounter(),
                      Catch::Contains("cpu::MemoryCounter: expected no other counter on this "
                                      "thread, got one"));
}
