#include "optim/replica_description.h"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <map>
#include <sstream>

#include "optim/rank_agreement.h"
#include "tensor/serialize/bounded_input_archive.h"

namespace ruccl::optim {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) { return Shape(shape).to_string(); }

std::string dtype_text(std::uint8_t code) {
  return code <= static_cast<std::uint8_t>(DType::Bool)
             ? std::string(dtype_name(static_cast<DType>(code)))
             : str("dtype#", static_cast<int>(code));
}

[[noreturn]] void mismatch(CollectiveErrorKind kind, const char* label, int rank,
                           const std::string& what) {
  throw CollectiveError(
      kind, str(label, ": rank ", rank, "'s replica differs from rank 0's: ", what), {0, rank});
}

/// Raises a difference in dtype or shape of `what` ("'w'", "buffer 'bn.running_mean'") between
/// rank 0 (a) and rank r (b).
void check_dtype_and_shape(const std::string& what, std::uint8_t a_dtype, std::uint8_t b_dtype,
                           const std::vector<std::int64_t>& a_shape,
                           const std::vector<std::int64_t>& b_shape, const char* label, int r) {
  if (a_dtype != b_dtype) {
    mismatch(CollectiveErrorKind::DTypeMismatch, label, r,
             str(what, ": expected dtype ", dtype_text(a_dtype), " (rank 0), got ",
                 dtype_text(b_dtype), " on rank ", r));
  }
  if (a_shape != b_shape) {
    mismatch(CollectiveErrorKind::ShapeMismatch, label, r,
             str(what, ": expected shape ", shape_text(a_shape), " (rank 0), got ",
                 shape_text(b_shape), " on rank ", r));
  }
}

/// Raises the first difference between rank 0's buffers `ref` and rank r's `d`.
void check_buffers(const std::vector<ReplicaBuffer>& ref, const std::vector<ReplicaBuffer>& d,
                   const char* label, int r) {
  const std::size_t n = std::min(ref.size(), d.size());
  for (std::size_t i = 0; i < n; ++i) {
    const ReplicaBuffer& a = ref[i];
    const ReplicaBuffer& b = d[i];
    if (a.path != b.path) {
      mismatch(CollectiveErrorKind::ArgumentMismatch, label, r,
               str("buffer #", i, " is '", a.path, "' on rank 0 but '", b.path, "' on rank ", r));
    }
    check_dtype_and_shape(str("buffer '", a.path, "'"), a.dtype, b.dtype, a.shape, b.shape, label,
                          r);
  }
  if (ref.size() != d.size()) {
    const bool rank0_longer = ref.size() > d.size();
    const ReplicaBuffer& extra = rank0_longer ? ref[n] : d[n];
    mismatch(CollectiveErrorKind::ArgumentMismatch, label, r,
             str("rank 0 has ", ref.size(), " buffers and rank ", r, " has ", d.size(),
                 "; buffer '", extra.path, "' exists only on rank ", rank0_longer ? 0 : r));
  }
}

}  // namespace

ReplicaDescription ReplicaDescription::of(const nn::Module& model, int root, Device device) {
  ReplicaDescription d;
  d.root = root;
  std::map<const void*, std::string> first_path;
  std::map<std::uint64_t, const void*> owner;
  for (const auto& [path, p] : model.named_parameters(/*include_aliases=*/true)) {
    ReplicaParam entry;
    entry.path = path;
    entry.id = p.id();
    entry.dtype = static_cast<std::uint8_t>(p.dtype());
    entry.shape = p.shape().to_vector();
    entry.trainable = p.trainable();
    const auto seen = first_path.find(p.key());
    if (seen != first_path.end()) {
      entry.tied_to = seen->second;
    } else {
      first_path.emplace(p.key(), path);
      const auto [it, fresh] = owner.emplace(p.id(), p.key());
      if (!fresh) {
        d.add_problem(CollectiveErrorKind::InvalidArgument,
                      str("parameters '", first_path[it->second], "' and '", path,
                          "' are distinct but share ParamId ", p.id(),
                          " (give them distinct ids, e.g. Module::assign_param_ids)"));
      }
      if (p.value().device() != device) {
        d.add_problem(CollectiveErrorKind::InvalidArgument,
                      str("parameter '", path, "' is on ", p.value().device(),
                          " but the communicator's device is ", device));
      }
    }
    d.params.push_back(std::move(entry));
  }
  for (const auto& [path, b] : model.named_buffers()) {
    d.buffers.push_back({path, static_cast<std::uint8_t>(b.dtype()), b.shape().to_vector()});
    if (b.device() != device) {
      d.add_problem(CollectiveErrorKind::InvalidArgument,
                    str("buffer '", path, "' is on ", b.device(),
                        " but the communicator's device is ", device));
    }
  }
  return d;
}

void ReplicaDescription::add_problem(CollectiveErrorKind kind, std::string text) {
  problems.push_back({static_cast<std::uint8_t>(kind), std::move(text)});
}

std::string ReplicaDescription::encode() const {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive archive(out);
    archive(*this);
  }
  return out.str();
}

ReplicaDescription ReplicaDescription::decode(const std::string& bytes) {
  ReplicaDescription d;
  BoundedInputArchive archive(bytes);
  archive(d);
  return d;
}

void check_replicas(const std::vector<ReplicaDescription>& ranks, const char* label) {
  std::vector<int> with_problems;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].problems.empty()) with_problems.push_back(static_cast<int>(r));
  }
  if (!with_problems.empty()) {
    const int r = with_problems.front();
    const ReplicaProblem& p = ranks[static_cast<std::size_t>(r)].problems.front();
    std::string text = str(label, ": rank ", r, ": ", p.text);
    if (with_problems.size() > 1)
      text += str(" (", with_problems.size(), " ranks report problems)");
    throw CollectiveError(static_cast<CollectiveErrorKind>(p.kind), text, with_problems);
  }
  const ReplicaDescription& ref = ranks.front();
  for (std::size_t ri = 1; ri < ranks.size(); ++ri) {
    const int r = static_cast<int>(ri);
    const ReplicaDescription& d = ranks[ri];
    if (d.root != ref.root) {
      throw CollectiveError(
          CollectiveErrorKind::RootMismatch,
          str(label, ": rank 0 names root ", ref.root, " but rank ", r, " names root ", d.root),
          {0, r});
    }
    const std::size_t n = std::min(ref.params.size(), d.params.size());
    for (std::size_t i = 0; i < n; ++i) {
      const ReplicaParam& a = ref.params[i];
      const ReplicaParam& b = d.params[i];
      if (a.path != b.path) {
        mismatch(
            CollectiveErrorKind::ArgumentMismatch, label, r,
            str("parameter #", i, " is '", a.path, "' on rank 0 but '", b.path, "' on rank ", r));
      }
      if (a.tied_to != b.tied_to) {
        mismatch(
            CollectiveErrorKind::ArgumentMismatch, label, r,
            str("'", a.path, "' is ",
                a.tied_to.empty() ? "not tied" : "tied to '" + a.tied_to + "'", " on rank 0 but ",
                b.tied_to.empty() ? "not tied" : "tied to '" + b.tied_to + "'", " on rank ", r));
      }
      if (a.id != b.id) {
        mismatch(CollectiveErrorKind::ArgumentMismatch, label, r,
                 str("'", a.path, "' has ParamId ", a.id, " on rank 0 but ", b.id, " on rank ", r,
                     ". ", kParamIdAdvice));
      }
      check_dtype_and_shape(str("'", a.path, "'"), a.dtype, b.dtype, a.shape, b.shape, label, r);
      if (a.trainable != b.trainable) {
        mismatch(CollectiveErrorKind::ArgumentMismatch, label, r,
                 str("'", a.path, "' is ", a.trainable ? "trainable" : "frozen", " on rank 0 but ",
                     b.trainable ? "trainable" : "frozen", " on rank ", r));
      }
    }
    check_buffers(ref.buffers, d.buffers, label, r);
    if (ref.params.size() != d.params.size()) {
      const bool rank0_longer = ref.params.size() > d.params.size();
      const ReplicaParam& extra = rank0_longer ? ref.params[n] : d.params[n];
      mismatch(
          CollectiveErrorKind::ArgumentMismatch, label, r,
          str("rank 0 has ", ref.params.size(), " parameter paths and rank ", r, " has ",
              d.params.size(), "; '", extra.path, "' exists only on rank ", rank0_longer ? 0 : r));
    }
  }
}

}  // namespace ruccl::optim
