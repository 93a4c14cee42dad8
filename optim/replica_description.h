#pragma once
// ReplicaDescription: what one rank's model replica looks like (every parameter path, ParamId,
// dtype, shape, frozen flag and tie; every buffer path, dtype and shape) plus any local problem the
// rank found. DataParallel exchanges descriptions so that every rank detects the same difference
// and raises the same CollectiveError.
#include <cstdint>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"
#include "collective/common/collective_error.h"

namespace ruccl::optim {

/// One parameter path of a replica (a tied parameter appears once per path).
struct ReplicaParam {
  std::string path;
  std::uint64_t id = 0;
  std::uint8_t dtype = 0;
  std::vector<std::int64_t> shape;
  bool trainable = true;
  std::string tied_to;  ///< the first path of this parameter when this path is an alias, else ""

  template <class Archive>
  void serialize(Archive& archive) {
    archive(path, id, dtype, shape, trainable, tied_to);
  }
};

/// One buffer of a replica (Module::named_buffers).
struct ReplicaBuffer {
  std::string path;
  std::uint8_t dtype = 0;
  std::vector<std::int64_t> shape;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(path, dtype, shape);
  }
};

/// A problem a rank found locally, with the CollectiveErrorKind it raises.
struct ReplicaProblem {
  std::uint8_t kind = 0;
  std::string text;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(kind, text);
  }
};

/// One rank's replica and local problems. See the file comment.
struct ReplicaDescription {
  std::int64_t root = 0;
  std::vector<ReplicaParam> params;
  std::vector<ReplicaProblem> problems;
  std::vector<ReplicaBuffer> buffers;

  /// Describes `model` (named_parameters with aliases, in visit order; named_buffers) and notes
  /// local problems: two distinct parameters with one ParamId, a parameter or buffer not on
  /// `device`.
  static ReplicaDescription of(const nn::Module& model, int root, Device device);
  /// Records a local problem.
  void add_problem(CollectiveErrorKind kind, std::string text);

  /// A compact binary form (cereal) to exchange and hash.
  std::string encode() const;
  /// Parses encode()'s output.
  static ReplicaDescription decode(const std::string& bytes);

  template <class Archive>
  void serialize(Archive& archive) {
    archive(root, params, problems, buffers);
  }
};

/// Raises, identically on every rank, the first local problem (lowest rank first) or the first
/// difference between rank 0's replica and another rank's; returns when there is none. `label`
/// names the operation in the message ("DataParallel::initialize").
void check_replicas(const std::vector<ReplicaDescription>& ranks, const char* label);

}  // namespace ruccl::optim
