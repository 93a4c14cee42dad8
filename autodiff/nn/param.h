#pragma once
// Param: a trainable value of a model. A Param is a handle: copies are aliases of one parameter
// (one ParamId, one value, one gradient). Using the same Param in two places ties them: the
// gradient is the sum of both uses and the parameter is listed once.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/var.h"
#include "tensor/core/tensor.h"

namespace ruccl::nn {

namespace detail {
struct ParamVarAccess;  // nn::fully_shard swaps a Param's Var (fully_shard.cpp)
}  // namespace detail

/// A parameter's stable identity (keys of gradients, optimizer state and checkpoints).
///
/// Where ids come from (docs/training.md, "ParamIds"):
/// - A Param made without an id has none yet. The first time a module lists it (named_parameters,
///   parameters, aliases, param(path): what GradientsParams::from_module, the optimizers,
///   DataParallel and TrainingRecord use), it takes param_id_for_path(its dotted path in that
///   module); a tied parameter takes its first path's. So replicas built by the same code agree
///   on every rank, thread, process and run, whatever order or thread they were built in.
/// - Explicit ids (Param(1, value), set_id, Module::assign_param_ids) are kept as given.
/// - A Param whose id() is read before any module listed it (one used outside any module) takes
///   next_param_id(), which depends on creation order: such ids may differ between ranks.
/// Once a Param has an id, only set_id (or assign_param_ids) changes it.
using ParamId = std::uint64_t;

/// Never a parameter's id: the value "no id yet" (explicit ids must differ from it).
inline constexpr ParamId kNoParamId = ~ParamId{0};

/// The id derived from a dotted parameter path ("0.weight"): a 64-bit hash of the path (FNV-1a,
/// then a 64-bit finaliser) with bit 63 set, so it never equals a small explicit id or a
/// next_param_id() (which stay below 2^63). The same on every platform and run.
ParamId param_id_for_path(std::string_view path);

/// Whether `id` has bit 63 set, the mark of ids derived from paths.
constexpr bool is_path_param_id(ParamId id) { return (id >> 63) != 0 && id != kNoParamId; }

/// A fresh id from a process-wide counter, from 2^32 up: the id of a Param read before any
/// module listed it. Counter ids depend on creation order, so they may differ between ranks.
ParamId next_param_id();

/// A model parameter: a ParamId, a leaf Var (its value and gradient) and `trainable` (a frozen
/// parameter, trainable() false, gets no gradient). See the file comment for aliasing and ties.
///
///   Param w(Tensor::zeros({1, 2}));          // no id yet: its path gives one (see ParamId)
///   w.set_value(Tensor::from_vector<float>({0.5f, -0.25f}, {1, 2}));
class Param {
 public:
  /// An undefined Param.
  Param() = default;
  /// An alias of `other` (the same parameter). While Module::clone() copies a module's class,
  /// a copy of a parameter of the tree being cloned is the clone's copy of it instead (so a Param
  /// member of a user module points at the replica's parameter), and a copy of a parameter
  /// registered nowhere in that tree is a ValueError naming the module (see Module::clone).
  Param(const Param& other);
  Param(Param&&) noexcept = default;
  Param& operator=(const Param&) = default;
  Param& operator=(Param&&) noexcept = default;
  ~Param() = default;
  /// A new parameter holding `value` (shared, not copied), with no id yet (see ParamId).
  explicit Param(Tensor value, bool trainable = true);
  /// A new parameter with an explicit id. ValueError for kNoParamId.
  Param(ParamId id, Tensor value, bool trainable = true);
  /// A new parameter around an existing leaf Var (shared, not copied): trainable follows its
  /// requires_grad. ValueError for an undefined Var or kNoParamId, AutodiffError for a non-leaf.
  Param(ParamId id, autodiff::Var var);

  bool defined() const { return impl_ != nullptr; }
  /// The id. A Param with none yet takes next_param_id() now (see ParamId): let its module list
  /// it first (model.parameters()) for an id that agrees across ranks.
  ParamId id() const;
  /// Whether the Param has an id (explicit, derived from a path, or taken by id()).
  bool has_id() const;
  /// Changes the id (seen by every alias). ValueError for kNoParamId.
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
  /// An independent parameter with the same id (or none yet, like this one), trainable flag and a
  /// copy of the value; no gradient.
  Param deep_copy() const;
  /// Internal: identity for maps (the shared state's address).
  const void* key() const { return impl_.get(); }

 private:
  friend class Module;
  friend struct detail::ParamVarAccess;
  struct Impl {
    Impl(ParamId id_in, autodiff::Var var_in) : id(id_in), var(std::move(var_in)) {}
    std::atomic<ParamId> id;  // kNoParamId until set or derived; set once by a race's winner
    autodiff::Var var;
  };
  /// Replaces value and gradient with converted ones (another dtype or device) keeping this
  /// Param's identity: Module::to.
  void convert(const Tensor& value, const Tensor& grad);
  /// The id, or kNoParamId when there is none yet (never takes one).
  ParamId id_or_none() const;
  /// Gives the Param `id` unless it already has one; returns the id it has now.
  ParamId adopt_id(ParamId id) const;
  std::shared_ptr<Impl> impl_;
};

namespace detail {
/// While alive, Param copies made on this thread are re-seated (Module::clone; see Param's copy
/// constructor): each parameter in `copies` becomes its copy.
class ParamReseatScope {
 public:
  using Copies = std::unordered_map<const void*, Param>;
  explicit ParamReseatScope(const Copies& copies);
  ~ParamReseatScope();
  ParamReseatScope(const ParamReseatScope&) = delete;
  ParamReseatScope& operator=(const ParamReseatScope&) = delete;
  /// The module whose class is being copied now (named in the error for a foreign Param member).
  void set_module(std::string describe) { module_ = std::move(describe); }

 private:
  friend class ruccl::nn::Param;
  const Copies& copies_;
  std::unordered_set<const void*> copy_keys_;
  std::string module_;
  ParamReseatScope* outer_;
};
}  // namespace detail

}  // namespace ruccl::nn
