#include "optim/zero_checkpoint.h"

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autodiff/grad_mode.h"
#include "autodiff/nn/sequential.h"
#include "optim/bucket_plan.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/sharded_checkpoint.h"
#include "optim/checkpoint/training_record.h"
#include "optim/hyper_parameters.h"
#include "optim/rank_agreement.h"
#include "optim/zero_shard.h"

namespace ruccl::optim {
namespace {

constexpr const char* kKind = "optimizer.kind";
constexpr const char* kConfig = "optimizer.config";
constexpr const char* kBuffers = "optimizer.buffers";

/// The name of buffer `b` of an optimizer of `kind` holding `count` buffers per parameter.
std::string state_name(const std::string& kind, std::size_t count, std::size_t b) {
  if ((kind == "adam" || kind == "adamw") && count == 2) return b == 0 ? "exp_avg" : "exp_avg_sq";
  if (kind == "sgd" && count == 1) return "momentum_buffer";
  return str("state", b);
}

std::string caller_name(int rank) { return str("caller/rank-", rank); }

/// Bytes as an I64 tensor: the length, then the bytes 8 to a word.
Tensor bytes_tensor(const std::string& bytes) {
  std::vector<std::int64_t> words(1 + (bytes.size() + 7) / 8, 0);
  words[0] = static_cast<std::int64_t>(bytes.size());
  std::memcpy(words.data() + 1, bytes.data(), bytes.size());
  return Tensor::from_vector<std::int64_t>(words, Shape{static_cast<std::int64_t>(words.size())});
}

std::string tensor_bytes(const Tensor& t, const std::string& origin) {
  const std::vector<std::int64_t> words = t.to_vector<std::int64_t>();
  if (words.empty() || words[0] < 0 ||
      static_cast<std::uint64_t>(words[0]) > 8 * (words.size() - 1)) {
    throw CheckpointError(str(origin, ": a malformed caller record"));
  }
  std::string bytes(static_cast<std::size_t>(words[0]), '\0');
  std::memcpy(bytes.data(), words.data() + 1, bytes.size());
  return bytes;
}

/// The flat elements [begin, begin + numel) of `t` (whole, or those elements already).
Tensor flat_part(const Tensor& t, std::int64_t begin, std::int64_t numel, std::int64_t whole,
                 const std::string& what) {
  const Tensor flat = t.contiguous().view(Shape{t.numel()});
  if (t.numel() == numel) return flat;
  RUCCL_CHECK(t.numel() == whole, CheckpointError, "save_zero_checkpoint: ", what, " has ",
              t.numel(), " elements; expected the whole parameter's ", whole, " or this shard's ",
              numel);
  return flat.narrow(0, begin, numel);
}

/// Throws on every rank when `failure` is not empty on any: the lowest failing rank's message.
void agree(Communicator& comm, const std::string& failure, const char* label) {
  const std::vector<std::string> all = all_gather_strings(comm, failure, label);
  for (const std::string& f : all) {
    if (!f.empty()) throw CheckpointError(f);
  }
}

}  // namespace

void save_zero_checkpoint(DataParallel& dp, const std::filesystem::path& dir,
                          const Optimizer& optimizer, const nn::Module& model, CallerState caller) {
  const int rank = dp.rank();
  const int world = dp.world_size();
  std::vector<TensorShard> shards;
  std::string failure;
  try {
    const OptimizerState state = optimizer.state();
    std::size_t buffers = 0;
    for (const auto& [id, slot] : state.slots) buffers = std::max(buffers, slot.buffers.size());
    const ZeroShard shard = ZeroShard::of(BucketPlan::whole(model), rank, world);
    std::map<ParamId, nn::Param> params;
    for (const auto& [path, p] : model.named_parameters()) {
      params.emplace(p.id(), p);
      if (!p.trainable() && rank == 0) {
        shards.push_back({str("param/", path), p.id(), p.shape().to_vector(),
                          ShardBox::whole(p.shape()), 0, p.value()});
      }
    }
    for (const ShardRange& range : shard.ranges()) {
      for (const ShardPiece& piece : range.pieces) {
        const nn::Param& p = params.at(piece.id);
        const std::vector<std::int64_t> shape = p.shape().to_vector();
        const ShardBox box = ShardBox::flat_range(piece.begin, piece.numel);
        shards.push_back({str("param/", piece.path), p.id(), shape, box, 0,
                          flat_part(p.value(), piece.begin, piece.numel, p.numel(), piece.path)});
        const auto slot = state.slots.find(piece.id);
        if (slot == state.slots.end()) continue;
        shards.push_back({str("steps/", piece.path),
                          p.id(),
                          {1},
                          ShardBox::whole(Shape{1}),
                          0,
                          Tensor::from_vector<std::int64_t>({slot->second.steps}, Shape{1})});
        for (std::size_t b = 0; b < slot->second.buffers.size(); ++b) {
          const std::string name = state_name(state.kind, buffers, b);
          shards.push_back(
              {str(name, "/", piece.path), p.id(), shape, box, 0,
               flat_part(slot->second.buffers[b].to_tensor(), piece.begin, piece.numel, p.numel(),
                         str("the ", name, " of '", piece.path, "' (ParamId ", p.id(), ")"))});
        }
      }
    }
    if (rank == 0) {
      for (const auto& [path, value] : model.named_buffers()) {
        shards.push_back({str("buffer/", path), 0, value.shape().to_vector(),
                          ShardBox::whole(value.shape()), 0, value});
      }
    }
    caller.rank = rank;
    caller.world_size = world;
    caller.set(kKind, state.kind);
    caller.set(kConfig, Tensor::from_vector<double>(
                            state.config, Shape{static_cast<std::int64_t>(state.config.size())}));
    caller.set(kBuffers, static_cast<std::int64_t>(buffers));
    const nn::Sequential no_model;
    const Tensor record = bytes_tensor(
        TrainingRecord::capture(no_model, nullptr, nullptr, nullptr, caller).serialize_payload());
    shards.push_back({caller_name(rank), 0, record.shape().to_vector(),
                      ShardBox::whole(record.shape()), 0, record});
  } catch (const Error& e) {
    failure = str("save_zero_checkpoint on rank ", rank, ": ", e.what());
  }
  agree(dp.communicator(), failure, "save_zero_checkpoint");
  ShardedCheckpoint::save(dp.communicator(), dir, shards);
}

CallerState load_zero_checkpoint(DataParallel& dp, const std::filesystem::path& dir,
                                 Optimizer& optimizer, nn::Module& model) {
  const int rank = dp.rank();
  const ShardedCheckpoint ckpt = ShardedCheckpoint::open_on_every_rank(dp.communicator(), dir);
  const std::vector<std::string> held = ckpt.names();
  const std::set<std::string> names(held.begin(), held.end());
  CallerState caller;
  std::vector<std::pair<nn::Param, Tensor>> values;
  std::vector<std::pair<std::string, Tensor>> buffers;
  OptimizerState state;
  std::string failure;
  std::string where = "its caller record";
  try {
    const int source = ckpt.world_size() == dp.world_size() ? rank : 0;
    const TrainingRecord record = TrainingRecord::parse_payload(
        tensor_bytes(ckpt.read_whole(caller_name(source)), caller_name(source)),
        str(dir, " ", caller_name(source)));
    caller = record.caller();
    state.kind = caller.get<std::string>(kKind);
    state.config = caller.get<Tensor>(kConfig).to_vector<double>();
    const auto buffer_count = caller.get<std::size_t>(kBuffers);
    for (const char* key : {kKind, kConfig, kBuffers}) caller.erase(key);
    // The parameters, whole (every rank holds the whole model).
    std::map<ParamId, std::string> paths;
    for (const auto& [path, p] : model.named_parameters()) {
      where = str("parameter '", path, "' (ParamId ", p.id(), ")");
      paths.emplace(p.id(), path);
      const Tensor v = ckpt.read_whole(str("param/", path));
      RUCCL_CHECK(v.shape() == p.shape() && v.dtype() == p.dtype(), CheckpointError, "expected ",
                  p.dtype(), " ", p.shape().to_string(), ", got ", v.dtype(), " ",
                  v.shape().to_string());
      values.emplace_back(p, v);
    }
    for (const auto& [path, value] : model.named_buffers()) {
      where = str("buffer '", path, "'");
      const Tensor v = ckpt.read_whole(str("buffer/", path));
      RUCCL_CHECK(v.shape() == value.shape() && v.dtype() == value.dtype(), CheckpointError,
                  "expected ", value.dtype(), " ", value.shape().to_string(), ", got ", v.dtype(),
                  " ", v.shape().to_string());
      buffers.emplace_back(path, v);
    }
    // The optimizer state of what this rank steps: its ZeRO shard's elements, or everything.
    const auto restore_slot = [&](ParamId id, const std::string& path, const ShardBox* box) {
      where = str("the optimizer state of parameter '", path, "' (ParamId ", id, ")");
      if (!names.count(str("steps/", path))) return;  // never stepped
      ParamSlotState slot;
      slot.steps = ckpt.read_whole(str("steps/", path)).item<std::int64_t>();
      for (std::size_t b = 0; b < buffer_count; ++b) {
        const std::string name = str(state_name(state.kind, buffer_count, b), "/", path);
        slot.buffers.push_back(TensorBlob::from_tensor(box != nullptr ? ckpt.read(name, *box)
                                                                      : ckpt.read_whole(name)));
      }
      state.slots.emplace(id, std::move(slot));
    };
    if (dp.options().zero_stage > 0) {
      for (const ShardRange& range : dp.shard().ranges()) {
        for (const ShardPiece& piece : range.pieces) {
          const ShardBox box = ShardBox::flat_range(piece.begin, piece.numel);
          restore_slot(piece.id, piece.path, &box);
        }
      }
    } else {
      for (const nn::Param& p : model.parameters()) {
        if (p.trainable()) restore_slot(p.id(), paths.at(p.id()), nullptr);
      }
    }
    where = "the optimizer";
    RUCCL_CHECK(state.kind == optimizer.kind(), CheckpointError, "expected a '", optimizer.kind(),
                "' state, got '", state.kind, "'");
    RUCCL_CHECK(
        state.config == optimizer.config(), CheckpointError,
        "the state was saved with other hyper-parameters: ",
        hyper_parameter_differences(optimizer.config_names(), state.config, optimizer.config()));
  } catch (const Error& e) {
    failure = str("load_zero_checkpoint on rank ", rank, ": ", where, ": ", e.what());
  }
  agree(dp.communicator(), failure, "load_zero_checkpoint");
  optimizer.load_state(state);
  autodiff::NoGradGuard no_grad;
  for (auto& [p, v] : values) p.value().copy_(v.to(p.value().device()));
  for (const auto& [path, v] : buffers) model.set_buffer(path, v.to(model.buffer(path).device()));
  return caller;
}

}  // namespace ruccl::optim
