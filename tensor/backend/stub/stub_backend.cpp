// StubBackend: each method names itself in a NotImplementedError.
#include "tensor/backend/stub/stub_backend.h"

#include "tensor/core/error.h"

namespace ruccl {

void StubBackend::fail(std::string_view op) const {
  throw NotImplementedError(str("not implemented: ", name_, "::", op));
}

bool StubBackend::supports(Op, DType) const { return false; }

std::shared_ptr<Storage> StubBackend::allocate(std::size_t, Device) { fail("allocate"); }
Stream StubBackend::current_stream(Device) { fail("current_stream"); }
void StubBackend::set_current_stream(const Stream&) { fail("set_current_stream"); }
Stream StubBackend::create_stream(Device) { fail("create_stream"); }
void StubBackend::synchronize(Device) { fail("synchronize"); }
std::unique_ptr<Event> StubBackend::record_event(const Stream&) { fail("record_event"); }
void StubBackend::copy_bytes(const Storage&, std::size_t, Storage&, std::size_t, std::size_t) {
  fail("copy_bytes");
}
void StubBackend::copy_from_host(const void*, Storage&, std::size_t, std::size_t) {
  fail("copy_from_host");
}
void StubBackend::copy_to_host(const Storage&, std::size_t, void*, std::size_t) {
  fail("copy_to_host");
}
void StubBackend::copy(const Tensor&, const Tensor&) { fail(op_name(Op::Copy)); }
void StubBackend::fill(const Tensor&, Scalar) { fail(op_name(Op::Fill)); }
void StubBackend::unary(Op op, const Tensor&, const Tensor&) { fail(op_name(op)); }
void StubBackend::binary(Op op, const Tensor&, const Tensor&, const Tensor&) { fail(op_name(op)); }
void StubBackend::binary_scalar(Op op, const Tensor&, Scalar, ScalarSide, const Tensor&) {
  fail(op_name(op));
}
void StubBackend::scalar_in_place(Op op, const Tensor&, Scalar) { fail(op_name(op)); }
void StubBackend::where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  fail(op_name(Op::Where));
}
void StubBackend::reduce(Op op, const Tensor&, std::span<const std::int64_t>, const Tensor&) {
  fail(op_name(op));
}
void StubBackend::matmul(const Tensor&, const Tensor&, const Tensor&) { fail(op_name(Op::Matmul)); }
void StubBackend::softmax(Op op, const Tensor&, std::int64_t, const Tensor&) { fail(op_name(op)); }
void StubBackend::index_select(const Tensor&, std::int64_t, const Tensor&, const Tensor&) {
  fail(op_name(Op::IndexSelect));
}
void StubBackend::gather(const Tensor&, std::int64_t, const Tensor&, const Tensor&) {
  fail(op_name(Op::Gather));
}
void StubBackend::scatter_add(const Tensor&, std::int64_t, const Tensor&, const Tensor&) {
  fail(op_name(Op::ScatterAdd));
}
void StubBackend::index_add(const Tensor&, std::int64_t, const Tensor&, const Tensor&) {
  fail(op_name(Op::IndexAdd));
}
void StubBackend::one_hot(const Tensor&, const Tensor&) { fail(op_name(Op::OneHot)); }
void StubBackend::unary_params(Op op, const Tensor&, double, double, const Tensor&) {
  fail(op_name(op));
}
void StubBackend::cumsum(const Tensor&, std::int64_t, bool, const Tensor&) {
  fail(op_name(Op::Cumsum));
}
void StubBackend::sort(const Tensor&, std::int64_t, bool, const Tensor&, const Tensor&) {
  fail(op_name(Op::Sort));
}
void StubBackend::sgd_update(const Tensor&, const Tensor&, const Tensor&, const SgdStep&) {
  fail(op_name(Op::SgdUpdate));
}
void StubBackend::adam_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const AdamStep&) {
  fail(op_name(Op::AdamUpdate));
}
void StubBackend::im2col(const Tensor&, const Window2d&, Scalar, const Tensor&) {
  fail(op_name(Op::Im2col));
}
void StubBackend::col2im(const Tensor&, const Window2d&, const Tensor&) {
  fail(op_name(Op::Col2im));
}
void StubBackend::batch_norm_stats(const Tensor&, const Tensor&, const Tensor&) {
  fail(op_name(Op::BatchNorm));
}
void StubBackend::batch_norm_elemt(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  fail(op_name(Op::BatchNorm));
}
void StubBackend::batch_norm_backward_reduce(const Tensor&, const Tensor&, const Tensor&,
                                             const Tensor&, const Tensor&) {
  fail(op_name(Op::BatchNorm));
}
void StubBackend::batch_norm_backward_elemt(const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&) {
  fail(op_name(Op::BatchNorm));
}

}  // namespace ruccl
