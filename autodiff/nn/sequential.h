#pragma once
#include <memory>
#include <vector>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// Runs its sub-modules one after another; they are named "0", "1", ... in order.
///
///   auto mlp = std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
///       std::make_shared<Linear>(784, 512, gen), std::make_shared<ReLU>(),
///       std::make_shared<Linear>(512, 10, gen)});
class Sequential : public Cloneable<Sequential> {
 public:
  Sequential() = default;
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules);
  /// Appends a module (named by its position).
  void push_back(std::shared_ptr<Module> module);
  Var forward(const Var& x) override;
  std::size_t size() const { return size_; }
  /// The module at `index`.
  Module& operator[](std::size_t index) const { return child_at(index); }
  template <typename M>
  M& at(std::size_t index) const {
    return child_at<M>(index);
  }

 private:
  std::size_t size_ = 0;
};

}  // namespace ruccl::nn
