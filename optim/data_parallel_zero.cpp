// DataParallel's ZeRO stages (docs/training.md, "ZeRO"): the sharded reductions, the sharded
// optimizer step and the parameter gather, the optimizer state gathered for a checkpoint.
#include <algorithm>
#include <cmath>
#include <map>

#include "autodiff/grad_mode.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/clip_grad_norm.h"
#include "optim/data_parallel.h"
#include "optim/rank_agreement.h"

namespace ruccl::optim {
namespace {

constexpr const char* kStepLabel = "DataParallel::step";

/// ParamId -> the model's parameter.
std::map<ParamId, nn::Param> params_by_id(const nn::Module& model) {
  std::map<ParamId, nn::Param> out;
  for (const auto& [path, p] : model.named_parameters()) out.emplace(p.id(), p);
  return out;
}

/// The parameter's value as one flat tensor that writes through to it (the value itself when it
/// is contiguous, else a contiguous copy the caller sets back).
Tensor flat_value(const nn::Param& p) {
  const Tensor& value = p.value();
  return (value.is_contiguous() ? value : value.contiguous()).view(Shape{value.numel()});
}

/// Rank `shard`'s pieces of whole gradients: 1-D views of its elements.
GradientsParams pieces_of(const ZeroShard& shard, const GradientsParams& grads) {
  GradientsParams out;
  for (const ShardRange& range : shard.ranges()) {
    for (const ShardPiece& piece : range.pieces) {
      const auto g = grads.get(piece.id);
      if (!g) continue;
      out.insert(piece.id,
                 g->contiguous().view(Shape{g->numel()}).narrow(0, piece.begin, piece.numel));
    }
  }
  return out;
}

}  // namespace

double DataParallel::clip_grad_norm_(const nn::Module& model, GradientsParams& grads,
                                     double max_norm) const {
  const BucketPlan whole = BucketPlan::whole(model);
  double total = 0.0;  // the ranks' sums in rank order, as the sharded overload adds them
  for (int r = 0; r < world_size(); ++r) {
    total += grad_norm_squared(pieces_of(ZeroShard::of(whole, r, world_size()), grads));
  }
  const double norm = std::sqrt(total);
  scale_to_max_norm_(grads, max_norm, norm);
  return norm;
}

double DataParallel::clip_grad_norm_(GradientShard& grads, double max_norm) {
  require_zero("clip_grad_norm_ of a GradientShard", 2);
  const double mine = grad_norm_squared(grads.pieces);
  const std::vector<double> sums =
      comm_
          .all_gather(Tensor::from_vector<double>({mine}, Shape{1}, comm_.device()),
                      CallOptions().with_label("DataParallel::clip_grad_norm_"))
          .to(Device::cpu())
          .to_vector<double>();
  double total = 0.0;
  for (double s : sums) total += s;  // rank order, on every rank
  const double norm = std::sqrt(total);
  scale_to_max_norm_(grads.pieces, max_norm, norm);
  return norm;
}

void DataParallel::require_zero(const char* what, int stage) const {
  RUCCL_CHECK(options_.zero_stage >= stage, ValueError, "DataParallel::", what,
              ": expected DataParallelOptions::zero_stage >= ", stage, ", got ",
              options_.zero_stage);
}

GradientShard DataParallel::reduce_shard(const nn::Module& model, const GradientsParams& grads,
                                         double local_weight, LossReduction loss,
                                         MissingGradientPolicy policy) {
  require_zero("reduce_shard", 2);
  GradientShard out;
  reduce_impl(model, grads, local_weight, loss, policy, /*fp32=*/false, &out);
  return out;
}

GradientShard DataParallel::reduce_shard(const nn::Module& model, AccumulatedGradients window,
                                         MissingGradientPolicy policy) {
  return reduce_shard(model, window.sum, window.weight, LossReduction::Sum, policy);
}

void DataParallel::step(Optimizer& optimizer, double lr, nn::Module& model,
                        const GradientsParams& grads) {
  if (options_.zero_stage == 0) {
    optimizer.step(lr, model, grads);
    return;
  }
  // ZeRO-1: this rank's elements of the reduced gradients (a parameter without a gradient keeps
  // its value and state, as in Optimizer::step).
  GradientShard mine;
  mine.pieces = pieces_of(shard(), grads);
  for (const ShardRange& range : shard().ranges()) {
    for (const ShardPiece& piece : range.pieces) mine.begin[piece.id] = piece.begin;
  }
  step(optimizer, lr, model, mine);
}

void DataParallel::step(Optimizer& optimizer, double lr, nn::Module& model,
                        const GradientShard& grads) {
  require_zero("step of a GradientShard", 1);
  if (cut_state_) {  // the first step after a restore or a gather: agreed, as it may fail
    std::string problem;
    try {
      cut_optimizer_state(optimizer, model);
    } catch (const Error& e) {
      problem = e.what();
    }
    std::string message;
    const auto texts = all_gather_strings(comm_, problem, kStepLabel);
    for (std::size_t r = 0; r < texts.size(); ++r) {
      if (!texts[r].empty())
        message += str(message.empty() ? "" : "; ", "rank ", r, ": ", texts[r]);
    }
    if (!message.empty()) throw CheckpointError(message);
    cut_state_ = false;
  }
  const auto params = params_by_id(model);
  for (const auto& [id, g] : grads.pieces.entries()) {
    const auto p = params.find(id);
    const auto begin = grads.begin.find(id);
    RUCCL_CHECK(p != params.end() && begin != grads.begin.end(), ValueError, kStepLabel,
                ": expected the shard's gradients of the model's parameters, got one for ParamId ",
                id);
    nn::Param param = p->second;
    optimizer.step_range(lr, param, begin->second, g);
  }
  gather_parameters(model);
}

void DataParallel::gather_parameters(nn::Module& model) {
  autodiff::NoGradGuard no_grad;
  const auto params = params_by_id(model);
  const std::size_t ranges = shard().ranges().size();
  for (std::size_t i = 0; i < ranges; ++i) {
    const ShardRange& mine = shard().ranges()[i];
    // This rank's parameter elements at their places in its chunk, padded to the largest chunk.
    Tensor local = Tensor::zeros(Shape{mine.padded}, mine.dtype, comm_.device());
    for (const ShardPiece& piece : mine.pieces) {
      local.narrow(0, piece.offset, piece.numel)
          .copy_(flat_value(params.at(piece.id)).narrow(0, piece.begin, piece.numel));
    }
    const Tensor all = comm_.all_gather(local, CallOptions().with_label(kStepLabel));
    std::map<ParamId, Tensor> copies;  // non-contiguous parameters, set back below
    for (int r = 0; r < world_size(); ++r) {
      if (r == rank()) continue;
      for (const ShardPiece& piece : shards_[static_cast<std::size_t>(r)].ranges()[i].pieces) {
        const nn::Param& p = params.at(piece.id);
        Tensor flat = p.value().is_contiguous() ? flat_value(p) : Tensor();
        if (!flat.defined()) {
          auto it = copies.find(piece.id);
          if (it == copies.end()) it = copies.emplace(piece.id, flat_value(p)).first;
          flat = it->second;
        }
        flat.narrow(0, piece.begin, piece.numel)
            .copy_(all.narrow(0, r * mine.padded + piece.offset, piece.numel));
      }
    }
    for (auto& [id, flat] : copies) {
      nn::Param p = params.at(id);
      p.set_value(flat.view(p.shape()));
    }
  }
}

void DataParallel::gather_optimizer_state(Optimizer& optimizer, const nn::Module& model) {
  if (options_.zero_stage == 0) return;
  const OptimizerState local = optimizer.state();
  const auto params = params_by_id(model);
  // How many buffers a slot holds and each parameter's step count, agreed: the largest over the
  // ranks (a rank holds a slot only for the parameters its shard meets).
  std::int64_t buffers = 0;
  for (const auto& [id, slot] : local.slots) {
    buffers = std::max<std::int64_t>(buffers, static_cast<std::int64_t>(slot.buffers.size()));
  }
  std::vector<std::int64_t> counts;  // the buffer count, then one step count per parameter
  std::vector<ParamId> ids;
  counts.push_back(buffers);
  for (const auto& [id, p] : params) {
    if (!p.trainable()) continue;
    const auto it = local.slots.find(id);
    counts.push_back(it == local.slots.end() ? 0 : it->second.steps);
    ids.push_back(id);
  }
  const std::vector<std::int64_t> agreed =
      comm_
          .all_reduce(Tensor::from_vector<std::int64_t>(counts, comm_.device()),
                      ReduceOperation::Max, CallOptions().with_label(kStepLabel))
          .to(Device::cpu())
          .to_vector<std::int64_t>();
  OptimizerState full{local.kind, local.config, {}};
  std::map<ParamId, std::vector<Tensor>> whole;  // ParamId -> its full buffers (flat)
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (agreed[k + 1] > 0) full.slots[ids[k]].steps = agreed[k + 1];
  }
  for (std::int64_t b = 0; b < agreed[0]; ++b) {
    for (std::size_t i = 0; i < shard().ranges().size(); ++i) {
      const ShardRange& mine = shard().ranges()[i];
      Tensor local_chunk = Tensor::zeros(Shape{mine.padded}, mine.dtype, comm_.device());
      for (const ShardPiece& piece : mine.pieces) {
        const auto slot = local.slots.find(piece.id);
        if (slot == local.slots.end() || slot->second.buffers.empty()) continue;
        const Tensor state = slot->second.buffers[static_cast<std::size_t>(b)].to_tensor();
        const Tensor flat = state.contiguous().view(Shape{state.numel()});
        // A full state (not stepped since a restore) holds the whole parameter: its range.
        local_chunk.narrow(0, piece.offset, piece.numel)
            .copy_(state.numel() == piece.numel ? flat : flat.narrow(0, piece.begin, piece.numel));
      }
      const Tensor all = comm_.all_gather(local_chunk, CallOptions().with_label(kStepLabel));
      for (int r = 0; r < world_size(); ++r) {
        for (const ShardPiece& piece : shards_[static_cast<std::size_t>(r)].ranges()[i].pieces) {
          if (!full.slots.count(piece.id)) continue;  // never stepped
          auto& buffers_of = whole[piece.id];
          if (buffers_of.size() <= static_cast<std::size_t>(b)) {
            buffers_of.push_back(Tensor::zeros(Shape{params.at(piece.id).numel()}, mine.dtype));
          }
          buffers_of[static_cast<std::size_t>(b)]
              .narrow(0, piece.begin, piece.numel)
              .copy_(all.narrow(0, r * mine.padded + piece.offset, piece.numel).to(Device::cpu()));
        }
      }
    }
  }
  for (auto& [id, slot] : full.slots) {
    for (const Tensor& t : whole[id]) {
      slot.buffers.push_back(TensorBlob::from_tensor(t.view(params.at(id).shape())));
    }
  }
  optimizer.load_state(full);
  cut_state_ = true;
}

void DataParallel::cut_optimizer_state(Optimizer& optimizer, const nn::Module& model) const {
  OptimizerState state = optimizer.state();
  if (state.slots.empty()) return;
  const auto params = params_by_id(model);
  std::map<ParamId, ParamSlotState> mine;
  for (const ShardRange& range : shard().ranges()) {
    for (const ShardPiece& piece : range.pieces) {
      const auto it = state.slots.find(piece.id);
      if (it == state.slots.end()) continue;
      ParamSlotState slot{it->second.steps, {}};
      for (const TensorBlob& blob : it->second.buffers) {
        const Tensor t = blob.to_tensor();
        if (t.numel() == piece.numel) {  // this shard's state already
          slot.buffers.push_back(blob);
          continue;
        }
        RUCCL_CHECK(t.numel() == params.at(piece.id).numel(), CheckpointError, kStepLabel,
                    ": the optimizer state of '", piece.path, "' (ParamId ", piece.id, ") has ",
                    t.numel(), " elements; expected the whole parameter's ",
                    params.at(piece.id).numel(), " or this rank's ", piece.numel,
                    " (a state saved for another shard or world size)");
        slot.buffers.push_back(TensorBlob::from_tensor(
            t.contiguous().view(Shape{t.numel()}).narrow(0, piece.begin, piece.numel).clone()));
      }
      mine.emplace(piece.id, std::move(slot));
    }
  }
  state.slots = std::move(mine);
  optimizer.load_state(state);
}

}  // namespace ruccl::optim
