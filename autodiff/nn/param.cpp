#include "autodiff/nn/param.h"

#include "autodiff/error.h"
#include "autodiff/node.h"
#include "collective/common/hash.h"
#include "tensor/core/error.h"

namespace ruccl::nn {

namespace {
// Process-wide, but touched only when a parameter's id is read before any module listed it
// (never on the training hot path). Stays far below 2^63, where path-derived ids live.
std::atomic<ParamId> id_counter{ParamId{1} << 32};

void check_explicit(ParamId id, const char* op) {
  RUCCL_CHECK(
      id != kNoParamId, ValueError, "Param::", op,
      ": expected a ParamId other than kNoParamId (2^64 - 1, which means 'no id yet'), got ", id);
}
}  // namespace

ParamId param_id_for_path(std::string_view path) {
  // FNV-1a over the bytes, then the splitmix64 finaliser, so paths that differ in one character
  // differ in about half of the bits. Bit 63 marks the id as derived from a path.
  std::uint64_t h = fnv1a64(path);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  const ParamId id = h | (ParamId{1} << 63);
  return id == kNoParamId ? id - 1 : id;
}

namespace {
/// The clone() running on this thread (null when none): see Param's copy constructor.
thread_local detail::ParamReseatScope* reseat_scope = nullptr;
}  // namespace

namespace detail {
ParamReseatScope::ParamReseatScope(const Copies& copies) : copies_(copies), outer_(reseat_scope) {
  for (const auto& [original, copy] : copies_) copy_keys_.insert(copy.key());
  reseat_scope = this;
}
ParamReseatScope::~ParamReseatScope() { reseat_scope = outer_; }
}  // namespace detail

Param::Param(const Param& other) : impl_(other.impl_) {
  if (reseat_scope == nullptr || impl_ == nullptr) return;
  const auto it = reseat_scope->copies_.find(impl_.get());
  if (it != reseat_scope->copies_.end()) {
    impl_ = it->second.impl_;  // a parameter of the tree: the replica's own copy
    return;
  }
  RUCCL_CHECK(reseat_scope->copy_keys_.count(impl_.get()) != 0, ValueError,
              "Module::clone: ", reseat_scope->module_,
              " holds a Param member that is not registered in the model being cloned, so the "
              "replica would share it with the original; register it (register_parameter) or keep "
              "it out of the module's members");
}

ParamId next_param_id() { return id_counter.fetch_add(1, std::memory_order_relaxed); }

Param::Param(Tensor value, bool trainable)
    : impl_(std::make_shared<Impl>(kNoParamId, autodiff::Var(std::move(value), trainable))) {}

Param::Param(ParamId id, Tensor value, bool trainable) {
  check_explicit(id, "Param");
  impl_ = std::make_shared<Impl>(id, autodiff::Var(std::move(value), trainable));
}

Param::Param(ParamId id, autodiff::Var var) {
  check_explicit(id, "Param");
  RUCCL_CHECK(var.defined(), ValueError, "Param: expected a defined Var, got an undefined one");
  RUCCL_CHECK(var.is_leaf(), autodiff::AutodiffError,
              "Param: expected a leaf Var, got the result of '", var.grad_fn()->name(), "'");
  impl_ = std::make_shared<Impl>(id, std::move(var));
}

namespace {
template <typename T>
T& checked(const std::shared_ptr<T>& impl, const char* op) {
  RUCCL_CHECK(impl != nullptr, ValueError, "Param::", op,
              ": expected a defined Param, got an undefined one (default-constructed)");
  return *impl;
}
}  // namespace

ParamId Param::id() const {
  const ParamId id = id_or_none();
  return id != kNoParamId ? id : adopt_id(next_param_id());
}

bool Param::has_id() const { return id_or_none() != kNoParamId; }

ParamId Param::id_or_none() const {
  return checked(impl_, "id").id.load(std::memory_order_acquire);
}

ParamId Param::adopt_id(ParamId id) const {
  ParamId expected = kNoParamId;
  // Two threads listing modules that share this parameter may race: the first id wins and both
  // see it.
  if (checked(impl_, "id").id.compare_exchange_strong(expected, id, std::memory_order_acq_rel)) {
    return id;
  }
  return expected;
}

void Param::set_id(ParamId id) {
  check_explicit(id, "set_id");
  checked(impl_, "set_id").id.store(id, std::memory_order_release);
}

const autodiff::Var& Param::var() const { return checked(impl_, "var").var; }

namespace {
std::string id_text(ParamId id) {
  return id == kNoParamId ? std::string("(a parameter with no ParamId yet)")
                          : str("(ParamId ", id, ")");
}
}  // namespace

void Param::set_value(const Tensor& value) {
  autodiff::Var& v = checked(impl_, "set_value").var;
  RUCCL_CHECK(value.defined(), ValueError,
              "Param::set_value: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(value.shape() == v.shape(), ShapeError, "Param::set_value: expected shape ",
              v.shape(), " ", id_text(id_or_none()), ", got ", value.shape());
  RUCCL_CHECK(value.dtype() == v.dtype(), DTypeError, "Param::set_value: expected dtype ",
              v.dtype(), " ", id_text(id_or_none()), ", got ", value.dtype());
  v.set_value(value);
}

void Param::set_grad(const Tensor& grad) { checked(impl_, "set_grad").var.set_grad(grad); }
void Param::zero_grad() { checked(impl_, "zero_grad").var.zero_grad(); }

void Param::set_trainable(bool trainable) {
  autodiff::Var& v = checked(impl_, "set_trainable").var;
  v.set_requires_grad(trainable);
  if (!trainable) v.zero_grad();
}

void Param::convert(const Tensor& value, const Tensor& grad) {
  // The leaf's own storage: set_value would refuse the new dtype or device, and a new Var would
  // break the identity every alias (tie) and the optimizer hold.
  autodiff::VarImpl& impl = *checked(impl_, "convert").var.impl();
  impl.value = value;
  impl.grad = grad;
}

Param Param::deep_copy() const {
  const Impl& impl = checked(impl_, "deep_copy");
  Param copy;
  copy.impl_ = std::make_shared<Impl>(
      id_or_none(), autodiff::Var(impl.var.value().clone(), impl.var.requires_grad()));
  return copy;
}

}  // namespace ruccl::nn
