#include "optim/optimizer.h"

#include <set>

#include "autodiff/grad_mode.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/hyper_parameters.h"
#include "optim/rank_agreement.h"

namespace ruccl::optim {
namespace {

DType compute_dtype(DType dtype) { return dtype == DType::F64 ? DType::F64 : DType::F32; }

/// `t` as a contiguous tensor of `dtype` on `device`: `t` itself when it already is one.
Tensor operand(const Tensor& t, DType dtype, Device device) {
  Tensor out = t.device() == device ? t : t.to(device);
  if (out.dtype() != dtype) out = out.to(dtype);
  return out.contiguous();
}

}  // namespace

void Optimizer::step(double lr, nn::Module& model, const GradientsParams& grads) {
  RUCCL_CHECK(lr >= 0.0, ValueError, kind(), "::step: expected lr >= 0, got ", lr);
  autodiff::NoGradGuard no_grad;
  const auto params = model.named_parameters();
  std::set<ParamId> known;
  for (const auto& [path, p] : params) known.insert(p.id());
  for (const auto& [id, g] : grads.entries()) {
    const std::string path = grads.path(id);
    RUCCL_CHECK(known.count(id) != 0, ValueError, kind(),
                "::step: expected gradients of the model's parameters, got one for ParamId ", id,
                path.empty() ? std::string() : str(" ('", path, "')"),
                ", which the model does not have: the gradients come from another model, or from "
                "a replica whose ParamIds differ. ",
                kParamIdAdvice);
  }
  for (const auto& [path, p] : params) {
    if (!p.trainable()) continue;
    const auto grad = grads.get(p.id());
    if (!grad) continue;
    RUCCL_CHECK(is_floating(p.dtype()), DTypeError, kind(),
                "::step: expected a floating parameter, got ", p.dtype(), " for '", path,
                "' (ParamId ", p.id(), ")");
    RUCCL_CHECK(is_floating(grad->dtype()), DTypeError, kind(),
                "::step: expected a floating gradient, got ", grad->dtype(), " for '", path,
                "' (ParamId ", p.id(), ")");
    RUCCL_CHECK(grad->shape() == p.shape(), ShapeError, kind(),
                "::step: expected a gradient of shape ", p.shape(), " for '", path, "' (ParamId ",
                p.id(), "), got ", grad->shape());
    // The update runs on the parameter's device, by its backend, with the state kept there.
    const DType dtype = compute_dtype(p.dtype());
    const Tensor& value = p.value();
    const Device device = value.device();
    const bool in_place = value.dtype() == dtype && value.is_contiguous();
    const Tensor work = in_place ? value : operand(value, dtype, device);
    const Tensor g = operand(*grad, dtype, device);

    update_slot(p.id(), work, g, value.shape(), lr);
    if (!in_place) {
      nn::Param target = p;
      target.set_value(work.to(p.dtype()));
    }
  }
}

void Optimizer::update_slot(ParamId id, const Tensor& work, const Tensor& grad, const Shape& shape,
                            double lr) {
  const DType dtype = work.dtype();
  const Device device = work.device();
  Slot& slot = slots_[id];
  if (slot.buffers.size() != buffer_count()) {
    slot.buffers.clear();
    for (std::size_t i = 0; i < buffer_count(); ++i) {
      slot.buffers.push_back(Tensor::zeros(shape, dtype, device));
    }
  } else if (!slot.buffers.empty() &&
             (slot.buffers[0].dtype() != dtype || slot.buffers[0].device() != device)) {
    // The parameter changed dtype or device (module.to, a loaded state): its state follows,
    // values kept.
    for (Tensor& b : slot.buffers) b = operand(b, dtype, device);
  }
  update(work, grad, slot, lr);
  ++slot.steps;
}

void Optimizer::step_range(double lr, nn::Param& param, std::int64_t begin, const Tensor& grad) {
  RUCCL_CHECK(lr >= 0.0, ValueError, kind(), "::step_range: expected lr >= 0, got ", lr);
  RUCCL_CHECK(is_floating(param.dtype()) && is_floating(grad.dtype()), DTypeError, kind(),
              "::step_range: expected a floating parameter and gradient, got ", param.dtype(),
              " and ", grad.dtype(), " for ParamId ", param.id());
  const std::int64_t n = grad.numel();
  RUCCL_CHECK(grad.dim() == 1 && begin >= 0 && begin + n <= param.numel(), ValueError, kind(),
              "::step_range: expected a 1-D gradient of elements [begin, begin + n) within the ",
              param.numel(), " elements of ParamId ", param.id(), ", got begin ", begin,
              " and shape ", grad.shape());
  autodiff::NoGradGuard no_grad;
  const DType dtype = compute_dtype(param.dtype());
  const Tensor& value = param.value();
  const Device device = value.device();
  const bool in_place = value.dtype() == dtype && value.is_contiguous();
  // The whole parameter (itself, or a contiguous copy in the compute dtype) and the range of it.
  const Tensor whole = in_place ? value : operand(value, dtype, device);
  const Tensor work = whole.reshape(Shape{whole.numel()}).narrow(0, begin, n);
  const Tensor g = operand(grad, dtype, device);
  const auto it = slots_.find(param.id());
  if (it != slots_.end() && !it->second.buffers.empty() && it->second.buffers[0].numel() != n) {
    // A full state (a record, gather_optimizer_state) is cut to this range; anything else is
    // the state of another shard.
    RUCCL_CHECK(it->second.buffers[0].numel() == param.numel(), ValueError, kind(),
                "::step_range: ParamId ", param.id(), ": expected optimizer state of ", n,
                " elements (this range) or ", param.numel(), " (the whole parameter), got ",
                it->second.buffers[0].numel(), " (a state saved for another shard or world size)");
    for (Tensor& b : it->second.buffers) {
      b = b.reshape(Shape{b.numel()}).narrow(0, begin, n).clone();
    }
  }
  update_slot(param.id(), work, g, Shape{n}, lr);
  if (!in_place) param.set_value(whole.to(param.dtype()));
}

OptimizerState Optimizer::state() const {
  OptimizerState out{kind(), config(), {}};
  for (const auto& [id, slot] : slots_) {
    ParamSlotState s;
    s.steps = slot.steps;
    for (const Tensor& b : slot.buffers) s.buffers.push_back(TensorBlob::from_tensor(b));
    out.slots.emplace(id, std::move(s));
  }
  return out;
}

void Optimizer::load_state(const OptimizerState& state) {
  RUCCL_CHECK(state.kind == kind(), CheckpointError, kind(), "::load_state: expected a '", kind(),
              "' optimizer state, got '", state.kind, "'");
  RUCCL_CHECK(state.config == config(), CheckpointError, kind(),
              "::load_state: the state was saved with other hyper-parameters: ",
              hyper_parameter_differences(config_names(), state.config, config()));
  std::map<ParamId, Slot> slots;
  for (const auto& [id, s] : state.slots) {
    RUCCL_CHECK(s.steps >= 0, CheckpointError, kind(), "::load_state: ParamId ", id,
                ": expected a step count >= 0, got ", s.steps);
    RUCCL_CHECK(s.buffers.size() == buffer_count(), CheckpointError, kind(),
                "::load_state: ParamId ", id, ": expected ", buffer_count(), " buffers, got ",
                s.buffers.size());
    Slot slot;
    slot.steps = s.steps;
    for (const TensorBlob& b : s.buffers) {
      Tensor t = b.to_tensor();
      RUCCL_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::F64, CheckpointError, kind(),
                  "::load_state: ParamId ", id, ": expected F32 or F64 buffers, got ", t.dtype());
      RUCCL_CHECK(slot.buffers.empty() || (t.shape() == slot.buffers[0].shape() &&
                                           t.dtype() == slot.buffers[0].dtype()),
                  CheckpointError, kind(), "::load_state: ParamId ", id,
                  ": buffers of different shapes or dtypes");
      slot.buffers.push_back(std::move(t));
    }
    slots.emplace(id, std::move(slot));
  }
  slots_ = std::move(slots);
}

Optimizer& Optimizer::to(DType dtype) {
  RUCCL_CHECK(is_floating(dtype), DTypeError, kind(), "::to: expected a floating dtype, got ",
              dtype);
  const DType target = compute_dtype(dtype);
  for (auto& [id, slot] : slots_) {
    for (Tensor& b : slot.buffers) {
      if (b.dtype() != target) b = b.to(target).contiguous();
    }
  }
  return *this;
}

std::int64_t Optimizer::steps(ParamId id) const {
  const auto it = slots_.find(id);
  return it == slots_.end() ? 0 : it->second.steps;
}

}  // namespace ruccl::optim
