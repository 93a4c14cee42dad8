#include "autodiff/gradcheck_detail.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ruccl::autodiff::gradcheck_detail {

std::vector<double> values_f64(const Tensor& t) { return t.to(DType::F64).to_vector<double>(); }

std::vector<Var> fresh_leaves(const std::vector<Var>& inputs) {
  std::vector<Var> out;
  out.reserve(inputs.size());
  for (const Var& v : inputs) out.emplace_back(v.value(), v.requires_grad());
  return out;
}

ElementError compare_element(double analytic, double numeric, const GradcheckOptions& options) {
  ElementError e;
  e.abs_error = std::fabs(analytic - numeric);
  e.rel_error = e.abs_error / std::max(std::fabs(numeric), 1e-300);
  const double allowed = options.atol + options.rtol * std::fabs(numeric);
  e.excess =
      std::isnan(e.abs_error) ? std::numeric_limits<double>::infinity() : e.abs_error / allowed;
  return e;
}

}  // namespace ruccl::autodiff::gradcheck_detail
