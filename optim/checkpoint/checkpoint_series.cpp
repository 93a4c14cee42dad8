#include "optim/checkpoint/checkpoint_series.h"

#include <algorithm>
#include <map>
#include <string>
#include <system_error>

#include "optim/checkpoint/checkpoint_error.h"
#include "optim/rank_agreement.h"
#include "tensor/core/error.h"

namespace ruccl::optim {
namespace {

/// "rank<r>-step<s>.ckpt" with decimal digits only (no sign, no leading zero unless "0", at most
/// 18 digits so the value fits an int64): the step, or nothing for any other name.
std::optional<std::int64_t> parse_step(const std::string& name, const std::string& prefix) {
  constexpr std::string_view kSuffix = ".ckpt";
  if (name.size() <= prefix.size() + kSuffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return std::nullopt;
  }
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 18 || (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  std::int64_t step = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

/// Throws the same CheckpointError on every rank when any rank's `failure` is non-empty.
void agree_or_throw(Communicator& comm, const std::string& failure, const char* label,
                    const std::string& what) {
  const auto flags = all_gather_words(comm, {failure.empty() ? 0 : 1}, label);
  bool any = false;
  for (const auto& f : flags) any = any || f[0] != 0;
  if (!any) return;
  const std::vector<std::string> all = all_gather_strings(comm, failure, label);
  std::string message = what;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!all[r].empty()) message += str("; rank ", r, ": ", all[r]);
  }
  throw CheckpointError(message);
}

}  // namespace

CheckpointSeries::CheckpointSeries(std::filesystem::path dir, int rank, int world_size)
    : dir_(std::move(dir)), rank_(rank), world_size_(world_size) {
  RUCCL_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, ValueError,
              "CheckpointSeries: expected 0 <= rank < world_size, got rank ", rank,
              " and world size ", world_size);
}

std::filesystem::path CheckpointSeries::path(int rank, std::int64_t step) const {
  return dir_ / str("rank", rank, "-step", step, ".ckpt");
}

std::vector<std::int64_t> CheckpointSeries::listed_steps() const {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir_, ec);
  if (ec) return steps;  // no folder yet: no checkpoint
  const std::string prefix = str("rank", rank_, "-step");
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (auto step = parse_step(it->path().filename().string(), prefix)) steps.push_back(*step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

void CheckpointSeries::save(Communicator& comm, const TrainingRecord& record,
                            std::int64_t step) const {
  std::string failure;
  const CallerState& caller = record.caller();
  if (caller.step != step || caller.rank != rank_ || caller.world_size != world_size_) {
    failure = str("expected a record of step ", step, ", rank ", rank_, " of ", world_size_,
                  ", got step ", caller.step, ", rank ", caller.rank, " of ", caller.world_size);
  } else {
    try {
      record.save(path(rank_, step));
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // The agreement: past it, every rank knows every rank holds `step`.
  agree_or_throw(comm, failure, "CheckpointSeries::save",
                 str("CheckpointSeries::save: step ", step, " was not written by every rank"));
  for (std::int64_t old : listed_steps()) {
    if (old < step) {
      std::error_code ec;
      std::filesystem::remove(path(rank_, old), ec);  // a file left behind costs only space
    }
  }
}

std::optional<TrainingRecord> CheckpointSeries::load_newest_common(
    Communicator& comm, std::int64_t* newest_anywhere) const {
  std::map<std::int64_t, TrainingRecord> verified;
  std::string failure;
  std::vector<std::int64_t> listed = listed_steps();
  if (listed.size() > kMaxCandidates) listed.resize(kMaxCandidates);
  for (std::int64_t step : listed) {
    try {
      TrainingRecord record = TrainingRecord::load(path(rank_, step));
      const CallerState& c = record.caller();
      if (c.world_size != world_size_) {
        failure =
            str(path(rank_, step), " was written by a run with ", c.world_size,
                " ranks, this run has ", world_size_, "; resume with ", c.world_size, " ranks");
        break;
      }
      if (c.step != step || c.rank != rank_) continue;  // a renamed or copied file: not ours
      verified.emplace(step, std::move(record));
    } catch (const CheckpointError&) {
      // Damaged or half-written by something else than save(): not a candidate.
    }
  }
  agree_or_throw(comm, failure, "CheckpointSeries::load_newest_common",
                 "CheckpointSeries: cannot resume");

  std::vector<std::int64_t> words(kMaxCandidates, -1);  // newest first, -1 = none
  std::size_t i = 0;
  for (auto it = verified.rbegin(); it != verified.rend(); ++it) words[i++] = it->first;
  const auto all = all_gather_words(comm, words, "CheckpointSeries::load_newest_common");
  if (newest_anywhere != nullptr) {
    *newest_anywhere = -1;
    for (const auto& theirs : all) *newest_anywhere = std::max(*newest_anywhere, theirs[0]);
  }
  std::optional<std::int64_t> chosen;
  for (std::int64_t candidate : all[static_cast<std::size_t>(rank_)]) {
    if (candidate < 0) break;
    bool everywhere = true;
    for (const auto& theirs : all) {
      everywhere = everywhere && std::find(theirs.begin(), theirs.end(), candidate) != theirs.end();
    }
    if (everywhere) {
      chosen = candidate;  // rank_'s list is newest first: the first common one is the newest
      break;
    }
  }
  for (std::int64_t step : listed_steps()) {
    if (!chosen || step > *chosen) {
      std::error_code ec;
      std::filesystem::remove(path(rank_, step), ec);
    }
  }
  if (!chosen) return std::nullopt;
  return std::move(verified.at(*chosen));
}

void CheckpointSeries::remove_own() const {
  for (std::int64_t step : listed_steps()) {
    std::error_code ec;
    std::filesystem::remove(path(rank_, step), ec);
  }
}

}  // namespace ruccl::optim
