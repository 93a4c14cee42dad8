#pragma once
// A Backend for tests that stands in for a device: registered for DeviceType::CUDA, it serves
// "cuda" tensors from host memory through the CPU backend's kernels and counts what crosses
// between host and device (copy_to_host / copy_from_host), so a test can check that work stays on
// its device. BackendRegistration installs a backend for a scope and restores the previous one.
#include <atomic>

#include "tensor/backend/backend.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/error.h"

namespace ruccl::testing {

class HostDeviceBackend final : public Backend {
 public:
  std::atomic<int> to_host{0};
  std::atomic<int> from_host{0};
  std::atomic<int> optimizer_updates{0};

  std::string_view name() const override { return "host-device"; }
  bool supports(Op op, DType dtype) const override { return cpu_.supports(op, dtype); }
  std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device) override {
    return cpu_.allocate(nbytes, device);
  }
  Stream current_stream(Device device) override { return Stream{device, 0}; }
  void set_current_stream(const Stream&) override {}
  Stream create_stream(Device device) override { return Stream{device, 0}; }
  void synchronize(Device) override {}
  std::unique_ptr<Event> record_event(const Stream&) override {
    return cpu_.record_event(Stream{Device::cpu(), 0});
  }
  void copy_bytes(const Storage& src, std::size_t src_offset, Storage& dst, std::size_t dst_offset,
                  std::size_t nbytes) override {
    cpu_.copy_bytes(src, src_offset, dst, dst_offset, nbytes);
  }
  void copy_from_host(const void* host, Storage& dst, std::size_t offset,
                      std::size_t nbytes) override {
    ++from_host;
    cpu_.copy_from_host(host, dst, offset, nbytes);
  }
  void copy_to_host(const Storage& src, std::size_t offset, void* host,
                    std::size_t nbytes) override {
    ++to_host;
    cpu_.copy_to_host(src, offset, host, nbytes);
  }
  void copy(const Tensor& src, const Tensor& dst) override { cpu_.copy(src, dst); }
  void fill(const Tensor& dst, Scalar value) override { cpu_.fill(dst, value); }
  void unary(Op op, const Tensor& x, const Tensor& out) override { cpu_.unary(op, x, out); }
  void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu_.binary(op, a, b, out);
  }
  void binary_scalar(Op op, const Tensor& a, Scalar b, ScalarSide side,
                     const Tensor& out) override {
    cpu_.binary_scalar(op, a, b, side, out);
  }
  void scalar_in_place(Op op, const Tensor& t, Scalar s) override {
    cpu_.scalar_in_place(op, t, s);
  }
  void where(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu_.where(c, a, b, out);
  }
  void reduce(Op op, const Tensor& x, std::span<const std::int64_t> dims,
              const Tensor& out) override {
    cpu_.reduce(op, x, dims, out);
  }
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu_.matmul(a, b, out);
  }
  void softmax(Op op, const Tensor& x, std::int64_t dim, const Tensor& out) override {
    cpu_.softmax(op, x, dim, out);
  }
  void index_select(const Tensor& x, std::int64_t dim, const Tensor& index,
                    const Tensor& out) override {
    cpu_.index_select(x, dim, index, out);
  }
  void gather(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& out) override {
    cpu_.gather(x, dim, index, out);
  }
  void scatter_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                   const Tensor& src) override {
    cpu_.scatter_add(out, dim, index, src);
  }
  void index_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                 const Tensor& src) override {
    cpu_.index_add(out, dim, index, src);
  }
  void one_hot(const Tensor& indices, const Tensor& out) override { cpu_.one_hot(indices, out); }
  void unary_params(Op op, const Tensor& x, double p0, double p1, const Tensor& out) override {
    cpu_.unary_params(op, x, p0, p1, out);
  }
  void cumsum(const Tensor& x, std::int64_t dim, bool reverse, const Tensor& out) override {
    cpu_.cumsum(x, dim, reverse, out);
  }
  void sort(const Tensor& x, std::int64_t dim, bool descending, const Tensor& values,
            const Tensor& indices) override {
    cpu_.sort(x, dim, descending, values, indices);
  }
  void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                  const SgdStep& step) override {
    ++optimizer_updates;
    cpu_.sgd_update(param, grad, momentum_buffer, step);
  }
  void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, const AdamStep& step) override {
    ++optimizer_updates;
    cpu_.adam_update(param, grad, exp_avg, exp_avg_sq, step);
  }
  void im2col(const Tensor& x, const Window2d& window, Scalar pad_value,
              const Tensor& cols) override {
    cpu_.im2col(x, window, pad_value, cols);
  }
  void col2im(const Tensor& cols, const Window2d& window, const Tensor& x) override {
    cpu_.col2im(cols, window, x);
  }
  void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) override {
    cpu_.batch_norm_stats(x, mean, var);
  }
  void batch_norm_elemt(const Tensor& x, const Tensor& scale, const Tensor& shift,
                        const Tensor& out) override {
    cpu_.batch_norm_elemt(x, scale, shift, out);
  }
  void batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                  const Tensor& sum_dy, const Tensor& sum_dy_xmu) override {
    cpu_.batch_norm_backward_reduce(dy, x, mean, sum_dy, sum_dy_xmu);
  }
  void batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                 const Tensor& mean_dy, const Tensor& proj, const Tensor& scale,
                                 const Tensor& dx) override {
    cpu_.batch_norm_backward_elemt(dy, x, mean, mean_dy, proj, scale, dx);
  }

 private:
  cpu::CpuBackend cpu_;
};

/// Installs `backend` for `type` for a scope; restores the previous one (even when a test fails).
class BackendRegistration {
 public:
  BackendRegistration(DeviceType type, Backend* backend) : type_(type) {
    if (has_backend(type)) previous_ = &backend_for(Device{type, 0});
    register_backend(type, backend);
  }
  ~BackendRegistration() { register_backend(type_, previous_); }
  BackendRegistration(const BackendRegistration&) = delete;
  BackendRegistration& operator=(const BackendRegistration&) = delete;

 private:
  DeviceType type_;
  Backend* previous_ = nullptr;
};

}  // namespace ruccl::testing
