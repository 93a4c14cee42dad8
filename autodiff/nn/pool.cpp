#include "autodiff/nn/pool.h"

#include "autodiff/ops/conv.h"
#include "autodiff/ops/shape.h"

namespace ruccl::nn {

Var MaxPool2d::forward(const Var& x) { return autodiff::max_pool2d(x, spec_); }
Var AvgPool2d::forward(const Var& x) { return autodiff::avg_pool2d(x, spec_); }
Var AdaptiveAvgPool2d::forward(const Var& x) {
  return autodiff::adaptive_avg_pool2d(x, output_size_);
}
Var Flatten::forward(const Var& x) { return autodiff::flatten(x, start_, end_); }

}  // namespace ruccl::nn
