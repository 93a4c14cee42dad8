#include "optim/checkpoint/agreed_load.h"

#include <optional>
#include <string>

#include "optim/checkpoint/checkpoint_error.h"
#include "optim/rank_agreement.h"

namespace ruccl::optim {

TrainingRecord load_on_every_rank(Communicator& comm, const std::filesystem::path& path) {
  std::optional<TrainingRecord> record;
  std::string failure;
  try {
    record = TrainingRecord::load(path);
    record->check_rank_and_world({.rank = comm.rank(), .world_size = comm.world_size()});
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  constexpr const char* kLabel = "load_on_every_rank";
  const auto loaded = all_gather_words(comm, {failure.empty() ? 1 : 0}, kLabel);
  int failed = -1;
  for (int r = 0; r < comm.world_size() && failed < 0; ++r) {
    if (loaded[static_cast<std::size_t>(r)][0] == 0) failed = r;
  }
  if (failed < 0) return std::move(*record);
  // Every rank knows some rank failed: all of them name its file (one more collective each).
  const std::vector<std::string> paths = all_gather_strings(comm, path.string(), kLabel);
  if (!failure.empty()) throw CheckpointError(failure);
  throw CheckpointError(str("rank ", failed, " could not load ",
                            std::filesystem::path(paths[static_cast<std::size_t>(failed)]),
                            "; no rank resumes"));
}

}  // namespace ruccl::optim
