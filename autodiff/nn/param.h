#pragma once
// Param: a trainable value of a model. A Param is a handle: copies are aliases of one parameter
// (one ParamId, one value, one gradient). Using the same Param in two places ties them: the
// gradient is the sum of both uses and the parameter is listed once.
#include <cstdint>
#include <memory>

#include "autodiff/var.h"
#include "tensor/core/tensor.h"

namespace ruccl::nn {

/// A parameter's stable identity (keys of gradients, optimizer state and checkpoints).
using ParamId = std::uint64_t;

/// A fresh id from a process-wide counter. Counter ids start at 2^32 so they never collide with
/// small explicit ids (Param(1, ...)). They depend on creation order: for ids that agree across
/// ranks and runs, build the model once and clone() it, or use Module::assign_param_ids.
ParamId next_param_id();

/// A model parameter: a ParamId, a leaf Var (its value and gradient) and `trainable` (a frozen
/// parameter, trainable() false, gets no gradient). See the file comment for aliasing and ties.
///
///   Param w(Tensor::zeros({1, 2}));          // id from next_param_id(), trainable
///   w.set_value(Tensor::from_vector<float>({0.5f, -0.25f}, {1, 2}));
class Param {
 public:
  /// An undefined Param.
  Param() = default;
  /// A new parameter holding `value` (shared, not copied), with an id from next_param_id().
  explicit Param(Tensor value, bool trainable = true);
  /// A new parameter with an explicit id.
  Param(ParamId id, Tensor value, bool trainable = true);
  /// A new parameter around an existing leaf Var (shared, not copied): trainable follows its
  /// requires_grad. ValueError for an undefined Var, AutodiffError for a non-leaf.
  Param(ParamId id, autodiff::Var var);

  bool defined() const { return impl_ != nullptr; }
  ParamId id() const;
  /// Changes the id (seen by every alias).
  void set_id(ParamId id);
  /// The leaf Var to use in forward computations.
  const autodiff::Var& var() const;
  /// Implicit use as a Var: linear(x, weight, bias) with Params.
  operator const autodiff::Var&() const { return var(); }  // NOLINT
  const Tensor& value() const { return var().value(); }
  /// Replaces the value (stored as given, sharing its storage). ShapeError / DTypeError /
  /// DeviceError unless shape, dtype and device equal the current value's.
  void set_value(const Tensor& value);
  /// The accumulated gradient; undefined when none (frozen, or after zero_grad).
  const Tensor& grad() const { return var().grad(); }
  /// Replaces the gradient (shape and dtype must match; undefined clears it).
  void set_grad(const Tensor& grad);
  void zero_grad();
  bool trainable() const { return var().requires_grad(); }
  /// Freezes (false) or unfreezes the parameter; freezing also drops its gradient.
  void set_trainable(bool trainable);

  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  std::int64_t numel() const { return value().numel(); }

  /// Whether two handles are the same parameter (aliases, i.e. tied).
  bool same(const Param& other) const { return impl_ == other.impl_; }
  /// An independent parameter with the same id, trainable flag and a copy of the value; no
  /// gradient.
  Param deep_copy() const;
  /// Internal: identity for maps (the shared state's address).
  const void* key() const { return impl_.get(); }

 private:
  struct Impl {
    ParamId id;
    autodiff::Var var;
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace ruccl::nn
