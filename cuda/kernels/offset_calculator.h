#pragma once
// The index arithmetic of every CUDA kernel over strided tensors, in one header compiled by g++
// (host tests, launch planning) and nvcc (kernels) alike: no CUDA include, no Tensor.
//
// A Geometry holds up to kMaxDims sizes and, for each of N operands, byte strides. make_geometry
// drops size-1 dims and merges neighbours that every operand steps over contiguously (as the CPU
// backend's for_each_run does), innermost last, so a contiguous op becomes one dim. An
// OffsetCalculator<N, Index> turns a linear element number (row-major over the merged sizes) into
// N byte offsets by repeated divmod, innermost first; Index is uint32_t when the element count and
// every operand's byte extent fit below 2^31 (fits_32bit), which makes the divisions several times
// cheaper on a GPU, else int64_t.
#include <cstdint>

#if defined(__CUDACC__)
#define RUCCL_HD __host__ __device__ __forceinline__
#define RUCCL_UNROLL _Pragma("unroll")
#else
#define RUCCL_HD inline
#define RUCCL_UNROLL
#endif

namespace ruccl::cuda {

constexpr int kMaxDims = 8;

/// Sizes and byte strides of N operands walked together; dims[0] is the outermost.
template <int N>
struct Geometry {
  int ndim = 0;
  std::int64_t sizes[kMaxDims] = {};
  std::int64_t strides[N][kMaxDims] = {};  // bytes

  /// Product of the sizes (1 for ndim == 0).
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

/// The merged geometry of N operands of shape sizes[0, ndim) whose element strides are
/// strides[k][0, ndim) and element sizes elem_bytes[k]. Size-1 dims go; a dim d-1 merges into d
/// when every operand has stride[d-1] == stride[d] * size[d]. A size-0 dim gives numel() == 0.
template <int N>
Geometry<N> make_geometry(int ndim, const std::int64_t* sizes, const std::int64_t* const* strides,
                          const std::int64_t* elem_bytes) {
  Geometry<N> g;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) {
      g.ndim = 1;
      g.sizes[0] = 0;
      for (int k = 0; k < N; ++k) g.strides[k][0] = 0;
      return g;
    }
  }
  int w = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    bool merge = w > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = g.strides[k][w - 1] == strides[k][d] * elem_bytes[k] * sizes[d];
    }
    if (merge) {
      g.sizes[w - 1] *= sizes[d];
      for (int k = 0; k < N; ++k) g.strides[k][w - 1] = strides[k][d] * elem_bytes[k];
    } else {
      g.sizes[w] = sizes[d];
      for (int k = 0; k < N; ++k) g.strides[k][w] = strides[k][d] * elem_bytes[k];
      ++w;
    }
  }
  g.ndim = w;
  return g;
}

/// Whether 32-bit index math covers the geometry: the element count and, for every operand, the
/// furthest byte offset reached (in either direction) stay below 2^31.
template <int N>
bool fits_32bit(const Geometry<N>& g) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 31;
  if (g.numel() >= kLimit) return false;
  for (int k = 0; k < N; ++k) {
    std::int64_t extent = 0;
    for (int d = 0; d < g.ndim; ++d) {
      const std::int64_t s = g.strides[k][d] < 0 ? -g.strides[k][d] : g.strides[k][d];
      extent += s * (g.sizes[d] - 1);
      if (extent >= kLimit) return false;
    }
  }
  return true;
}

/// Whether operand k is dense row-major over the merged geometry with `elem` bytes per element
/// (a single merged dim of stride elem, or no dim at all).
template <int N>
bool is_flat(const Geometry<N>& g, int k, std::int64_t elem) {
  return g.ndim == 0 || (g.ndim == 1 && g.strides[k][0] == elem);
}

/// Byte offsets of N operands at a linear element number.
template <int N, typename Index>
struct OffsetCalculator {
  int ndim = 0;
  Index sizes[kMaxDims] = {};
  // Byte strides stay 64-bit (a multiply-add); the divisions, the costly part, run in Index.
  std::int64_t strides[N][kMaxDims] = {};

  OffsetCalculator() = default;
  explicit OffsetCalculator(const Geometry<N>& g) : ndim(g.ndim) {
    for (int d = 0; d < g.ndim; ++d) {
      sizes[d] = static_cast<Index>(g.sizes[d]);
      for (int k = 0; k < N; ++k) strides[k][d] = g.strides[k][d];
    }
  }

  struct Offsets {
    std::int64_t v[N];
  };

  /// The byte offset of each operand at element `linear` (row-major over sizes). The outermost
  /// coordinate is what remains after the inner divisions: a one-dim geometry costs no division.
  RUCCL_HD Offsets get(Index linear) const {
    Offsets out{};
    RUCCL_UNROLL
    for (int k = 0; k < N; ++k) out.v[k] = 0;
    RUCCL_UNROLL
    for (int i = kMaxDims - 1; i >= 1; --i) {
      if (i >= ndim) continue;
      const Index size = sizes[i];
      const Index q = linear / size;
      const Index coord = linear - q * size;
      linear = q;
      RUCCL_UNROLL
      for (int k = 0; k < N; ++k) out.v[k] += static_cast<std::int64_t>(coord) * strides[k][i];
    }
    RUCCL_UNROLL
    for (int k = 0; k < N; ++k) out.v[k] += static_cast<std::int64_t>(linear) * strides[k][0];
    return out;
  }
};

/// Blocks of `threads` threads for a grid-stride loop over n items: enough to cover n, at most
/// max_blocks (the loop takes the rest). n <= 0 gives 0.
inline std::int64_t grid_blocks(std::int64_t n, int threads, std::int64_t max_blocks) {
  if (n <= 0) return 0;
  const std::int64_t blocks = (n + threads - 1) / threads;
  return blocks < max_blocks ? blocks : max_blocks;
}

/// Elements per vectorised access (16-byte loads and stores) for an element of `elem` bytes when
/// every pointer in ptrs[0, count) is aligned to that many bytes: 16 / elem, halved until all are
/// aligned, at least 1.
inline int vector_width(int elem, const void* const* ptrs, int count) {
  int width = elem >= 16 ? 1 : 16 / elem;
  while (width > 1) {
    bool aligned = true;
    for (int i = 0; i < count; ++i) {
      aligned = aligned && reinterpret_cast<std::uintptr_t>(ptrs[i]) % (width * elem) == 0;
    }
    if (aligned) break;
    width /= 2;
  }
  return width;
}

}  // namespace ruccl::cuda
