// CpuBackend index ops. Two kernels do all the work:
//   gather:  out[p] = x[p with coordinate `dim` replaced by index[p]]
//   scatter: out[p with coordinate `dim` replaced by index[p]] += src[p]
// walked with for_each_run over the index's shape. The x (or out) operand is passed as a view
// whose stride along `dim` is 0, so a run's pointer lands on the row the index then offsets by
// index * stride(dim). index_select and index_add are the same kernels with the 1-d index
// broadcast (stride 0) over every other dim. Every index is bounds-checked here first (the
// frontend leaves it to the backend: a GPU checks in its kernels).
// Scatter runs on one thread in row-major order, so repeated indices add in a fixed order.
#include <cstring>
#include <type_traits>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/cpu/strided_loop.h"
#include "tensor/backend/index_bounds.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

/// `t` seen with `shape`, its own strides except `dim`, whose stride becomes 0.
Tensor pinned_view(const Tensor& t, const Shape& shape, std::int64_t dim) {
  Shape strides = t.strides();
  strides[dim] = 0;
  return Tensor(t.storage(), shape, strides, t.offset(), t.dtype());
}

/// A 1-d `index` broadcast to `shape` along `dim` (stride 0 elsewhere).
Tensor broadcast_index(const Tensor& index, const Shape& shape, std::int64_t dim) {
  Shape strides = shape;
  for (std::int64_t d = 0; d < strides.size(); ++d) strides[d] = 0;
  strides[dim] = index.dim() == 0 ? 0 : index.strides()[0];
  return Tensor(index.storage(), shape, strides, index.offset(), index.dtype());
}

/// Unsigned integer of `Size` bytes, to move elements of any dtype.
template <std::size_t Size>
using Bits = std::conditional_t<
    Size == 1, std::uint8_t,
    std::conditional_t<Size == 2, std::uint16_t,
                       std::conditional_t<Size == 4, std::uint32_t, std::uint64_t>>>;

template <typename I>
I read_index(const char* p) {
  I v;
  std::memcpy(&v, p, sizeof(I));
  return v;
}

template <typename I, typename E>
void gather_typed(const Tensor& out, const Tensor& x_pinned, const Tensor& index,
                  std::int64_t dim_stride) {
  const std::int64_t step = dim_stride * static_cast<std::int64_t>(sizeof(E));
  parallel_for_each_run<3>(out.shape(), {&out, &x_pinned, &index}, [step](const StridedRun<3>& r) {
    char* o = r.ptr[0];
    const char* x = r.ptr[1];
    const char* ix = r.ptr[2];
    if (r.stride[2] == 0) {  // one index for the whole run (index_select): a strided row copy
      const char* row = x + read_index<I>(ix) * step;
      if (r.stride[0] == sizeof(E) && r.stride[1] == sizeof(E)) {
        std::memcpy(o, row, static_cast<std::size_t>(r.n) * sizeof(E));
        return;
      }
      for (std::int64_t i = 0; i < r.n; ++i, o += r.stride[0], row += r.stride[1]) {
        std::memcpy(o, row, sizeof(E));
      }
      return;
    }
    for (std::int64_t i = 0; i < r.n; ++i, o += r.stride[0], x += r.stride[1], ix += r.stride[2]) {
      std::memcpy(o, x + read_index<I>(ix) * step, sizeof(E));
    }
  });
}

void gather_any(const Tensor& out, const Tensor& x_pinned, const Tensor& index,
                std::int64_t dim_stride) {
  visit_dtype(index.dtype(), [&](auto index_tag) {
    using I = decltype(index_tag);
    if constexpr (std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>) {
      switch (out.element_size()) {
        case 1:
          return gather_typed<I, Bits<1>>(out, x_pinned, index, dim_stride);
        case 2:
          return gather_typed<I, Bits<2>>(out, x_pinned, index, dim_stride);
        case 4:
          return gather_typed<I, Bits<4>>(out, x_pinned, index, dim_stride);
        default:
          return gather_typed<I, Bits<8>>(out, x_pinned, index, dim_stride);
      }
    } else {
      RUCCL_ASSERT(false, "index dtype ", index.dtype(), " passed the frontend");
    }
  });
}

template <typename T>
void accumulate(char* dst, const char* src) {
  T d;
  T s;
  std::memcpy(&d, dst, sizeof(T));
  std::memcpy(&s, src, sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    d = d || s;
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    d = T(static_cast<float>(d) + static_cast<float>(s));
  } else {
    d = d + s;
  }
  std::memcpy(dst, &d, sizeof(T));
}

void scatter_any(const Tensor& out_pinned, const Tensor& src, const Tensor& index,
                 std::int64_t dim_stride) {
  visit_dtype(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_dtype(index.dtype(), [&](auto index_tag) {
      using I = decltype(index_tag);
      if constexpr (std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>) {
        const std::int64_t step = dim_stride * static_cast<std::int64_t>(sizeof(T));
        for_each_run<3>(src.shape(), {&out_pinned, &src, &index}, [step](const StridedRun<3>& r) {
          char* o = r.ptr[0];
          const char* s = r.ptr[1];
          const char* ix = r.ptr[2];
          for (std::int64_t i = 0; i < r.n;
               ++i, o += r.stride[0], s += r.stride[1], ix += r.stride[2]) {
            accumulate<T>(o + read_index<I>(ix) * step, s);
          }
        });
      } else {
        RUCCL_ASSERT(false, "index dtype ", index.dtype(), " passed the frontend");
      }
    });
  });
}

// Every index of `index` (I32/I64, any strides) must lie in [0, bound).
void check_bounds(const Tensor& index, std::int64_t bound, std::string_view op, std::int64_t dim,
                  const Shape& of) {
  const Tensor idx = index.contiguous();
  visit_dtype(idx.dtype(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>) {
      const I* p = idx.data<I>();
      for (std::int64_t i = 0; i < idx.numel(); ++i) {
        const auto v = static_cast<std::int64_t>(p[i]);
        if (v < 0 || v >= bound) [[unlikely]] {
          throw_index_out_of_bounds(op, v, i, idx.shape(), bound, dim, of);
        }
      }
    } else {
      RUCCL_ASSERT(false, "index dtype ", idx.dtype(), " passed the frontend");
    }
  });
}

}  // namespace

void CpuBackend::index_select(const Tensor& x, std::int64_t dim, const Tensor& index,
                              const Tensor& out) {
  check_bounds(index, x.size(dim), "index_select", dim, x.shape());
  if (out.numel() == 0) return;
  gather_any(out, pinned_view(x, out.shape(), dim), broadcast_index(index, out.shape(), dim),
             x.strides()[dim]);
}

void CpuBackend::gather(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& out) {
  check_bounds(index, x.size(dim), "gather", dim, x.shape());
  if (out.numel() == 0) return;
  gather_any(out, pinned_view(x, index.shape(), dim), index, x.strides()[dim]);
}

void CpuBackend::scatter_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                             const Tensor& src) {
  check_bounds(index, out.size(dim), "scatter_add", dim, out.shape());
  if (index.numel() == 0) return;
  scatter_any(pinned_view(out, index.shape(), dim), src, index, out.strides()[dim]);
}

void CpuBackend::index_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                           const Tensor& src) {
  check_bounds(index, out.size(dim), "index_add", dim, out.shape());
  if (src.numel() == 0) return;
  scatter_any(pinned_view(out, src.shape(), dim), src, broadcast_index(index, src.shape(), dim),
              out.strides()[dim]);
}

void CpuBackend::one_hot(const Tensor& indices, const Tensor& out) {
  RUCCL_ASSERT(out.dtype() == DType::I64 && out.is_contiguous());
  check_bounds(indices, out.size(-1), "one_hot", -1, out.shape());
  fill(out, 0);
  if (out.numel() == 0) return;
  const std::int64_t classes = out.size(-1);
  std::int64_t* o = out.data<std::int64_t>();
  const Tensor idx = indices.contiguous();
  visit_dtype(idx.dtype(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>) {
      const I* p = idx.data<I>();
      for (std::int64_t i = 0; i < idx.numel(); ++i) o[i * classes + p[i]] = 1;
    } else {
      RUCCL_ASSERT(false, "index dtype ", idx.dtype(), " passed the frontend");
    }
  });
}

}  // namespace ruccl::cpu
