#pragma once
// gradcheck: compares the analytic gradient of a function of Vars with central finite differences
// in float64. Public: check your own ops with it.
//
//   Var x(Tensor::randn({3, 4}, gen, DType::F64), true);
//   GradcheckReport r = gradcheck([](const std::vector<Var>& in) { return tanh(in[0]); }, {x});
//   REQUIRE(r.ok);   // on failure r.message names the worst element and both values
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autodiff/var.h"

namespace ruccl::autodiff {

/// Step and tolerances (PyTorch's torch.autograd.gradcheck defaults).
struct GradcheckOptions {
  /// Finite-difference step.
  double eps = 1e-6;
  /// An element passes when |analytic - numeric| <= atol + rtol * |numeric|.
  double atol = 1e-5;
  double rtol = 1e-3;
  /// Also require that inputs with requires_grad false receive no gradient.
  bool check_no_grad_inputs = true;
};

/// The verdict of gradcheck and the worst element found.
struct GradcheckReport {
  bool ok = true;
  /// "ok" or what failed: the input, the element (multi-index), the output element, both values
  /// and the errors.
  std::string message = "ok";
  /// Worst element (the largest error relative to its tolerance): which input, its flat index in
  /// that input, the flat index of the output element, the two values and the errors.
  std::size_t input = 0;
  std::int64_t element = -1;
  std::int64_t output_element = -1;
  double analytic = 0.0;
  double numeric = 0.0;
  double abs_error = 0.0;
  double rel_error = 0.0;  // abs_error / max(|numeric|, tiny)
  explicit operator bool() const { return ok; }
};

/// The function under test: Vars in (the same order as `inputs`), one Var out.
using GradcheckFn = std::function<Var(const std::vector<Var>&)>;

/// Checks every d output_j / d input_k of `fn` at `inputs` against central differences
/// (f(x + eps) - f(x - eps)) / 2 eps. Inputs that require grad must be F64 (DTypeError otherwise);
/// the others (index tensors, constants) are passed through unchanged. The inputs are not
/// modified and their gradients are not touched: fn runs on fresh leaves holding the same values
/// (with the same strides, so non-contiguous inputs stay non-contiguous in the analytic pass).
/// Runs one backward per output element and two forwards per input element: keep tensors small.
GradcheckReport gradcheck(const GradcheckFn& fn, const std::vector<Var>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace ruccl::autodiff
