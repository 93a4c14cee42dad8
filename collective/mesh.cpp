#include "collective/mesh.h"

#include <cstdint>
#include <sstream>

#include "collective/common/hash.h"

namespace ruccl {

namespace {

CollectiveError invalid(const std::string& message) {
  return CollectiveError(CollectiveErrorKind::InvalidArgument, message);
}

// "[dp=2, tp=3]"
std::string axes_text(const std::vector<std::pair<std::string, int>>& axes) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < axes.size(); ++i) {
    out << (i ? ", " : "") << axes[i].first << '=' << axes[i].second;
  }
  out << ']';
  return out.str();
}

void validate(const std::vector<std::pair<std::string, int>>& axes, int world) {
  if (axes.empty()) throw invalid("Mesh: expected at least one axis, got none");
  std::int64_t product = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto& [name, size] = axes[i];
    if (name.empty()) throw invalid(str("Mesh: expected a name for axis ", i, ", got \"\""));
    if (size < 1) {
      throw invalid(str("Mesh: expected a positive size of axis ", name, ", got ", size));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (axes[j].first == name) {
        throw invalid(str("Mesh: expected distinct axis names, got \"", name, "\" twice in ",
                          axes_text(axes)));
      }
    }
    product *= size;
    if (product > world) break;  // reported below; no overflow
  }
  if (product != world) {
    throw invalid(str("Mesh: expected axis sizes whose product is the world size ", world, ", got ",
                      axes_text(axes)));
  }
}

}  // namespace

Mesh::Mesh(Communicator comm, std::vector<std::pair<std::string, int>> axes)
    : world_(std::move(comm)), axes_(std::move(axes)) {
  validate(axes_, world_.world_size());
  // Every rank checks that the others laid out the same mesh: the shape's hash travels as a
  // fingerprint word of the first split.
  std::uint64_t h = kFnv1a64Basis;
  for (const auto& [name, size] : axes_) h = fnv1a64(str(name, '=', size, ';'), h);
  const int rank = world_.rank();
  int stride = world_.world_size();
  for (const auto& axis : axes_) {
    stride /= axis.second;
    coordinates_.push_back(rank / stride % axis.second);
  }
  stride = world_.world_size();
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    stride /= axes_[i].second;
    const int c = coordinates_[i];
    // Same color: every coordinate but this axis's equal; ranked by this axis's coordinate.
    const int color = rank - c * stride;
    CallOptions call;
    call.label = "Mesh";
    call.with_word("mesh axes", static_cast<std::int64_t>(axes_.size()))
        .with_word("mesh shape", static_cast<std::int64_t>(h >> 1));
    std::optional<Communicator> group = world_.split(color, c, axes_[i].first, call);
    comms_.push_back(std::move(*group));
  }
}

std::size_t Mesh::index(const std::string& axis, const char* who) const {
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].first == axis) return i;
  }
  std::ostringstream names;
  for (std::size_t i = 0; i < axes_.size(); ++i) names << (i ? ", " : "") << axes_[i].first;
  throw invalid(str(who, ": expected an axis of the mesh (", names.str(), "), got \"", axis, "\""));
}

Communicator& Mesh::comm(const std::string& axis) { return comms_[index(axis, "Mesh::comm")]; }

int Mesh::size(const std::string& axis) const { return axes_[index(axis, "Mesh::size")].second; }

int Mesh::coordinate(const std::string& axis) const {
  return coordinates_[index(axis, "Mesh::coordinate")];
}

std::vector<std::string> Mesh::axis_names() const {
  std::vector<std::string> names;
  for (const auto& axis : axes_) names.push_back(axis.first);
  return names;
}

std::vector<int> Mesh::shape() const {
  std::vector<int> sizes;
  for (const auto& axis : axes_) sizes.push_back(axis.second);
  return sizes;
}

}  // namespace ruccl
