#pragma once
// The CPU backend: our AVX-512 sgemm and Eigen for GEMM, hand-written strided loops (vectorised by
// the compiler for contiguous runs) for elementwise ops and reductions. One file per op family:
// cpu_memory.cpp (with cpu_block_cache.cpp), cpu_elementwise.cpp, cpu_reduce.cpp, cpu_matmul.cpp
// (with cpu_sgemm.cpp), cpu_index.cpp, cpu_optimizer.cpp, cpu_streams.cpp (one synchronous
// stream per device).
#include <cstddef>

#include "tensor/backend/backend.h"

namespace ruccl::cpu {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool supports(Op op, DType dtype) const override;

  std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device) override;
  Stream current_stream(Device device) override;
  void set_current_stream(const Stream& stream) override;
  Stream create_stream(Device device) override;
  void synchronize(Device device) override;
  std::unique_ptr<Event> record_event(const Stream& stream) override;
  void copy_bytes(const Storage& src, std::size_t src_offset, Storage& dst, std::size_t dst_offset,
                  std::size_t nbytes) override;
  void copy_from_host(const void* host, Storage& dst, std::size_t offset,
                      std::size_t nbytes) override;
  void copy_to_host(const Storage& src, std::size_t offset, void* host,
                    std::size_t nbytes) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void fill(const Tensor& dst, Scalar value) override;

  void unary(Op op, const Tensor& x, const Tensor& out) override;
  void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void binary_scalar(Op op, const Tensor& a, Scalar b, ScalarSide side, const Tensor& out) override;
  void scalar_in_place(Op op, const Tensor& t, Scalar s) override;
  void unary_params(Op op, const Tensor& x, double p0, double p1, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void reduce(Op op, const Tensor& x, std::span<const std::int64_t> dims,
              const Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void softmax(Op op, const Tensor& x, std::int64_t dim, const Tensor& out) override;
  void index_select(const Tensor& x, std::int64_t dim, const Tensor& index,
                    const Tensor& out) override;
  void gather(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& out) override;
  void scatter_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                   const Tensor& src) override;
  void index_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                 const Tensor& src) override;
  void one_hot(const Tensor& indices, const Tensor& out) override;
  void cumsum(const Tensor& x, std::int64_t dim, bool reverse, const Tensor& out) override;
  void sort(const Tensor& x, std::int64_t dim, bool descending, const Tensor& values,
            const Tensor& indices) override;
  void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                  const SgdStep& step) override;
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, const AdamStep& step) override;
  void im2col(const Tensor& x, const Window2d& window, Scalar pad_value,
              const Tensor& cols) override;
  void col2im(const Tensor& cols, const Window2d& window, const Tensor& x) override;
  void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) override;
  void batch_norm_elemt(const Tensor& x, const Tensor& scale, const Tensor& shift,
                        const Tensor& out) override;
  void batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                  const Tensor& sum_dy, const Tensor& sum_dy_xmu) override;
  void batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                 const Tensor& mean_dy, const Tensor& proj, const Tensor& scale,
                                 const Tensor& dx) override;
};

/// Number of threads CPU kernels (GEMM included) may use; defaults to the hardware's cores.
void set_num_threads(int n);
int num_threads();

/// Bytes of idle CPU blocks the allocator keeps for reuse (blocks of 256 KiB and more return to a
/// cache when their last tensor dies; at most 512 MiB stay idle).
std::size_t cached_bytes();
/// Frees every idle cached CPU block (like torch.cuda.empty_cache for host memory).
void empty_cache();

}  // namespace ruccl::cpu
