// Tensor::to_string and operator<<: the values as PyTorch 1.13 prints them (torch/_tensor_str.py
// with its default print options: precision 4, threshold 1000, edgeitems 3, linewidth 80).
//
//   tensor([[1., 2.],
//           [3., 4.]])                         F32: no dtype suffix (PyTorch's default dtype)
//   tensor([0.5000, 1.2500], dtype=F64)        other dtypes named with ruccl's spelling; I64 and
//   tensor([1, 2, 3])                          Bool need none, as in PyTorch
//   tensor([], size=(0, 3))                    empty: the size unless it is 1-D
//   tensor([0., 0., 0.,  ..., 0., 0., 0.])     more than 1000 elements: 3 at each end of every dim
//
// One format for every element, chosen from the elements shown: a floating tensor whose finite
// non-zero values are all integers prints "1." (scientific when max/min > 1000 or max > 1e8);
// otherwise 4 decimals, scientific ("1.0000e-05") when max/min > 1000, max > 1e8 or min < 1e-4.
// Every element is right-aligned to the widest.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl {
namespace {

constexpr int kPrecision = 4;
constexpr std::int64_t kThreshold = 1000;
constexpr std::int64_t kEdgeItems = 3;
constexpr std::size_t kLineWidth = 80;

/// printf into a string.
template <typename... Args>
std::string printed(const char* format, Args... args) {
  char buffer[64];
  const int n = std::snprintf(buffer, sizeof(buffer), format, args...);
  return std::string(buffer, static_cast<std::size_t>(n < 0 ? 0 : n));
}

/// PyTorch's _Formatter: one width and mode for all the elements shown.
class Formatter {
 public:
  Formatter(const std::vector<double>& shown, DType dtype)
      : floating_(is_floating(dtype)), boolean_(dtype == DType::Bool) {
    if (!floating_) {
      for (const double v : shown) width_ = std::max(width_, plain(v).size());
      return;
    }
    double lo = INFINITY, hi = 0.0;
    bool any = false;
    for (const double v : shown) {
      if (!std::isfinite(v) || v == 0.0) continue;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) integers_ = false;
    }
    if (!any) return;  // no finite non-zero value: integer mode, width 1 (as PyTorch)
    scientific_ = hi / lo > 1000.0 || hi > 1.0e8 || (!integers_ && lo < 1.0e-4);
    for (const double v : shown) {
      if (!std::isfinite(v) || v == 0.0) continue;
      const std::string text = scientific_ ? printed("%.*e", kPrecision, v)
                               : integers_ ? printed("%.0f", v) + "."
                                           : printed("%.*f", kPrecision, v);
      width_ = std::max(width_, text.size());
    }
  }

  std::size_t width() const { return width_; }

  std::string format(double v) const {
    std::string text = plain(v);
    if (text.size() < width_) text.insert(0, width_ - text.size(), ' ');
    return text;
  }

 private:
  std::string plain(double v) const {
    if (boolean_) return v != 0.0 ? "True" : "False";
    if (!floating_) return printed("%lld", static_cast<long long>(v));
    if (std::isnan(v)) return "nan";  // Python prints every NaN as "nan", whatever its sign bit
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (scientific_) return printed("%.*e", kPrecision, v);
    if (integers_) return printed("%.0f", v) + ".";
    return printed("%.*f", kPrecision, v);
  }

  bool floating_;
  bool boolean_;
  bool integers_ = true;
  bool scientific_ = false;
  std::size_t width_ = 1;
};

/// The indices along a dim of size n that are shown: all, or kEdgeItems at each end (-1 marks
/// the "..." between them).
std::vector<std::int64_t> shown_indices(std::int64_t n, bool summarize) {
  std::vector<std::int64_t> out;
  if (summarize && n > 2 * kEdgeItems) {
    for (std::int64_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    out.push_back(-1);
    for (std::int64_t i = n - kEdgeItems; i < n; ++i) out.push_back(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
  }
  return out;
}

/// Walks the shown elements of a row-major tensor.
class Printer {
 public:
  Printer(const std::vector<double>& values, const Shape& shape, bool summarize)
      : values_(values), shape_(shape), summarize_(summarize), strides_(shape.size(), 1) {
    for (std::size_t d = shape.size(); d-- > 1;) strides_[d - 1] = strides_[d] * shape[d];
  }

  /// The elements shown, in order.
  void collect(std::size_t dim, std::int64_t offset, std::vector<double>& out) const {
    if (static_cast<std::int64_t>(dim) == shape_.size()) {
      out.push_back(values_[static_cast<std::size_t>(offset)]);
      return;
    }
    for (const std::int64_t i : shown_indices(shape_[dim], summarize_)) {
      if (i >= 0) collect(dim + 1, offset + i * strides_[dim], out);
    }
  }

  /// PyTorch's _tensor_str_with_formatter from `dim` on.
  std::string text(const Formatter& f, std::size_t dim, std::int64_t offset,
                   std::size_t indent) const {
    if (shape_.empty()) return f.format(values_[0]);
    const std::vector<std::int64_t> shown = shown_indices(shape_[dim], summarize_);
    std::vector<std::string> parts;
    if (static_cast<std::int64_t>(dim) + 1 == shape_.size()) {
      for (const std::int64_t i : shown) {
        parts.push_back(i < 0 ? std::string(" ...")
                              : f.format(values_[static_cast<std::size_t>(offset + i)]));
      }
      const std::size_t per_line =
          std::max<std::size_t>(1, (kLineWidth - std::min(indent, kLineWidth)) / (f.width() + 2));
      std::string out = "[";
      for (std::size_t k = 0; k < parts.size(); ++k) {
        if (k > 0) out += k % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
        out += parts[k];
      }
      return out + "]";
    }
    for (const std::int64_t i : shown) {
      parts.push_back(i < 0 ? std::string("...")
                            : text(f, dim + 1, offset + i * strides_[dim], indent + 1));
    }
    const std::string separator =
        "," + std::string(shape_.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    for (std::size_t k = 0; k < parts.size(); ++k) out += (k > 0 ? separator : "") + parts[k];
    return out + "]";
  }

 private:
  const std::vector<double>& values_;
  const Shape& shape_;
  bool summarize_;
  std::vector<std::int64_t> strides_;
};

/// "(0, 3)", "(0,)": a Python tuple.
std::string python_tuple(const Shape& shape) {
  std::string out = "(";
  for (std::int64_t d = 0; d < shape.size(); ++d) out += str(d > 0 ? ", " : "", shape[d]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

/// The element values as doubles (exact for every floating dtype, and for integers up to 2^53,
/// beyond which I64 values print rounded).
std::vector<double> values_of(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  if (is_floating(t.dtype())) return host.to(DType::F64).to_vector<double>();
  std::vector<double> out;
  for (const std::int64_t v : host.to(DType::I64).to_vector<std::int64_t>()) {
    out.push_back(static_cast<double>(v));
  }
  return out;
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  const std::string prefix = "tensor(";
  const std::size_t indent = prefix.size();
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back(str("device='", device(), "'"));
  std::string body;
  if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + python_tuple(shape()));
    if (dtype() != DType::F32) suffixes.push_back(str("dtype=", dtype()));
    body = "[]";
  } else {
    if (dtype() != DType::F32 && dtype() != DType::I64 && dtype() != DType::Bool) {
      suffixes.push_back(str("dtype=", dtype()));
    }
    const bool summarize = numel() > kThreshold;
    const std::vector<double> values = values_of(contiguous());
    const Printer printer(values, shape(), summarize);
    std::vector<double> shown;
    printer.collect(0, 0, shown);
    body = printer.text(Formatter(shown, dtype()), 0, 0, indent);
  }
  // PyTorch's _add_suffixes: on the last line while it fits in the line width.
  std::string out = prefix + body;
  const std::size_t newline = out.rfind('\n');
  std::size_t last_line = newline == std::string::npos ? out.size() + 2 : out.size() - newline + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line + suffix.size() + 2 > kLineWidth) {
      out += ",\n" + std::string(indent, ' ') + suffix;
      last_line = indent + suffix.size();
    } else {
      out += ", " + suffix;
      last_line += suffix.size() + 2;
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.to_string(); }

}  // namespace ruccl
