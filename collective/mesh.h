#pragma once
// Mesh: the ranks of a communicator laid out on named axes, with a communicator along each axis
// (docs/parallelism.md, "Groups and meshes"), as PyTorch's DeviceMesh or a JAX mesh.
//
//   Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});     // 4 ranks
//   Tensor partial = mesh.comm("tp").all_reduce(y);   // over the ranks of my row
//   int replica = mesh.coordinate("dp");
//
// Ranks are row-major, the last axis fastest: with {{"dp", 2}, {"tp", 2}} rank r sits at
// dp = r / 2, tp = r % 2; the "tp" groups are {0, 1} and {2, 3}, the "dp" groups {0, 2} and
// {1, 3}. The communicator along an axis holds the ranks that differ only in that coordinate,
// ranked by it (its rank() is this rank's coordinate on the axis).
#include <string>
#include <utility>
#include <vector>

#include "collective/communicator.h"

namespace ruccl {

class Mesh {
 public:
  /// A collective of `comm` (one Communicator::split per axis, the axes in order). Every rank
  /// passes the same axes: names distinct and non-empty, sizes positive, multiplying to
  /// comm.world_size(); anything else throws CollectiveError(InvalidArgument) "Mesh: expected X,
  /// got Y" (a rank whose axes differ from the others' gets ArgumentMismatch, on every rank).
  Mesh(Communicator comm, std::vector<std::pair<std::string, int>> axes);

  /// The communicator the mesh was made over.
  Communicator& world() { return world_; }
  /// The communicator along `axis`; an unknown name throws InvalidArgument naming the axes.
  Communicator& comm(const std::string& axis);
  /// The number of ranks along `axis`.
  int size(const std::string& axis) const;
  /// This rank's coordinate on `axis`, in [0, size(axis)).
  int coordinate(const std::string& axis) const;
  /// This rank's coordinates, one per axis in order.
  const std::vector<int>& coordinates() const { return coordinates_; }
  /// The axes' names, in order.
  std::vector<std::string> axis_names() const;
  /// The axes' sizes, in order.
  std::vector<int> shape() const;

 private:
  std::size_t index(const std::string& axis, const char* who) const;

  Communicator world_;
  std::vector<std::pair<std::string, int>> axes_;
  std::vector<int> coordinates_;
  std::vector<Communicator> comms_;  // one per axis
};

}  // namespace ruccl
