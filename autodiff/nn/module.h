#pragma once
// Module: a model or a part of one, holding named parameters and named sub-modules.
//
// Visit order (named_parameters, parameters): a module's own parameters in registration order,
// then each sub-module's in registration order, recursively; paths are dotted ("0.weight",
// "fc1.bias"). A tied parameter (one Param registered at several paths) is listed once, at its
// first path; named_parameters(true) and aliases() also give the other paths.
//
// ParamIds: listing the parameters (named_parameters, parameters, aliases, param) gives every
// parameter that has no id yet param_id_for_path(its path in this module), a tied one its first
// path's; ids once set stay (param.h, ParamId). So replicas built by the same code have the same
// ids on every rank, in every process and run, with no extra call.
//
// Replicas: clone() deep-copies the tree (values copied, ParamIds and ties kept, no gradients,
// buffers copied), giving an independent replica per rank.
//
// Buffers (register_buffer): tensors that are module state but not trained, such as BatchNorm's
// running statistics or a fixed mask. They are not parameters (no ParamId, no gradient, not in
// parameters()), but to() moves and converts them, clone() copies them, a TrainingRecord saves
// and restores them and DataParallel::initialize broadcasts them from the root.
//
// Writing a module: derive from Cloneable<YourModule> and register parameters and sub-modules in
// the constructor. register_module returns a typed ModuleHandle (libtorch's ModuleHolder): keep
// it as a member and call the sub-module through it. clone() re-seats every handle of the copy
// on the copy's own sub-modules (see ModuleHandle), so a replica never computes with the
// original's parameters.
//
//   class Mlp : public nn::Cloneable<Mlp> {
//    public:
//     Mlp() : fc1_(register_module("fc1", nn::Linear(4, 8))),
//             fc2_(register_module("fc2", nn::Linear(8, 2))) {}
//     Var forward(const Var& x) override { return fc2_->forward(relu(fc1_->forward(x))); }
//    private:
//     nn::ModuleHandle<nn::Linear> fc1_, fc2_;
//   };
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autodiff/nn/param.h"
#include "autodiff/var.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

using autodiff::Var;

class Module;

namespace detail {
/// The untyped part of ModuleHandle: a shared_ptr to the module, and the copy hooks clone() uses
/// to re-seat handles (see ModuleHandle).
class HandleBase {
 public:
  bool is_empty() const { return module_ == nullptr; }
  explicit operator bool() const { return module_ != nullptr; }

 protected:
  HandleBase() = default;
  explicit HandleBase(std::shared_ptr<Module> module) : module_(std::move(module)) {}
  HandleBase(const HandleBase& other) : module_(other.module_) { enlist(); }
  HandleBase& operator=(const HandleBase& other) {
    module_ = other.module_;
    enlist();
    return *this;
  }
  ~HandleBase() { delist(); }
  [[noreturn]] static void throw_empty(const std::type_info& type);

  std::shared_ptr<Module> module_;

 private:
  friend class ruccl::nn::Module;
  /// During a clone(), records this handle (one copied with the module) to be re-seated.
  void enlist();
  void delist();
};

/// A readable name of a C++ type: demangled, namespaces dropped ("ruccl::nn::Linear" -> "Linear").
std::string type_name(const std::type_info& type);

/// The class that declares the forward of M taking exactly `const A&` (deduced from the overload
/// set M::forward; no type when M has none or several, or a template forward).
template <class A, class C, class R>
C* forward_owner(R (C::*)(const A&));
template <class M, class A>
using ForwardOwner = decltype(forward_owner<A>(&M::forward));

/// Whether calling M's forward with `Args` would run Module's default forward(const Var&), which
/// throws at run time: one argument that no forward of M's own takes exactly, and M declares no
/// forward(const Var&) (its own forward hides the default, or `using nn::Module::forward;` brings
/// it back). What module(x) refuses at compile time.
template <class M, class Arg>
constexpr bool reaches_default_forward() {
  using A = std::remove_cvref_t<Arg>;
  if constexpr (requires { typename ForwardOwner<M, A>; }) {
    return std::is_same_v<ForwardOwner<M, A>, Module*>;
  } else if constexpr (requires { typename ForwardOwner<M, Var>; }) {
    return std::is_same_v<ForwardOwner<M, Var>, Module*> && std::is_convertible_v<A, Var>;
  } else {
    return false;
  }
}

template <class M, class... Args>
constexpr bool callable_module() {
  if constexpr (sizeof...(Args) == 1) {
    return !reaches_default_forward<M, Args...>();
  } else {
    return true;
  }
}

template <class M, class... Args>
inline constexpr bool kCallableModule = callable_module<M, Args...>();

/// Whether M declares a forward these arguments reach. A concept, checked when the call is made
/// (M complete): clang 14 rejects the same requires-expression written inline in Cloneable, where
/// it is first seen while M is still incomplete.
template <class M, class... Args>
concept HasForward = requires(M& m, Args&&... a) {
  m.forward(std::forward<Args>(a)...);
};
}  // namespace detail

/// The message of the compile-time error for module(x) on a module without that forward.
#define RUCCL_MODULE_CALL_MESSAGE                                                             \
  "module(x): this module declares no forward taking this argument, so the call would run "   \
  "nn::Module's default forward(const Var&), which throws at run time. Call the forward the " \
  "module declares (model.forward(x, mask)), pass the argument type it takes, or declare "    \
  "Var forward(const Var& x) override"

/// A typed, shared handle to a sub-module (libtorch's ModuleHolder): what register_module
/// returns. `->` and `*` reach the module (ValueError when empty), `operator()` calls its forward
/// with any arguments, ptr() gives the shared_ptr.
///
///   nn::ModuleHandle<nn::Linear> fc1 = register_module("fc1", nn::Linear(16, 32));
///   Var y = fc1->forward(x);          // or fc1(x)
///
/// Clones: a module's members are copied by its copy constructor, so a copied handle would still
/// point at the original's sub-module. clone() therefore records every handle copied while it
/// copies the tree and re-seats each one that points into the tree at the copy's counterpart
/// (handles to modules outside the tree are left alone). A copy made without clone() (plain
/// `Mlp b = a;`) shares a's sub-modules, parameters included, and so do its handles.
template <typename M>
class ModuleHandle : public detail::HandleBase {
 public:
  /// An empty handle (to assign later).
  ModuleHandle() = default;
  /// A handle to `module` (shared).
  explicit ModuleHandle(std::shared_ptr<M> module) : HandleBase(std::move(module)) {}
  /// Converts a handle to a derived module type.
  template <typename D, typename = std::enable_if_t<std::is_base_of_v<M, D>>>
  ModuleHandle(const ModuleHandle<D>& other)  // NOLINT: implicit, as shared_ptr's
      : HandleBase(other.ptr()) {}

  M* operator->() const { return &**this; }
  M& operator*() const {
    static_assert(std::is_base_of_v<Module, M>, "ModuleHandle<M>: M must derive from nn::Module");
    if (module_ == nullptr) throw_empty(typeid(M));
    return static_cast<M&>(*module_);
  }
  M* get() const { return static_cast<M*>(module_.get()); }
  std::shared_ptr<M> ptr() const { return std::static_pointer_cast<M>(module_); }
  /// As a shared_ptr to M or to a base of M (to hand to Sequential, say).
  template <typename B, typename = std::enable_if_t<std::is_base_of_v<B, M>>>
  operator std::shared_ptr<B>() const {  // NOLINT: implicit, as ModuleHolder's
    return ptr();
  }
  /// Calls the module's forward with these arguments (any overload it has). A call that would
  /// reach nn::Module's default forward (which throws) does not compile.
  template <typename... Args>
  requires detail::HasForward<M, Args...>
  decltype(auto) operator()(Args&&... args) const {
    static_assert(detail::kCallableModule<M, Args...>, RUCCL_MODULE_CALL_MESSAGE);
    return (**this).forward(std::forward<Args>(args)...);
  }
};

/// Base of every module. See the file comment.
class Module {
 public:
  virtual ~Module() = default;

  /// The module's computation on one input: what Sequential calls. The default throws
  /// NotImplementedError naming the module.
  ///
  /// A module may declare any other forward as well (`Var forward(const Var& x, const Var&
  /// mask)`, `forward(const Tensor& ids)`, one returning several results) and is called through
  /// its ModuleHandle (`block->forward(x, mask)` or `block(x, mask)`). Declaring a forward hides
  /// this one in the derived class (C++ name hiding): override it too, or write
  /// `using nn::Module::forward;`, to keep calling it on the derived type.
  virtual Var forward(const Var& x);
  // No operator() here: Cloneable<M> gives `model(x)`, resolved against M's own forward at compile
  // time (a Module& calls forward(x), which dispatches virtually).

  /// Distinct parameters (each tied one once), frozen ones included, in visit order. Gives ids
  /// like named_parameters.
  std::vector<Param> parameters() const;
  /// (path, Param) in visit order; tied parameters once (first path) unless include_aliases.
  /// A parameter without an id takes param_id_for_path(path) (its first path when tied).
  /// ValueError when two distinct parameters hold one path-derived id (sub-modules listed on
  /// their own before being put together); the message names both paths.
  std::vector<std::pair<std::string, Param>> named_parameters(bool include_aliases = false) const;
  /// Every parameter registered at more than one path: its id and all its paths in visit order.
  std::vector<std::pair<ParamId, std::vector<std::string>>> aliases() const;
  /// The parameter at a dotted path ("fc1.weight"), with its id (given like named_parameters
  /// when it has none). ValueError when there is none.
  Param param(std::string_view path) const;
  /// Replaces the parameter at a dotted path; passing another path's Param ties the two.
  /// ValueError for an unknown path, ShapeError / DTypeError when shape or dtype differ.
  void set_param(std::string_view path, const Param& param);
  /// Gives the distinct parameters ids first, first + 1, ... in visit order (ties share one),
  /// replacing any they had. Not needed for replicas to agree (see ParamId), but keeps ids small
  /// and fixed by position rather than by path. ValueError when the ids would reach kNoParamId.
  void assign_param_ids(ParamId first);

  /// Every random generator the modules draw from (Dropout's masks), as (dotted path, generator)
  /// in visit order: a module's own in registration order, then each sub-module's. What a
  /// TrainingRecord saves with the parameters, so a resumed run draws the same numbers.
  std::vector<std::pair<std::string, Generator*>> named_generators();
  std::vector<std::pair<std::string, const Generator*>> named_generators() const;

  /// Every buffer (see the file comment) as (dotted path, tensor) in visit order: a module's own
  /// in registration order, then each sub-module's ("bn1.running_mean"). A sub-module registered
  /// at several paths lists its buffers once, at its first path. The tensors share storage with
  /// the module's buffers.
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  /// The buffers of named_buffers(), without their paths.
  std::vector<Tensor> buffers() const;
  /// The buffer at a dotted path ("bn1.running_var"). ValueError when there is none.
  Tensor buffer(std::string_view path) const;
  /// Replaces the buffer at a dotted path with `value` (stored as given), as a checkpoint restore
  /// or a broadcast does. ValueError for an unknown path or an undefined value; ShapeError /
  /// DTypeError / DeviceError unless shape, dtype and device equal the current buffer's.
  void set_buffer(std::string_view path, const Tensor& value);

  /// The module's dotted path in the model it was first registered into ("encoder.fc2"), learnt
  /// when registered (and when its parent is registered); "" for a top-level module (a clone is
  /// one). Layers' errors start with describe().
  const std::string& path() const { return path_; }
  /// The module's type, without namespaces ("Linear", "Mlp").
  std::string type_name() const;
  /// "path (Type)", or "Type" for a top-level module: how errors name the module
  /// ("fc2 (Linear): expected an input whose last dim is 32, got [4, 16]").
  std::string describe() const;

  /// Direct sub-modules, in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// The direct sub-module called `name`; ValueError when there is none.
  std::shared_ptr<Module> child(std::string_view name) const;

  /// Training mode (the default) or evaluation mode, for this module and every sub-module, as
  /// torch's Module.train() / eval(): Dropout is the identity in evaluation mode, BatchNorm
  /// normalises with its running statistics (and stops updating them).
  void train(bool on = true);
  void eval() { train(false); }
  /// Whether this module is in training mode.
  bool is_training() const { return training_; }
  /// Marks every parameter trainable or frozen (gives no ids).
  void set_trainable(bool trainable);
  /// Drops every parameter's gradient (gives no ids).
  void zero_grad();

  /// Converts every floating-point parameter (value and gradient) and buffer to `dtype` in place,
  /// as torch's Module.to(dtype): each Param stays the same parameter, so its ParamId, ties,
  /// trainable flag and every copy of the handle see the new value; generators are untouched;
  /// integer parameters and buffers keep their dtype. DTypeError for a non-floating dtype. Graphs
  /// recorded before keep the old values; an optimizer's state is converted by the optimizer
  /// (optim/).
  void to(DType dtype);
  /// Moves every parameter (value and gradient) and buffer to `device` in place, keeping each
  /// Param (as to(DType)).
  void to(Device device);

  /// A deep copy: an independent replica with the same ParamIds, values and ties (no gradients),
  /// copies of the buffers and generators; a parameter with no id yet has none in the copy
  /// either, and takes the same one from its path. Param members of a module's class (kept
  /// beside their registration, the libtorch habit) are re-seated on the copy's parameters as
  /// ModuleHandles are; an unregistered Param member is refused (ValueError naming its type).
  std::shared_ptr<Module> clone() const;
  /// clone() as the concrete type M (ValueError when this module is not an M).
  template <typename M>
  std::shared_ptr<M> clone_as() const {
    std::shared_ptr<M> typed = std::dynamic_pointer_cast<M>(clone());
    if (!typed) throw_not_a();
    return typed;
  }

 protected:
  Module() = default;
  /// Shallow copy (shares Params and children); clone() then replaces them. For Cloneable.
  Module(const Module&) = default;
  Module& operator=(const Module&) = delete;

  /// Registers a parameter under `name` (no dots); returns its index for param_at.
  std::size_t register_parameter(std::string name, Param param);
  /// Registers a sub-module under `name` (no dots) and returns a typed handle to it. Takes a
  /// shared_ptr (shared with the caller), a handle, or a module by value (moved into a new one:
  /// `register_module("fc1", nn::Linear(16, 32))`; a copied lvalue shares its Params).
  template <typename M>
  ModuleHandle<M> register_module(std::string name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module: M must derive from nn::Module");
    add_child(std::move(name), module);
    return ModuleHandle<M>(std::move(module));
  }
  template <typename M>
  ModuleHandle<M> register_module(std::string name, const ModuleHandle<M>& module) {
    return register_module(std::move(name), module.ptr());
  }
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  ModuleHandle<std::decay_t<M>> register_module(std::string name, M&& module) {
    return register_module(std::move(name),
                           std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }
  /// Registers a random generator under `name` (no dots) that the module owns: copied by clone()
  /// (replicas draw the same numbers unless reseeded) and listed by named_generators(). Returns
  /// its index for generator_at.
  std::size_t register_generator(std::string name, Generator generator);
  Generator& generator_at(std::size_t index) { return generators_[index].second; }
  /// Registers a buffer under `name` (no dots, not a parameter's name): module state that is not
  /// trained (see the file comment). The tensor is stored as given (sharing its storage). Returns
  /// its index for buffer_at, the handle the module reads and updates it through (to() and a
  /// restore replace the tensor, so keep the index, not the Tensor). ValueError for an undefined
  /// tensor or a name already registered.
  std::size_t register_buffer(std::string name, Tensor tensor);
  Tensor& buffer_at(std::size_t index) { return buffers_[index].second; }
  const Tensor& buffer_at(std::size_t index) const { return buffers_[index].second; }
  Param& param_at(std::size_t index) { return params_[index].second; }
  const Param& param_at(std::size_t index) const { return params_[index].second; }
  /// The sub-module registered `index`-th (registration order), untyped.
  Module& child_at(std::size_t index) const;
  /// The sub-module registered `index`-th as an M: ValueError naming its path and both types when
  /// it is not one (prefer keeping the ModuleHandle register_module returns).
  template <typename M>
  M& child_at(std::size_t index) const {
    Module& child = child_at(index);
    M* typed = dynamic_cast<M*>(&child);
    if (typed == nullptr) throw_child_type(index, typeid(M));
    return *typed;
  }

  /// A shallow copy of the concrete module (Cloneable implements it).
  virtual std::shared_ptr<Module> shallow_copy() const = 0;

 private:
  using ParamMap = std::unordered_map<const void*, Param>;
  using ModuleMap = std::unordered_map<const Module*, std::shared_ptr<Module>>;
  [[noreturn]] static void throw_not_a();
  [[noreturn]] void throw_child_type(std::size_t index, const std::type_info& wanted) const;
  void add_child(std::string name, std::shared_ptr<Module> module);
  /// Sets the path to `path`, and the paths of the sub-modules that took theirs from this one.
  void set_path(const std::string& path);
  void deep_copy_into(ParamMap& params, ModuleMap& modules, detail::ParamReseatScope& reseat);
  void visit(const std::string& prefix, std::vector<std::pair<std::string, Param>>& out) const;
  /// Distinct parameters in visit order, without giving ids.
  std::vector<Param> distinct_parameters() const;
  /// The entry of `entries` (params_ or buffers_) at a dotted path, or null.
  template <typename T>
  T* find_entry(std::vector<std::pair<std::string, T>> Module::*entries, std::string_view path);
  Param* find_param(std::string_view path);
  Tensor* find_buffer(std::string_view path);
  /// Every distinct module of the tree (this one first), each once, in visit order, with the
  /// prefix of its first path ("" or "enc.").
  std::vector<std::pair<std::string, Module*>> distinct_modules();

  std::vector<std::pair<std::string, Param>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, Generator>> generators_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::string path_;
  bool training_ = true;
};

/// Implements Module::shallow_copy for `Derived` (which must be copy-constructible). `Base` is
/// Module, or a module class built for deriving from (BatchNormBase), whose constructors
/// Cloneable inherits.
template <typename Derived, typename Base = Module>
class Cloneable : public Base {
 public:
  static_assert(std::is_base_of_v<Module, Base>, "Cloneable<Derived, Base>: Base must be a Module");
  using Base::Base;

  /// `model(x, ...)`: calls Derived's forward with these arguments (any overload it declares),
  /// resolved at compile time. A call that would reach nn::Module's default forward (a module
  /// whose forward takes a Tensor, called with a Var; one without forward(const Var&) called
  /// with one argument) does not compile, where it once threw at run time.
  template <typename... Args>
  requires detail::HasForward<Derived, Args...>
  decltype(auto) operator()(Args&&... args) {
    static_assert(detail::kCallableModule<Derived, Args...>, RUCCL_MODULE_CALL_MESSAGE);
    return static_cast<Derived&>(*this).forward(std::forward<Args>(args)...);
  }

 protected:
  std::shared_ptr<Module> shallow_copy() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
};

}  // namespace ruccl::nn
