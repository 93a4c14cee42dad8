#include "optim/replica_values.h"

#include <cstring>
#include <mutex>
#include <set>

#include "collective/common/hash.h"
#include "optim/rank_agreement.h"

namespace ruccl::optim {
namespace {

/// The models checked in this process, by their first parameter's identity.
struct CheckedModels {
  std::mutex mutex;
  std::set<std::weak_ptr<const void>, std::owner_less<std::weak_ptr<const void>>> keys;

  bool contains(const std::weak_ptr<const void>& key) {
    std::lock_guard<std::mutex> lock(mutex);
    return keys.count(key) != 0;
  }
  void insert(const std::weak_ptr<const void>& key) {
    std::lock_guard<std::mutex> lock(mutex);
    std::erase_if(keys, [](const auto& k) { return k.expired(); });  // models since destroyed
    keys.insert(key);
  }
};

CheckedModels& checked_models() {
  static CheckedModels models;
  return models;
}

/// ParamId -> fingerprint, as pairs of words.
std::map<nn::ParamId, std::uint64_t> parse(const std::string& text) {
  std::map<nn::ParamId, std::uint64_t> out;
  for (std::size_t at = 0; at + 16 <= text.size(); at += 16) {
    std::uint64_t id = 0, hash = 0;
    std::memcpy(&id, text.data() + at, 8);
    std::memcpy(&hash, text.data() + at + 8, 8);
    out.emplace(static_cast<nn::ParamId>(id), hash);
  }
  return out;
}

}  // namespace

std::uint64_t value_fingerprint(const Tensor& t) {
  const Tensor host = t.to(Device::cpu()).contiguous();
  if (host.numel() == 0) return fnv1a64("");
  return fnv1a64(std::string_view(static_cast<const char*>(host.data_ptr()), host.nbytes()));
}

void ReplicaValues::add(nn::ParamId id, const Tensor& value,
                        const std::shared_ptr<const void>& key) {
  if (values_.empty()) key_ = key;
  values_.emplace(id, value);
}

bool ReplicaValues::needs_check() const {
  return !values_.empty() && !key_.expired() && !checked_models().contains(key_);
}

void ReplicaValues::check_same_on_every_rank(Communicator& comm,
                                             const std::map<nn::ParamId, std::string>& paths,
                                             const char* label) const {
  std::string local;
  for (const auto& [id, value] : values_) {
    append_word(local, static_cast<std::int64_t>(id));
    append_word(local, static_cast<std::int64_t>(value_fingerprint(value)));
  }
  std::vector<std::map<nn::ParamId, std::uint64_t>> ranks;
  for (const std::string& text : all_gather_strings(comm, local, label)) {
    ranks.push_back(parse(text));
  }
  // The first parameter (lowest ParamId) whose fingerprint differs between the lowest rank that
  // has it and another rank: every rank parses the same texts, so every rank throws the same.
  std::map<nn::ParamId, std::pair<int, std::uint64_t>> first_seen;  // id -> (rank, fingerprint)
  std::map<nn::ParamId, int> differs_on;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& [id, hash] : ranks[r]) {
      const auto [seen, fresh] = first_seen.emplace(id, std::pair{static_cast<int>(r), hash});
      if (!fresh && seen->second.second != hash) differs_on.emplace(id, static_cast<int>(r));
    }
  }
  if (differs_on.empty()) {
    if (!values_.empty()) checked_models().insert(key_);
    return;
  }
  const auto& [id, rank] = *differs_on.begin();
  const int base = first_seen.at(id).first;
  const auto path = paths.find(id);
  const std::string name =
      path == paths.end() ? str("ParamId ", id) : str("'", path->second, "' (ParamId ", id, ")");
  throw CollectiveError(
      CollectiveErrorKind::ArgumentMismatch,
      str(label, ": the replicas differ: parameter ", name, " holds other values on rank ", rank,
          " than on rank ", base, " (", differs_on.size(),
          " parameter(s) differ), so reducing their gradients would train different models. "
          "Build every rank's replica identically: under run_ranks (each rank thread draws from "
          "its own copy of the default generator), from a Generator with the same seed, or "
          "broadcast rank 0's parameters with DataParallel::initialize"),
      {base, rank});
}

}  // namespace ruccl::optim
