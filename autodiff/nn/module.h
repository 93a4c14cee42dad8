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
// Replicas: clone() deep-copies the tree (values copied, ParamIds and ties kept, no gradients),
// giving an independent replica per rank.
//
// Writing a module: derive from Cloneable<YourModule>, register parameters and sub-modules in the
// constructor, and keep the returned indices (not Param or shared_ptr copies) to reach them:
// clone() copies the registries, and indices stay valid in the copy.
//
//   class Mlp : public nn::Cloneable<Mlp> {
//    public:
//     explicit Mlp(Generator& gen)
//         : fc1_(register_module("fc1", std::make_shared<nn::Linear>(4, 8, gen))),
//           fc2_(register_module("fc2", std::make_shared<nn::Linear>(8, 2, gen))) {}
//     Var forward(const Var& x) override {
//       return child_at(fc2_).forward(relu(child_at(fc1_).forward(x)));
//     }
//    private:
//     std::size_t fc1_, fc2_;
//   };
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autodiff/nn/param.h"
#include "autodiff/var.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

using autodiff::Var;

/// Base of every module. See the file comment.
class Module {
 public:
  virtual ~Module() = default;

  /// The module's computation on one input. The default throws NotImplementedError.
  virtual Var forward(const Var& x);
  Var operator()(const Var& x) { return forward(x); }

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

  /// Direct sub-modules, in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// The direct sub-module called `name`; ValueError when there is none.
  std::shared_ptr<Module> child(std::string_view name) const;

  /// Training mode (the default) or evaluation mode, for this module and every sub-module.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Marks every parameter trainable or frozen (gives no ids).
  void set_trainable(bool trainable);
  /// Drops every parameter's gradient (gives no ids).
  void zero_grad();

  /// A deep copy: an independent replica with the same ParamIds, values and ties (no gradients);
  /// a parameter with no id yet has none in the copy either, and takes the same one from its path.
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
  /// Registers a sub-module under `name` (no dots); returns its index for child_at.
  std::size_t register_module(std::string name, std::shared_ptr<Module> module);
  /// Registers a random generator under `name` (no dots) that the module owns: copied by clone()
  /// (replicas draw the same numbers unless reseeded) and listed by named_generators(). Returns
  /// its index for generator_at.
  std::size_t register_generator(std::string name, Generator generator);
  Generator& generator_at(std::size_t index) { return generators_[index].second; }
  Param& param_at(std::size_t index) { return params_[index].second; }
  const Param& param_at(std::size_t index) const { return params_[index].second; }
  Module& child_at(std::size_t index) const { return *children_[index].second; }
  /// The sub-module at `index` as its concrete type.
  template <typename M>
  M& child_at(std::size_t index) const {
    return static_cast<M&>(*children_[index].second);
  }

  /// A shallow copy of the concrete module (Cloneable implements it).
  virtual std::shared_ptr<Module> shallow_copy() const = 0;

 private:
  using ParamMap = std::unordered_map<const void*, Param>;
  [[noreturn]] static void throw_not_a();
  void deep_copy_into(ParamMap& copies);
  void visit(const std::string& prefix, std::vector<std::pair<std::string, Param>>& out) const;
  /// Distinct parameters in visit order, without giving ids.
  std::vector<Param> distinct_parameters() const;
  Param* find_param(std::string_view path);

  std::vector<std::pair<std::string, Param>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, Generator>> generators_;
  bool training_ = true;
};

/// Implements Module::shallow_copy for `Derived` (which must be copy-constructible).
template <typename Derived>
class Cloneable : public Module {
 protected:
  std::shared_ptr<Module> shallow_copy() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
};

}  // namespace ruccl::nn
