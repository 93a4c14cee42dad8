#include "optim/gradients_params.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "collective/common/hash.h"
#include "optim/rank_agreement.h"

namespace ruccl::optim {
namespace {

constexpr const char* kLabel = "GradientsParams::all_reduce_with";

/// The ranks agree when these match: ParamId, dtype code, rank and sizes of every gradient, as
/// int64 words (paths are not part of the contract, only of the messages).
void append_gradient_words(std::string& out, ParamId id, const Tensor& g) {
  append_word(out, static_cast<std::int64_t>(id));
  append_word(out, static_cast<std::int64_t>(g.dtype()));
  append_word(out, g.dim());
  for (std::int64_t d : g.shape()) append_word(out, d);
}

std::string describe(const std::map<ParamId, Tensor>& grads) {
  std::string out;
  for (const auto& [id, g] : grads) append_gradient_words(out, id, g);
  return out;
}

struct GradDesc {
  DType dtype;
  Shape shape;
  std::string path;  // "" when unknown
};

/// describe() with each gradient's path after its sizes (length word, then the bytes padded to
/// whole words): what the ranks exchange to explain a disagreement.
std::string describe_with_paths(const std::map<ParamId, Tensor>& grads,
                                const std::map<ParamId, std::string>& paths) {
  std::string out;
  for (const auto& [id, g] : grads) {
    append_gradient_words(out, id, g);
    const auto path = paths.find(id);
    const std::string text = path == paths.end() ? std::string() : path->second;
    append_word(out, static_cast<std::int64_t>(text.size()));
    out += text;
    out.append((8 - text.size() % 8) % 8, '\0');
  }
  return out;
}

/// Parses describe_with_paths()'s output (which came from a rank of this program, so it is well
/// formed; the reads stay inside `text` all the same).
std::map<ParamId, GradDesc> parse(const std::string& text) {
  std::map<ParamId, GradDesc> out;
  std::size_t at = 0;
  auto word = [&]() {
    std::int64_t w = 0;
    if (at + 8 <= text.size()) std::memcpy(&w, text.data() + at, 8);
    at += 8;
    return w;
  };
  while (at + 24 <= text.size()) {
    const auto id = static_cast<ParamId>(word());
    GradDesc d{static_cast<DType>(word()), Shape{}, {}};
    const std::int64_t dims = word();
    for (std::int64_t k = 0; k < dims && at < text.size(); ++k) d.shape.push_back(word());
    const auto length = static_cast<std::size_t>(std::max<std::int64_t>(word(), 0));
    if (at <= text.size()) d.path = text.substr(at, std::min(length, text.size() - at));
    at += (length + 7) / 8 * 8;
    out.emplace(id, std::move(d));
  }
  return out;
}

/// " ('path')" when the path is known.
std::string named(const std::string& path) { return path.empty() ? "" : str(" ('", path, "')"); }

/// Finds the first disagreement between the ranks' descriptions and throws it (identically on
/// every rank, since every rank parses the same gathered texts).
[[noreturn]] void throw_disagreement(const std::vector<std::string>& texts) {
  std::vector<std::map<ParamId, GradDesc>> per_rank;
  std::set<ParamId> all_ids;
  for (const auto& t : texts) {
    per_rank.push_back(parse(t));
    for (const auto& [id, d] : per_rank.back()) all_ids.insert(id);
  }
  // One path under two ids: the replicas' ids differ (the ranks' models may well be the same).
  for (std::size_t r = 1; r < per_rank.size(); ++r) {
    std::map<std::string, ParamId> id_at;
    for (const auto& [id, d] : per_rank[r]) {
      if (!d.path.empty()) id_at.emplace(d.path, id);
    }
    for (const auto& [id, d] : per_rank[0]) {
      const auto other = id_at.find(d.path);
      if (d.path.empty() || other == id_at.end() || other->second == id) continue;
      throw CollectiveError(CollectiveErrorKind::ArgumentMismatch,
                            str(kLabel, ": '", d.path, "' has ParamId ", id, " on rank 0 but ",
                                other->second, " on rank ", r, ". ", kParamIdAdvice),
                            {0, static_cast<int>(r)});
    }
  }
  for (ParamId id : all_ids) {
    std::vector<int> have, missing;
    for (std::size_t r = 0; r < per_rank.size(); ++r) {
      (per_rank[r].count(id) ? have : missing).push_back(static_cast<int>(r));
    }
    if (!missing.empty()) {
      const std::string& path = per_rank[static_cast<std::size_t>(have.front())].at(id).path;
      throw CollectiveError(
          CollectiveErrorKind::ArgumentMismatch,
          str(kLabel, ": ParamId ", id, named(path), " has a gradient on rank ", have.front(),
              " but none on rank ", missing.front(), " (", missing.size(),
              " rank(s) miss it); every rank must hold the same ParamIds: build the same model "
              "on every rank, with the same parameters frozen, and let each rank's loss reach "
              "every trainable parameter (DataParallel::reduce with MissingGradientPolicy::Zero "
              "accepts parameters a rank's data did not reach)"),
          missing);
    }
    const GradDesc& first = per_rank[0].at(id);
    for (std::size_t r = 1; r < per_rank.size(); ++r) {
      const GradDesc& d = per_rank[r].at(id);
      if (d.dtype != first.dtype) {
        throw CollectiveError(CollectiveErrorKind::DTypeMismatch,
                              str(kLabel, ": ParamId ", id, named(first.path), ": expected dtype ",
                                  first.dtype, " (rank 0), got ", d.dtype, " on rank ", r),
                              {0, static_cast<int>(r)});
      }
      if (d.shape != first.shape) {
        throw CollectiveError(CollectiveErrorKind::ShapeMismatch,
                              str(kLabel, ": ParamId ", id, named(first.path), ": expected shape ",
                                  first.shape, " (rank 0), got ", d.shape, " on rank ", r),
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
  for (const auto& [path, p] : model.named_parameters()) {
    if (p.trainable() && p.grad().defined()) {
      out.grads_.emplace(p.id(), p.grad());
      out.paths_.emplace(p.id(), path);
      out.values_.add(p.id(), p.value(), p.var().impl());
    }
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
  paths_.erase(id);
  return g;
}

std::string GradientsParams::path(ParamId id) const {
  const auto it = paths_.find(id);
  return it == paths_.end() ? std::string() : it->second;
}

std::vector<ParamId> GradientsParams::ids() const {
  std::vector<ParamId> out;
  out.reserve(grads_.size());
  for (const auto& [id, g] : grads_) out.push_back(id);
  return out;
}

GradientsParams GradientsParams::all_reduce_with(Communicator& comm, ReduceOperation op) const {
  const std::string description = describe(grads_);
  // Third word: whether this rank's replica still needs its values checked (every rank joins
  // the check when any does, so the ranks' collectives stay in step).
  const auto fingerprints = all_gather_words(
      comm,
      {static_cast<std::int64_t>(fnv1a64(description)),
       static_cast<std::int64_t>(description.size()), values_.needs_check() ? 1 : 0},
      kLabel);
  bool check_values = false;
  for (const auto& f : fingerprints) {
    if (f[0] != fingerprints[0][0] || f[1] != fingerprints[0][1]) {
      throw_disagreement(all_gather_strings(comm, describe_with_paths(grads_, paths_), kLabel));
    }
    check_values = check_values || f[2] != 0;
  }
  if (check_values) values_.check_same_on_every_rank(comm, paths_, kLabel);
  GradientsParams out;
  out.paths_ = paths_;
  for (const auto& [id, g] : grads_) out.grads_.emplace(id, comm.all_reduce(g, op));
  return out;
}

}  // namespace ruccl::optim
