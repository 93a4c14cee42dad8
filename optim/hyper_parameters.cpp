#include "optim/hyper_parameters.h"

#include <charconv>
#include <cstddef>

#include "tensor/core/error.h"

namespace ruccl::optim {
namespace {

/// The shortest decimal form that reads back as `v` (0.1 is "0.1", 1e-8 is "1e-08").
std::string exact(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : str(v);
}

}  // namespace

std::string hyper_parameter_differences(const std::vector<std::string>& names,
                                        const std::vector<double>& recorded,
                                        const std::vector<double>& current) {
  if (recorded.size() != current.size()) {
    return str("expected ", recorded.size(), " hyper-parameters (the record's), got ",
               current.size());
  }
  std::string out;
  for (std::size_t i = 0; i < current.size(); ++i) {
    // Bitwise equality is what a resume needs (-0.0 and 0.0 step alike, NaN never appears: the
    // constructors refuse it).
    if (recorded[i] == current[i]) continue;
    const std::string name = i < names.size() ? names[i] : str("#", i);
    out += str(out.empty() ? "" : "; ", "expected ", name, " ", exact(recorded[i]),
               " (the record's), got ", exact(current[i]));
  }
  return out;
}

}  // namespace ruccl::optim
