// gradcheck: analytic Jacobian (one backward per output element, graph retained) against central
// differences (two forwards per input element), both in float64.
#include "autodiff/gradcheck.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "autodiff/grad_mode.h"
#include "autodiff/gradcheck_detail.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff {

namespace {

using namespace gradcheck_detail;

Var call(const GradcheckFn& fn, const std::vector<Var>& in) {
  Var y = fn(in);
  RUCCL_CHECK(y.defined(), ValueError, "gradcheck: the function returned an undefined Var");
  RUCCL_CHECK(is_floating(y.dtype()), DTypeError,
              "gradcheck: expected the function to return a floating Var, got ", y.dtype());
  return y;
}

}  // namespace

GradcheckReport gradcheck(const GradcheckFn& fn, const std::vector<Var>& inputs,
                          const GradcheckOptions& options) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    RUCCL_CHECK(inputs[i].defined(), ValueError, "gradcheck: input ", i, " is undefined");
    RUCCL_CHECK(!inputs[i].requires_grad() || inputs[i].dtype() == DType::F64, DTypeError,
                "gradcheck: inputs that require grad must be F64 for finite differences; input ", i,
                " is ", inputs[i].dtype());
  }
  GradcheckReport report;

  // Analytic Jacobians: analytic[i][j * n_i + k] = d out_j / d in_i[k].
  std::vector<Var> leaves = fresh_leaves(inputs);
  Var y = call(fn, leaves);
  const Shape out_shape = y.shape();
  const std::int64_t n_out = y.numel();
  std::vector<std::vector<double>> analytic(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].requires_grad()) {
      analytic[i].assign(static_cast<std::size_t>(n_out * inputs[i].numel()), 0.0);
    }
  }
  for (std::int64_t j = 0; j < n_out && y.requires_grad(); ++j) {
    for (Var& leaf : leaves) leaf.zero_grad();
    std::vector<double> seed(static_cast<std::size_t>(n_out), 0.0);
    seed[static_cast<std::size_t>(j)] = 1.0;
    y.backward(Tensor::from_vector<double>(seed, out_shape).to(y.dtype()), /*retain_graph=*/true);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& g = leaves[i].grad();
      if (!inputs[i].requires_grad()) {
        if (options.check_no_grad_inputs && g.defined()) {
          report.ok = false;
          report.input = i;
          report.message =
              str("gradcheck: input ", i, " does not require grad but received a gradient");
          return report;
        }
        continue;
      }
      if (!g.defined()) continue;  // no path from this input: a zero gradient
      if (g.shape() != inputs[i].shape() || g.dtype() != inputs[i].dtype()) {
        report.ok = false;
        report.input = i;
        report.message = str("gradcheck: the gradient of input ", i, " has shape ", g.shape(),
                             " and dtype ", g.dtype(), "; expected shape ", inputs[i].shape(),
                             " and dtype ", inputs[i].dtype());
        return report;
      }
      const std::vector<double> gv = values_f64(g);
      const std::size_t n_in = gv.size();
      for (std::size_t k = 0; k < n_in; ++k) {
        analytic[i][static_cast<std::size_t>(j) * n_in + k] = gv[k];
      }
    }
  }

  // Numeric Jacobians, compared element by element.
  double worst_excess = -1.0;
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    const Shape in_shape = inputs[i].shape();
    const std::vector<double> base = values_f64(inputs[i].value());
    const std::size_t n_in = base.size();
    for (std::size_t k = 0; k < n_in; ++k) {
      std::vector<Var> args = fresh_leaves(inputs);
      std::vector<double> v = base;
      v[k] = base[k] + options.eps;
      args[i] = Var(Tensor::from_vector<double>(v, in_shape));
      const std::vector<double> plus = values_f64(call(fn, args).value());
      v[k] = base[k] - options.eps;
      args[i] = Var(Tensor::from_vector<double>(v, in_shape));
      const std::vector<double> minus = values_f64(call(fn, args).value());
      for (std::int64_t j = 0; j < n_out; ++j) {
        const auto ju = static_cast<std::size_t>(j);
        const double numeric = (plus[ju] - minus[ju]) / (2.0 * options.eps);
        const double a = analytic[i][ju * n_in + k];
        const ElementError e = compare_element(a, numeric, options);
        if (e.excess > worst_excess) {
          worst_excess = e.excess;
          report.input = i;
          report.element = static_cast<std::int64_t>(k);
          report.output_element = j;
          report.analytic = a;
          report.numeric = numeric;
          report.abs_error = e.abs_error;
          report.rel_error = e.rel_error;
        }
        if (e.excess > 1.0) report.ok = false;
      }
    }
  }
  if (worst_excess >= 0.0) {
    std::ostringstream out;
    out.precision(10);
    out << (report.ok ? "ok; worst: " : "gradcheck failed: ") << "input " << report.input
        << " element " << unravel_index(report.element, inputs[report.input].shape())
        << ", output element " << unravel_index(report.output_element, out_shape) << ": analytic "
        << report.analytic << ", numeric " << report.numeric << ", abs error " << report.abs_error
        << ", rel error " << report.rel_error << " (allowed " << options.atol << " + "
        << options.rtol << " * |numeric|)";
    report.message = out.str();
  }
  return report;
}

}  // namespace ruccl::autodiff
