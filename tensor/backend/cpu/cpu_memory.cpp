// CpuBackend: allocation, host transfers, strided copy with dtype conversion, fill.
#include <sys/mman.h>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/strided_loop.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

constexpr std::size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads

// Blocks of at least one huge page (2 MiB on x86-64) are aligned to it, padded to whole huge pages
// and marked MADV_HUGEPAGE, so that Linux backs them with transparent huge pages when its THP mode
// is "madvise" (Debian's default) or "always". A fresh block then costs one page fault per 2 MiB
// instead of one per 4 KiB: on the project's VMs, where a fault costs 10-40 us, a freshly allocated
// 64 MiB `a + b` went from 0.7 to 21 GB/s, and TLB misses drop for every large tensor
// (docs/performance.md). PyTorch does the same behind THP_MEM_ALLOC_ENABLE; here it is on unless
// RUCCL_CPU_HUGE_PAGES=0. The padding wastes less than 2 MiB per block of 2 MiB or more.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

bool huge_pages_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("RUCCL_CPU_HUGE_PAGES");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

void* allocate_aligned(std::size_t rounded) {
  if (rounded == 0) return nullptr;
#ifdef MADV_HUGEPAGE
  if (rounded >= kHugePage && huge_pages_enabled()) {
    const std::size_t padded = (rounded + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, padded);
    if (p != nullptr) (void)madvise(p, padded, MADV_HUGEPAGE);  // advice only: failure is harmless
    return p;
  }
#endif
  return std::aligned_alloc(kAlignment, rounded);
}

void free_aligned(void* p) { std::free(p); }

// Element conversion that goes through float for Half/BFloat16 and never hits UB for integers.
template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace

std::shared_ptr<Storage> CpuBackend::allocate(std::size_t nbytes, Device device) {
  const std::size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = allocate_aligned(rounded);
  RUCCL_CHECK(rounded == 0 || p != nullptr, ValueError, "CpuBackend::allocate: out of memory for ",
              nbytes, " bytes");
  return std::make_shared<Storage>(p, nbytes, device, &free_aligned);
}

void CpuBackend::copy_from_host(const void* host, Storage& dst, std::size_t offset,
                                std::size_t nbytes) {
  RUCCL_ASSERT(offset + nbytes <= dst.nbytes());
  if (nbytes > 0) std::memcpy(static_cast<char*>(dst.data()) + offset, host, nbytes);
}

void CpuBackend::copy_to_host(const Storage& src, std::size_t offset, void* host,
                              std::size_t nbytes) {
  RUCCL_ASSERT(offset + nbytes <= src.nbytes());
  if (nbytes > 0) std::memcpy(host, static_cast<const char*>(src.data()) + offset, nbytes);
}

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  RUCCL_ASSERT(src.shape() == dst.shape());
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
    if (dst.nbytes() > 0) std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  visit_dtype(dst.dtype(), [&](auto to_tag) {
    using To = decltype(to_tag);
    visit_dtype(src.dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      for_each_run<2>(dst.shape(), {&dst, &src}, [](const StridedRun<2>& r) {
        char* d = r.ptr[0];
        const char* s = r.ptr[1];
        for (std::int64_t i = 0; i < r.n; ++i, d += r.stride[0], s += r.stride[1]) {
          From v;
          std::memcpy(&v, s, sizeof(From));
          const To out = convert<To>(v);
          std::memcpy(d, &out, sizeof(To));
        }
      });
    });
  });
}

void CpuBackend::fill(const Tensor& dst, Scalar value) {
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      v = T(value.to<float>());
    } else {
      v = value.to<T>();
    }
    for_each_run<1>(dst.shape(), {&dst}, [v](const StridedRun<1>& r) {
      char* d = r.ptr[0];
      if (r.stride[0] == static_cast<std::int64_t>(sizeof(T))) {
        T* p = reinterpret_cast<T*>(d);
        for (std::int64_t i = 0; i < r.n; ++i) p[i] = v;
        return;
      }
      for (std::int64_t i = 0; i < r.n; ++i, d += r.stride[0]) std::memcpy(d, &v, sizeof(T));
    });
  });
}

}  // namespace ruccl::cpu
