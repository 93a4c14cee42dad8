#include "optim/checkpoint/shard_box.h"

#include <algorithm>
#include <sstream>

#include "tensor/core/error.h"

namespace ruccl::optim {

ShardBox ShardBox::whole(const Shape& global) {
  ShardBox b;
  b.offset.assign(static_cast<std::size_t>(global.size()), 0);
  b.size = global.to_vector();
  return b;
}

ShardBox ShardBox::along(const Shape& global, int dim, std::int64_t begin, std::int64_t length) {
  RUCCL_CHECK(dim >= 0 && dim < global.size(), ValueError,
              "ShardBox::along: expected a dim in [0, ", global.size(), ") of ", global.to_string(),
              ", got ", dim);
  ShardBox b = whole(global);
  b.offset[static_cast<std::size_t>(dim)] = begin;
  b.size[static_cast<std::size_t>(dim)] = length;
  return b;
}

ShardBox ShardBox::flat_range(std::int64_t begin, std::int64_t length) {
  return ShardBox{{begin}, {length}, true};
}

std::int64_t ShardBox::numel() const {
  std::int64_t n = 1;
  for (const std::int64_t s : size) n *= s;
  return n;
}

Shape ShardBox::shape() const { return Shape(size); }

bool ShardBox::fits(const Shape& global, std::string* why) const {
  const auto fail = [&](std::string text) {
    if (why != nullptr) *why = std::move(text);
    return false;
  };
  if (offset.size() != size.size()) return fail("offsets and sizes differ in number");
  if (flat) {
    if (offset.size() != 1) return fail("a flat range has one offset and one length");
    if (offset[0] < 0 || size[0] < 0 || offset[0] + size[0] > global.numel()) {
      return fail(str(to_string(), " is outside the ", global.numel(), " elements of ",
                      global.to_string()));
    }
    return true;
  }
  if (static_cast<std::int64_t>(offset.size()) != global.size()) {
    return fail(str(to_string(), " has ", offset.size(), " dimension(s), the tensor ",
                    global.to_string(), " has ", global.size()));
  }
  for (std::size_t d = 0; d < offset.size(); ++d) {
    if (offset[d] < 0 || size[d] < 0 ||
        offset[d] + size[d] > global[static_cast<std::int64_t>(d)]) {
      return fail(str(to_string(), " is outside ", global.to_string(), " in dimension ", d));
    }
  }
  return true;
}

std::string ShardBox::to_string() const {
  std::ostringstream out;
  if (flat) {
    out << "flat [" << (offset.empty() ? 0 : offset[0]) << ":"
        << (offset.empty() ? 0 : offset[0] + size[0]) << ")";
    return out.str();
  }
  out << "[";
  for (std::size_t d = 0; d < offset.size(); ++d) {
    out << (d > 0 ? ", " : "") << offset[d] << ":" << offset[d] + size[d];
  }
  out << "]";
  return out.str();
}

ShardBox intersect(const ShardBox& a, const ShardBox& b) {
  RUCCL_CHECK(a.flat == b.flat && a.offset.size() == b.offset.size(), ValueError,
              "intersect: expected two boxes or two flat ranges of one tensor, got ", a.to_string(),
              " and ", b.to_string());
  ShardBox out{a.offset, a.size, a.flat};
  for (std::size_t d = 0; d < a.offset.size(); ++d) {
    const std::int64_t lo = std::max(a.offset[d], b.offset[d]);
    const std::int64_t hi = std::min(a.offset[d] + a.size[d], b.offset[d] + b.size[d]);
    out.offset[d] = lo;
    out.size[d] = std::max<std::int64_t>(0, hi - lo);
  }
  return out;
}

}  // namespace ruccl::optim
