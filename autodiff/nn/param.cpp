#include "autodiff/nn/param.h"

#include <atomic>

#include "autodiff/error.h"
#include "autodiff/node.h"
#include "tensor/core/error.h"

namespace ruccl::nn {

namespace {
// Process-wide, but touched only when a parameter is made (never on the training hot path).
std::atomic<ParamId> id_counter{ParamId{1} << 32};
}  // namespace

ParamId next_param_id() { return id_counter.fetch_add(1, std::memory_order_relaxed); }

Param::Param(Tensor value, bool trainable) : Param(next_param_id(), std::move(value), trainable) {}

Param::Param(ParamId id, Tensor value, bool trainable)
    : impl_(std::make_shared<Impl>(Impl{id, autodiff::Var(std::move(value), trainable)})) {}

Param::Param(ParamId id, autodiff::Var var) {
  RUCCL_CHECK(var.defined(), ValueError, "Param: expected a defined Var, got an undefined one");
  RUCCL_CHECK(var.is_leaf(), autodiff::AutodiffError,
              "Param: expected a leaf Var, got the result of '", var.grad_fn()->name(), "'");
  impl_ = std::make_shared<Impl>(Impl{id, std::move(var)});
}

namespace {
template <typename T>
T& checked(const std::shared_ptr<T>& impl, const char* op) {
  RUCCL_CHECK(impl != nullptr, ValueError, "Param::", op,
              ": expected a defined Param, got an undefined one (default-constructed)");
  return *impl;
}
}  // namespace

ParamId Param::id() const { return checked(impl_, "id").id; }
void Param::set_id(ParamId id) { checked(impl_, "set_id").id = id; }
const autodiff::Var& Param::var() const { return checked(impl_, "var").var; }

void Param::set_value(const Tensor& value) {
  autodiff::Var& v = checked(impl_, "set_value").var;
  RUCCL_CHECK(value.defined(), ValueError,
              "Param::set_value: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(value.shape() == v.shape(), ShapeError, "Param::set_value: expected shape ",
              v.shape(), " (parameter ", impl_->id, "), got ", value.shape());
  RUCCL_CHECK(value.dtype() == v.dtype(), DTypeError, "Param::set_value: expected dtype ",
              v.dtype(), " (parameter ", impl_->id, "), got ", value.dtype());
  v.set_value(value);
}

void Param::set_grad(const Tensor& grad) { checked(impl_, "set_grad").var.set_grad(grad); }
void Param::zero_grad() { checked(impl_, "zero_grad").var.zero_grad(); }

void Param::set_trainable(bool trainable) {
  autodiff::Var& v = checked(impl_, "set_trainable").var;
  v.set_requires_grad(trainable);
  if (!trainable) v.zero_grad();
}

Param Param::deep_copy() const {
  const Impl& impl = checked(impl_, "deep_copy");
  return Param(impl.id, impl.var.value().clone(), impl.var.requires_grad());
}

}  // namespace ruccl::nn
