#pragma once
// Pieces gradcheck and distributed_gradcheck share (internal; not part of the public API).
#include <cstdint>
#include <string>
#include <vector>

#include "autodiff/gradcheck.h"
#include "autodiff/var.h"

namespace ruccl::autodiff::gradcheck_detail {

/// The elements of `t` as doubles, row-major.
std::vector<double> values_f64(const Tensor& t);

/// Fresh leaves holding the inputs' tensors (same strides) and requires_grad flags.
std::vector<Var> fresh_leaves(const std::vector<Var>& inputs);

/// One analytic-versus-numeric comparison.
struct ElementError {
  double abs_error = 0.0;
  double rel_error = 0.0;  ///< abs_error / max(|numeric|, tiny)
  double excess = 0.0;     ///< abs_error / (atol + rtol |numeric|): above 1 fails; NaN: infinity
};
ElementError compare_element(double analytic, double numeric, const GradcheckOptions& options);

}  // namespace ruccl::autodiff::gradcheck_detail
