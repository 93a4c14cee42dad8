#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// Runs its sub-modules one after another; they are named "0", "1", ... in order. Each must have
/// a one-Var forward.
///
///   nn::Sequential mlp(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 10));
///   auto same = std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
///       std::make_shared<Linear>(784, 512, gen), std::make_shared<ReLU>(),
///       std::make_shared<Linear>(512, 10, gen)});
class Sequential : public Cloneable<Sequential> {
  template <typename... Ms>
  static constexpr bool kModules = sizeof...(Ms) > 0 &&
                                   (std::is_base_of_v<Module, std::decay_t<Ms>> && ...) &&
                                   !(sizeof...(Ms) == 1 &&
                                     (std::is_same_v<std::decay_t<Ms>, Sequential> && ...));

 public:
  Sequential() = default;
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules);
  /// The given modules (by value), in order. (One Sequential alone is copied, not nested.) Write
  /// `Sequential{nn::Linear(4, 8, gen), nn::Linear(8, 2, gen)}` with braces: a braced list is
  /// evaluated left to right, function arguments in an unspecified order (the two layers would
  /// draw their weights from `gen` in either order).
  template <typename... Ms, typename = std::enable_if_t<kModules<Ms...>>>
  explicit Sequential(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  /// Appends a module (named by its position) and returns a handle to it.
  ModuleHandle<Module> push_back(std::shared_ptr<Module> module);
  /// Appends a module given by value (`seq.push_back(nn::Linear(4, 8))`) and returns a typed
  /// handle to it.
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  ModuleHandle<std::decay_t<M>> push_back(M&& module) {
    auto handle = register_module(std::to_string(size_), std::forward<M>(module));
    ++size_;
    return handle;
  }
  Var forward(const Var& x) override;
  std::size_t size() const { return size_; }
  /// The module at `index`.
  Module& operator[](std::size_t index) const { return child_at(index); }
  /// The module at `index` as an M (ValueError naming both types when it is not one).
  template <typename M>
  M& at(std::size_t index) const {
    return child_at<M>(index);
  }

 private:
  std::size_t size_ = 0;
};

}  // namespace ruccl::nn
