#include "autodiff/var.h"

#include "autodiff/engine.h"
#include "autodiff/error.h"
#include "autodiff/node.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff {

namespace {
const Tensor kUndefined;

VarImpl& checked(const std::shared_ptr<VarImpl>& impl, const char* op) {
  RUCCL_CHECK(impl != nullptr, AutodiffError, "Var::", op,
              ": expected a defined Var, got an undefined one (default-constructed)");
  return *impl;
}
}  // namespace

Var::Var(Tensor value) : impl_(std::make_shared<VarImpl>()) {
  RUCCL_CHECK(value.defined(), ValueError, "Var: expected a defined tensor, got an undefined one");
  impl_->value = std::move(value);
}

Var::Var(Tensor value, bool requires_grad) : impl_(std::make_shared<VarImpl>()) {
  RUCCL_CHECK(value.defined(), ValueError, "Var: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(!requires_grad || is_floating(value.dtype()), DTypeError,
              "Var: only floating values can require grad; expected F16/BF16/F32/F64, got ",
              value.dtype());
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
}

const Tensor& Var::value() const { return checked(impl_, "value").value; }

const Tensor& Var::grad() const { return impl_ ? impl_->grad : kUndefined; }

bool Var::requires_grad() const { return impl_ && impl_->requires_grad; }

bool Var::is_leaf() const { return !impl_ || impl_->grad_fn == nullptr; }

const std::shared_ptr<Node>& Var::grad_fn() const {
  static const std::shared_ptr<Node> kNone;
  return impl_ ? impl_->grad_fn : kNone;
}

void Var::backward(const BackwardOptions& options) const { autodiff::backward(*this, options); }

void Var::backward(const Tensor& seed, bool retain_graph) const {
  autodiff::backward(*this,
                     BackwardOptions{.seed = seed, .retain_graph = retain_graph, .grad_ready = {}});
}

Var Var::detach() const { return Var(checked(impl_, "detach").value, false); }

void Var::zero_grad(bool set_to_none) {
  VarImpl& impl = checked(impl_, "zero_grad");
  if (set_to_none || !impl.grad.defined()) {
    impl.grad = Tensor();
  } else {
    impl.grad.fill_(0);  // in place, as torch's grad.zero_(): same storage, same layout
  }
}

void Var::set_grad(const Tensor& grad) {
  VarImpl& impl = checked(impl_, "set_grad");
  RUCCL_CHECK(impl.grad_fn == nullptr, AutodiffError,
              "Var::set_grad: expected a leaf, got the result of '", impl.grad_fn->name(), "'");
  if (grad.defined()) {
    RUCCL_CHECK(grad.shape() == impl.value.shape(), ShapeError,
                "Var::set_grad: expected a gradient of shape ", impl.value.shape(), ", got ",
                grad.shape());
    RUCCL_CHECK(grad.dtype() == impl.value.dtype(), DTypeError,
                "Var::set_grad: expected a gradient of dtype ", impl.value.dtype(), ", got ",
                grad.dtype());
  }
  impl.grad = grad;
}

void Var::set_requires_grad(bool requires_grad) {
  VarImpl& impl = checked(impl_, "set_requires_grad");
  RUCCL_CHECK(impl.grad_fn == nullptr, AutodiffError,
              "Var::set_requires_grad: expected a leaf, got the result of '", impl.grad_fn->name(),
              "' (use detach() to cut it from the tape)");
  RUCCL_CHECK(!requires_grad || is_floating(impl.value.dtype()), DTypeError,
              "Var::set_requires_grad: only floating values can require grad; expected "
              "F16/BF16/F32/F64, got ",
              impl.value.dtype());
  impl.requires_grad = requires_grad;
}

void Var::set_value(const Tensor& value) {
  VarImpl& impl = checked(impl_, "set_value");
  RUCCL_CHECK(impl.grad_fn == nullptr, AutodiffError,
              "Var::set_value: expected a leaf, got the result of '", impl.grad_fn->name(), "'");
  RUCCL_CHECK(value.defined(), ValueError,
              "Var::set_value: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(value.shape() == impl.value.shape(), ShapeError, "Var::set_value: expected shape ",
              impl.value.shape(), ", got ", value.shape());
  RUCCL_CHECK(value.dtype() == impl.value.dtype(), DTypeError, "Var::set_value: expected dtype ",
              impl.value.dtype(), ", got ", value.dtype());
  RUCCL_CHECK(value.device() == impl.value.device(), DeviceError,
              "Var::set_value: expected a tensor on the Var's device, got another device");
  impl.value = value;
}

}  // namespace ruccl::autodiff
