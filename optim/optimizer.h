#pragma once
// Optimizer: applies gradients to a model's parameters, keeping per-ParamId state.
//
//   Sgd sgd({.momentum = 0.5});
//   sgd.step(/*lr=*/0.125, model, grads);
//
// step() updates every trainable parameter of `model` that has a gradient in `grads`; frozen
// parameters are never touched (a gradient for one is ignored) and parameters without a gradient
// keep their value and state (torch's `p.grad is None`). The math runs under no tape, on the
// parameter's own device, by that device's Backend (Backend::sgd_update / adam_update through
// optim/update_kernels.h: the CPU loops of tensor/backend/cpu/cpu_optimizer.cpp, the fused kernels
// of cuda/kernels/optimizer.cu), in the parameter's compute type: F64 for F64 parameters, F32 for
// every other floating dtype. The gradient is brought to that device and type first. The state
// (momentum, Adam's moments) lives on the parameter's device in the compute type; when the
// parameter changes dtype or device (module.to) the next step() moves and converts it, values
// kept. A contiguous F32 or F64 parameter is updated in place (its storage, and every view of it,
// sees the new values); any other (F16, BF16, non-contiguous) is updated on a contiguous
// F32/F64 copy on the same device, which then replaces the parameter's value (Param::set_value: a
// new tensor of the same shape, dtype and device; views of the old value keep the old values).
// state() copies the buffers to host bytes; load_state() leaves them on the host until the next
// step() moves each to its parameter's device.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"
#include "optim/checkpoint/tensor_blob.h"
#include "optim/gradients_params.h"
#include "tensor/core/tensor.h"

namespace ruccl::optim {

/// One parameter's saved optimizer state.
struct ParamSlotState {
  std::int64_t steps = 0;
  std::vector<TensorBlob> buffers;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(steps, buffers);
  }
};

/// What an optimizer saves: its kind, hyper-parameters and per-ParamId state.
struct OptimizerState {
  std::string kind;
  std::vector<double> config;
  std::map<ParamId, ParamSlotState> slots;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(kind, config, slots);
  }
};

/// Base of Sgd, Adam and AdamW. See the file comment.
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  /// One update with learning rate `lr` of `model`'s trainable parameters from `grads`.
  /// ValueError for a gradient whose ParamId is not a parameter of `model` or a negative lr;
  /// ShapeError when a gradient's shape differs from its parameter's; DTypeError for a
  /// non-floating parameter or gradient.
  void step(double lr, nn::Module& model, const GradientsParams& grads);
  /// One update of elements [begin, begin + grad.numel()) of trainable parameter `param`'s
  /// flattened value from `grad` (1-D: those elements' gradient), the part of the parameter a
  /// ZeRO rank steps (DataParallel::step, docs/training.md "ZeRO"). The parameter's state then
  /// covers those elements only (buffers of grad.numel() elements); a full state (loaded from a
  /// record, or after DataParallel::gather_optimizer_state) is cut to them first. Every element is
  /// updated exactly as step() updates it (the updates are elementwise). ValueError for a range
  /// outside the parameter or a state of another size; DTypeError for a non-floating gradient.
  void step_range(double lr, nn::Param& param, std::int64_t begin, const Tensor& grad);

  /// "sgd", "adam", "adamw".
  virtual std::string kind() const = 0;
  /// The hyper-parameters, in a fixed order (compared on restore).
  virtual std::vector<double> config() const = 0;
  /// The name of each config() value, in the same order (named when a restore refuses them).
  virtual std::vector<std::string> config_names() const = 0;

  /// The state to checkpoint (buffers copied).
  OptimizerState state() const;
  /// Replaces the state with a saved one; CheckpointError when it was saved by another kind of
  /// optimizer, with other hyper-parameters (each one that differs named, with both values), or
  /// holds malformed buffers. TrainingRecord::restore
  /// also checks the slots against the model's parameters.
  void load_state(const OptimizerState& state);
  /// Number of steps taken for `id` (0 when it has no state).
  std::int64_t steps(ParamId id) const;
  /// Forgets all state.
  void reset() { slots_.clear(); }
  /// Converts every parameter's state to the compute type of parameters of `dtype` (F64 for
  /// F64, F32 for F32, F16 and BF16), keeping its values and step counts: call it with the
  /// model's conversion (module.to(DType::F64); optimizer.to(DType::F64)). step() converts a
  /// parameter's state by itself when the parameter's dtype has changed, so this only does it
  /// ahead of time (and frees the old buffers). Each buffer stays on the device it is on (step()
  /// moves it to its parameter's). DTypeError for a non-floating dtype.
  Optimizer& to(DType dtype);

 protected:
  /// One parameter's live state: steps taken and the optimizer's buffers (on the parameter's
  /// device, in its compute dtype).
  struct Slot {
    std::int64_t steps = 0;
    std::vector<Tensor> buffers;
  };
  /// How many buffers a slot of this optimizer holds.
  virtual std::size_t buffer_count() const = 0;
  /// Updates `param` (a contiguous F32 or F64 tensor on the parameter's device: the parameter
  /// itself, or step()'s copy of it) in place from `grad` (same device, dtype and size) through
  /// the device's Backend; `slot.buffers` are allocated there (zeros) and `slot.steps` counts
  /// earlier updates.
  virtual void update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) = 0;

 private:
  /// update() of `work` (contiguous, compute dtype, on `device`) with the slot of `id`, whose
  /// buffers get `shape` (allocated or converted as needed).
  void update_slot(ParamId id, const Tensor& work, const Tensor& grad, const Shape& shape,
                   double lr);
  std::map<ParamId, Slot> slots_;
};

}  // namespace ruccl::optim
