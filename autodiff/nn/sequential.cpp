#include "autodiff/nn/sequential.h"

#include <string>

namespace ruccl::nn {

Sequential::Sequential(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

ModuleHandle<Module> Sequential::push_back(std::shared_ptr<Module> module) {
  ModuleHandle<Module> handle = register_module(std::to_string(size_), std::move(module));
  ++size_;
  return handle;
}

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (std::size_t i = 0; i < size_; ++i) y = child_at(i).forward(y);
  return y;
}

}  // namespace ruccl::nn
