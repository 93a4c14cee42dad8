#include "optim/gradients_params.h"

#include <cstring>
#include <set>

#include "optim/rank_agreement.h"

namespace ruccl::optim {
namespace {

constexpr const char* kLabel = "GradientsParams::all_reduce_with";

/// One gradient's description: ParamId, dtype code, rank and sizes, as int64 words.
std::string describe(const std::map<ParamId, Tensor>& grads) {
  std::string out;
  for (const auto& [id, g] : grads) {
    append_word(out, static_cast<std::int64_t>(id));
    append_word(out, static_cast<std::int64_t>(g.dtype()));
    append_word(out, g.dim());
    for (std::int64_t d : g.shape()) append_word(out, d);
  }
  return out;
}

struct GradDesc {
  DType dtype;
  Shape shape;
};

/// Parses describe()'s output (which came from a rank of this program, so it is well formed).
std::map<ParamId, GradDesc> parse(const std::string& text) {
  std::map<ParamId, GradDesc> out;
  std::vector<std::int64_t> words(text.size() / 8);
  std::memcpy(words.data(), text.data(), words.size() * 8);
  for (std::size_t i = 0; i + 3 <= words.size();) {
    const auto id = static_cast<ParamId>(words[i]);
    GradDesc d{static_cast<DType>(words[i + 1]), Shape{}};
    const auto dims = static_cast<std::size_t>(words[i + 2]);
    i += 3;
    for (std::size_t k = 0; k < dims && i < words.size(); ++k) d.shape.push_back(words[i++]);
    out.emplace(id, d);
  }
  return out;
}

/// Finds the first disagreement between the ranks' descriptions and throws it (identically on
/// every rank, since every rank parses the same gathered texts).
[[noreturn]] void throw_disagreement(const std::vector<std::string>& texts) {
  std::vector<std::map<ParamId, GradDesc>> per_rank;
  std::set<ParamId> all_ids;
  for (const auto& t : texts) {
    per_rank.push_back(parse(t));
    for (const auto& [id, d] : per_rank.back()) all_ids.insert(id);
  }
  for (ParamId id : all_ids) {
    std::vector<int> have, missing;
    for (std::size_t r = 0; r < per_rank.size(); ++r) {
      (per_rank[r].count(id) ? have : missing).push_back(static_cast<int>(r));
    }
    if (!missing.empty()) {
      throw CollectiveError(CollectiveErrorKind::ArgumentMismatch,
                            str(kLabel, ": ParamId ", id, " has a gradient on rank ", have.front(),
                                " but none on rank ", missing.front(), " (", missing.size(),
                                " rank(s) miss it); every rank must hold the same ParamIds"),
                            missing);
    }
    const GradDesc& first = per_rank[0].at(id);
    for (std::size_t r = 1; r < per_rank.size(); ++r) {
      const GradDesc& d = per_rank[r].at(id);
      if (d.dtype != first.dtype) {
        throw CollectiveError(CollectiveErrorKind::DTypeMismatch,
                              str(kLabel, ": ParamId ", id, ": expected dtype ", first.dtype,
                                  " (rank 0), got ", d.dtype, " on rank ", r),
                              {0, static_cast<int>(r)});
      }
      if (d.shape != first.shape) {
        throw CollectiveError(CollectiveErrorKind::ShapeMismatch,
                              str(kLabel, ": ParamId ", id, ": expected shape ", first.shape,
                                  " (rank 0), got ", d.shape, " on rank ", r),
                              {0, static_cast<int>(r)});
      }
    }
  }
  throw CollectiveError(CollectiveErrorKind::ArgumentMismatch,
                        str(kLabel, ": the ranks' gradient descriptions differ"));
}

}  // namespace

GradientsParams GradientsParams::from_module(const nn::Module& model) {
  GradientsParams out;
  for (const nn::Param& p : model.parameters()) {
    if (p.trainable() && p.grad().defined()) out.grads_.emplace(p.id(), p.grad());
  }
  return out;
}

std::optional<Tensor> GradientsParams::get(ParamId id) const {
  const auto it = grads_.find(id);
  if (it == grads_.end()) return std::nullopt;
  return it->second;
}

void GradientsParams::insert(ParamId id, Tensor grad) {
  RUCCL_CHECK(grad.defined(), ValueError,
              "GradientsParams::insert: expected a defined gradient "
              "for ParamId ",
              id, ", got an undefined tensor");
  grads_[id] = std::move(grad);
}

std::optional<Tensor> GradientsParams::remove(ParamId id) {
  const auto it = grads_.find(id);
  if (it == grads_.end()) return std::nullopt;
  Tensor g = std::move(it->second);
  grads_.erase(it);
  return g;
}

std::vector<ParamId> GradientsParams::ids() const {
  std::vector<ParamId> out;
  out.reserve(grads_.size());
  for (const auto& [id, g] : grads_) out.push_back(id);
  return out;
}

GradientsParams GradientsParams::all_reduce_with(Communicator& comm, ReduceOperation op) const {
  const std::string description = describe(grads_);
  const auto fingerprints = all_gather_words(comm,
                                             {static_cast<std::int64_t>(fnv1a(description)),
                                              static_cast<std::int64_t>(description.size())},
                                             kLabel);
  for (const auto& f : fingerprints) {
    if (f != fingerprints[0]) throw_disagreement(all_gather_strings(comm, description, kLabel));
  }
  GradientsParams out;
  for (const auto& [id, g] : grads_) out.grads_.emplace(id, comm.all_reduce(g, op));
  return out;
}

}  // namespace ruccl::optim
