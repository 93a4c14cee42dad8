#include "examples/train_char_lm/sharded_state.h"

#include <algorithm>
#include <string>
#include <vector>

#include "autodiff/nn/sequential.h"
#include "optim/checkpoint/sharded_checkpoint.h"
#include "tensor/ops/shape_ops.h"

namespace ruccl::examples::char_lm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "sharded-step-";

fs::path step_dir(const fs::path& dir, std::int64_t step) {
  return dir / (kPrefix + std::to_string(step));
}

std::vector<std::int64_t> dims_of(const Shape& s) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(s.size()); ++i) d.push_back(s[i]);
  return d;
}

// The shards of `local` (this rank's part of tensor `name` of parameter `path`) to save.
void add_shards(std::vector<optim::TensorShard>& out, const std::string& name,
                const std::string& path, std::uint64_t id, const Tensor& local,
                const ShardedSaveRoles& roles) {
  const Shape whole = roles.layout.whole_shape(path, local.shape());
  const bool replicated = whole == local.shape() && roles.layout.world > 1;
  if (!roles.dp_lead || (replicated && roles.layout.rank != 0)) return;
  for (const ShardLayout::Piece& p : roles.layout.pieces(path, whole)) {
    out.push_back({.name = name,
                   .param_id = id,
                   .global_shape = dims_of(whole),
                   .box = optim::ShardBox::along(whole, p.dim, p.global_begin, p.length),
                   .value = local.narrow(p.dim, p.local_begin, p.length).contiguous()});
  }
}

// This rank's shard of tensor `name` (of parameter `path`, shard shape `local`), read from the
// checkpoint.
Tensor read_shard(const optim::ShardedCheckpoint& ckpt, const std::string& name,
                  const std::string& path, const Shape& local, const ShardLayout& layout) {
  return layout.assemble(
      path, local, ckpt.info(name).dtype, [&](const Shape& whole, const ShardLayout::Piece& p) {
        return ckpt.read(name, optim::ShardBox::along(whole, p.dim, p.global_begin, p.length));
      });
}

}  // namespace

void save_sharded_state(Communicator& comm, const fs::path& dir, std::int64_t step,
                        const nn::Module& model, const ShardedSaveRoles& roles,
                        const optim::Optimizer& opt, const optim::LrScheduler& schedule,
                        optim::CallerState caller) {
  const optim::OptimizerState state = opt.state();
  std::vector<optim::TensorShard> shards;
  for (const auto& [path, p] : model.named_parameters()) {
    add_shards(shards, path, path, p.id(), p.value(), roles);
    const auto slot = state.slots.find(p.id());
    if (slot == state.slots.end()) continue;
    caller.set("steps/" + path, slot->second.steps);
    for (std::size_t i = 0; i < slot->second.buffers.size(); ++i) {
      add_shards(shards, "opt" + std::to_string(i) + "/" + path, path, 0,
                 slot->second.buffers[i].to_tensor().reshape(p.value().shape()), roles);
    }
  }
  const fs::path to = step_dir(dir, step);
  if (comm.rank() == 0) fs::create_directories(to / "shards");
  comm.barrier();
  optim::ShardedCheckpoint::save(comm, to / "shards", shards);
  if (comm.rank() == 0) {
    nn::Sequential none;  // the record holds no parameters
    optim::TrainingRecord::capture(none, nullptr, &schedule, nullptr, caller)
        .save(to / "caller.record");
    for (const auto& entry : fs::directory_iterator(dir)) {  // the older steps' checkpoints
      const std::string name = entry.path().filename().string();
      if (name.rfind(kPrefix, 0) == 0 && entry.path() != to) fs::remove_all(entry.path());
    }
  }
  comm.barrier();
}

std::optional<std::int64_t> newest_sharded_step(Communicator& comm, const fs::path& dir) {
  std::int64_t newest = -1;
  if (comm.rank() == 0 && fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(kPrefix, 0) != 0) continue;
      if (!fs::exists(entry.path() / "caller.record") ||
          !fs::exists(entry.path() / "shards" / "manifest.shards")) {
        continue;
      }
      newest = std::max<std::int64_t>(newest, std::stoll(name.substr(std::string(kPrefix).size())));
    }
  }
  newest = comm.broadcast(Tensor::from_vector<std::int64_t>({newest}), 0).item<std::int64_t>();
  if (newest < 0) return std::nullopt;
  return newest;
}

optim::CallerState load_sharded_state(Communicator& comm, const fs::path& dir, std::int64_t step,
                                      nn::Module& model, const ShardLayout& layout,
                                      optim::Optimizer& opt, optim::LrScheduler& schedule) {
  const fs::path from = step_dir(dir, step);
  const optim::ShardedCheckpoint ckpt =
      optim::ShardedCheckpoint::open_on_every_rank(comm, from / "shards");
  const optim::TrainingRecord record = optim::TrainingRecord::load(from / "caller.record");
  nn::Sequential none;  // the record holds no parameters
  record.restore(none, nullptr, &schedule, nullptr, {.allow_other_rank_or_world = true});
  const optim::CallerState& caller = record.caller();
  optim::OptimizerState state = opt.state();
  state.slots.clear();
  for (auto& [path, p] : model.named_parameters()) {
    p.set_value(read_shard(ckpt, path, path, p.value().shape(), layout).to(p.dtype()));
    if (!caller.values.contains("steps/" + path)) continue;
    optim::ParamSlotState& slot = state.slots[p.id()];
    slot.steps = caller.get<std::int64_t>("steps/" + path);
    const std::vector<std::string> names = ckpt.names();
    for (std::size_t i = 0;; ++i) {
      const std::string name = "opt" + std::to_string(i) + "/" + path;
      if (std::find(names.begin(), names.end(), name) == names.end()) break;
      slot.buffers.push_back(
          optim::TensorBlob::from_tensor(read_shard(ckpt, name, path, p.value().shape(), layout)));
    }
  }
  opt.load_state(state);
  return caller;
}

void remove_sharded_states(Communicator& comm, const fs::path& dir) {
  if (comm.rank() == 0 && fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind(kPrefix, 0) == 0) fs::remove_all(entry.path());
    }
  }
  comm.barrier();
}

}  // namespace ruccl::examples::char_lm
