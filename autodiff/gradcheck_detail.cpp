#include "autodiff/gradcheck_detail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace ruccl::autodiff::gradcheck_detail {

std::string multi_index(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.size()));
  for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
    const std::int64_t n = shape[d] > 0 ? shape[d] : 1;
    idx[static_cast<std::size_t>(d)] = flat % n;
    flat /= n;
  }
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < idx.size(); ++i) out << (i ? ", " : "") << idx[i];
  out << ']';
  return out.str();
}

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
