// CpuBackend's ops along one dim: cumsum (prefix sums) and sort (the first k of each row in
// order, with positions). Both walk rows along `dim`: the other dims are iterated by
// parallel_for_each_run over the tensors narrowed to one element along `dim`, and each run's
// elements start a row that is read and written through the byte stride of `dim`.
#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_elementwise_kernels.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/op_dtypes.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

void check_supported(const CpuBackend& backend, Op op, DType dtype) {
  RUCCL_CHECK(backend.supports(op, dtype), NotImplementedError,
              "not implemented: cpu::", op_name(op), " for dtype ", dtype);
}

std::int64_t byte_stride(const Tensor& t, std::int64_t dim) {
  return t.strides()[dim] * static_cast<std::int64_t>(t.element_size());
}

/// Accumulator of a prefix sum: double for the floating dtypes (PyTorch's CPU acc_type for
/// float is double, so F32 sums agree with it), int64 (wrapping) for the integers.
template <typename T>
using Accumulate = std::conditional_t<kIsInteger<T>, std::int64_t, double>;

/// NaN-aware order of values: NaN above every number (torch.sort), equal values by position.
template <typename C>
bool value_less(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
}

}  // namespace

void CpuBackend::cumsum(const Tensor& x, std::int64_t dim, bool reverse, const Tensor& out) {
  check_supported(*this, Op::Cumsum, x.dtype());
  RUCCL_ASSERT(x.shape() == out.shape() && x.dtype() == out.dtype(), "cpu::cumsum");
  const std::int64_t n = x.shape()[dim];
  if (x.numel() == 0) return;
  const Tensor x0 = x.narrow(dim, 0, 1);
  const Tensor o0 = out.narrow(dim, 0, 1);
  const std::int64_t sx = byte_stride(x, dim);
  const std::int64_t so = byte_stride(out, dim);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      parallel_for_each_run<2>(
          o0.shape(), {&o0, &x0},
          [=](const StridedRun<2>& r) {
            for (std::int64_t i = 0; i < r.n; ++i) {
              const char* xp = r.ptr[1] + i * r.stride[1];
              char* op = r.ptr[0] + i * r.stride[0];
              Accumulate<T> acc{};
              for (std::int64_t j = 0; j < n; ++j) {
                const std::int64_t k = reverse ? n - 1 - j : j;
                const auto v = static_cast<Accumulate<T>>(load(load_at<T>(xp + k * sx)));
                acc = wrap_add(acc, v);
                store_at<T>(op + k * so, store<T>(acc));
              }
            }
          },
          x.numel());
    }
  });
}

void CpuBackend::sort(const Tensor& x, std::int64_t dim, bool descending, const Tensor& values,
                      const Tensor& indices) {
  check_supported(*this, Op::Sort, x.dtype());
  RUCCL_ASSERT(values.dtype() == x.dtype() && indices.dtype() == DType::I64 &&
                   values.shape() == indices.shape(),
               "cpu::sort");
  const std::int64_t n = x.shape()[dim];
  const std::int64_t k = values.shape()[dim];
  if (values.numel() == 0) return;
  const Tensor x0 = x.narrow(dim, 0, 1);
  const Tensor v0 = values.narrow(dim, 0, 1);
  const Tensor i0 = indices.narrow(dim, 0, 1);
  const std::int64_t sx = byte_stride(x, dim);
  const std::int64_t sv = byte_stride(values, dim);
  const std::int64_t si = byte_stride(indices, dim);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    if constexpr (!std::is_same_v<T, bool>) {
      parallel_for_each_run<3>(
          v0.shape(), {&v0, &i0, &x0},
          [=](const StridedRun<3>& r) {
            std::vector<std::pair<C, std::int64_t>> row(static_cast<std::size_t>(n));
            // A strict total order (value, then position): the result is stable and the same
            // whether the whole row is sorted or only its first k are selected.
            const auto before = [descending](const auto& a, const auto& b) {
              if (descending ? value_less(b.first, a.first) : value_less(a.first, b.first)) {
                return true;
              }
              if (value_less(a.first, b.first) || value_less(b.first, a.first)) return false;
              return a.second < b.second;
            };
            for (std::int64_t i = 0; i < r.n; ++i) {
              const char* xp = r.ptr[2] + i * r.stride[2];
              for (std::int64_t j = 0; j < n; ++j) {
                row[static_cast<std::size_t>(j)] = {load(load_at<T>(xp + j * sx)), j};
              }
              if (k < n) {
                std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
              } else {
                std::sort(row.begin(), row.end(), before);
              }
              char* vp = r.ptr[0] + i * r.stride[0];
              char* ip = r.ptr[1] + i * r.stride[1];
              for (std::int64_t j = 0; j < k; ++j) {
                const auto& e = row[static_cast<std::size_t>(j)];
                store_at<T>(vp + j * sv, store<T>(e.first));
                store_at<std::int64_t>(ip + j * si, e.second);
              }
            }
          },
          x.numel());
    }
  });
}

}  // namespace ruccl::cpu
