// CpuBackend: allocation (large blocks through cpu_block_cache.h), host transfers, byte copies,
// strided copy with dtype conversion, fill.
#include <cstdlib>
#include <cstring>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_block_cache.h"
#include "tensor/backend/cpu/cpu_memory_counter.h"
#include "tensor/backend/cpu/strided_loop.h"
#include "tensor/core/checked_arithmetic.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

constexpr std::size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads

// The context is a counted allocation's record (cpu_memory_counter.h), or null.
void free_aligned(void* p, void* context) {
  std::free(p);
  if (context != nullptr) count_free(context);
}
void release_cached(void* p, void* context) {
  release_block(p);
  if (context != nullptr) count_free(context);
}

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
  // A size within kAlignment of SIZE_MAX would round to 0 and "succeed" with a null block.
  std::size_t rounded = 0;
  const bool fits = !round_up_overflows(nbytes, kAlignment, rounded);
  const bool cached = fits && rounded >= kMinCachedBytes;  // large blocks are reused
  void* p = nullptr;
  if (cached) {
    p = acquire_block(rounded);
  } else if (fits && rounded > 0) {
    p = std::aligned_alloc(kAlignment, rounded);
  }
  RUCCL_CHECK(fits && (rounded == 0 || p != nullptr), OutOfMemoryError,
              "CpuBackend::allocate: out of memory: the system could not provide ", nbytes,
              " bytes", fits ? "" : " (no block can be that large)");
  const auto counter = active_memory_counter();  // null unless a MemoryCounter runs here
  void* context = counter != nullptr && p != nullptr ? count_allocation(counter, nbytes) : nullptr;
  return std::make_shared<Storage>(p, nbytes, device, cached ? &release_cached : &free_aligned,
                                   context);
}

void CpuBackend::copy_bytes(const Storage& src, std::size_t src_offset, Storage& dst,
                            std::size_t dst_offset, std::size_t nbytes) {
  RUCCL_ASSERT(src_offset + nbytes <= src.nbytes() && dst_offset + nbytes <= dst.nbytes());
  if (nbytes > 0) {
    std::memmove(static_cast<char*>(dst.data()) + dst_offset,
                 static_cast<const char*>(src.data()) + src_offset, nbytes);
  }
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
