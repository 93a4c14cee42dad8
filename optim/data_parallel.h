#pragma once
// DataParallel: token-weighted replicas. Every rank holds a replica of the model, computes the
// gradient of its local loss over its own data (w_r samples or tokens), and reduce() turns the
// ranks' gradients into the gradient of the GLOBAL MEAN loss over all Σ w_r samples — what one
// replica computes on the whole global batch. The call says how each rank reduced its loss:
//
//   LossReduction::Mean  (G_r = ∇ of rank r's mean loss, cross_entropy's default):
//       g = (w_0·G_0 + w_1·G_1 + ... + w_{W-1}·G_{W-1}) / (w_0 + ... + w_{W-1})
//   LossReduction::Sum   (G_r = ∇ of rank r's loss sum, Reduction::Sum):
//       g = (G_0 + G_1 + ... + G_{W-1}) / (w_0 + ... + w_{W-1})
//
// With equal counts the Mean case is exactly PyTorch DDP's average of the ranks' gradients; with
// uneven counts each rank is weighted by its count (DDP's plain average would over-weight a
// small shard). A rank with w_r = 0 contributes zeros (it may have no gradient at all); a total
// weight of 0 is an error. Frozen parameters are never reduced; a tied parameter is reduced once.
//
//   DataParallel dp = DataParallel::initialize(comm, model, /*root=*/0);   // same start on all
//   Var loss = cross_entropy(model.forward(x), y);                         // local MEAN
//   loss.backward();
//   GradientsParams g = dp.reduce(model, GradientsParams::from_module(model), batch_size,
//                                 LossReduction::Mean);
//   optimizer.step(lr, model, g);
//
// With DataParallelOptions::zero_stage (ZeRO, docs/training.md "ZeRO") each rank keeps the
// optimizer state of its shard only (stage 1) and its shard of the reduced gradients (stage 2,
// backward_shard); dp.step(optimizer, lr, model, g) steps the shard and all-gathers the
// parameters, bit-identical to the plain step at any world size.
//
// Every contract error (replicas that differ, a missing or extra gradient, a bad weight, a zero
// total) raises CollectiveError on every rank together, with the same message naming the rank and
// the problem, before any gradient moves; the communicator stays usable afterwards.
#include <cstdint>
#include <map>
#include <string>

#include "autodiff/nn/module.h"
#include "autodiff/var.h"
#include "collective/communicator.h"
#include "collective/work.h"
#include "optim/bucket_plan.h"
#include "optim/gradients_accumulator.h"
#include "optim/gradients_params.h"
#include "optim/optimizer.h"
#include "optim/zero_shard.h"

namespace ruccl::optim {

// LossReduction (optim/gradients_accumulator.h) says how each rank reduced its local loss over
// its `local_weight` samples. reduce() has no default: a mean loss reduced as a sum trains with a
// gradient W times too small.

/// What reduce() does with a trainable parameter that has no local gradient on a rank whose
/// weight is not zero.
enum class MissingGradientPolicy {
  Error,  ///< raise CollectiveError (InvalidArgument) on every rank
  Zero,   ///< treat it as a zero gradient (a parameter this rank's data did not reach)
};

/// Options of DataParallel::initialize.
struct DataParallelOptions {
  /// DataParallel::backward reduces bucket by bucket while backward runs (docs/training.md,
  /// "Overlapped reduction"); false: it runs backward, then reduce().
  bool overlap = false;
  /// The bucket plan's caps (optim/bucket_plan.h): 25 MiB, and 1 MiB for the first bucket.
  std::int64_t bucket_cap_bytes = 25LL << 20;
  std::int64_t first_bucket_cap_bytes = 1LL << 20;
  /// Each bucket folds its elements over the ranks as reduce() does (its range of reduce()'s
  /// buffer is its fold window): the overlapped result equals reduce() bit for bit for every plan
  /// at every world size (docs/training.md, "Exactness"). false: a bucket folds as a buffer of its
  /// own (the ring's balanced chunks at 3+ ranks; bit-identical to reduce() with 2 ranks or one
  /// bucket, the same on every rank and run always).
  bool exact_buckets = true;
  /// ZeRO (docs/training.md, "ZeRO"): 0 off; 1 each rank keeps the optimizer state of its shard
  /// only (step() steps the shard, then all-gathers the parameters); 2 also the gradients: the
  /// *_shard calls reduce each gradient element to the one rank that steps it (bucketed and
  /// overlapped with backward under `overlap`). The shards are the chunks of reduce()'s
  /// all_reduce, so every stage is bit-identical to plain DataParallel at any world size (ZeRO-2's
  /// reductions always fold as reduce() does, whatever exact_buckets says). Under stage 2,
  /// backward() and reduce() still return the whole reduced gradients (stage 1's memory).
  int zero_stage = 0;
};

/// Token-weighted data parallelism over any Communicator. See the file comment.
class DataParallel {
 public:
  /// Checks on every rank that the replicas agree (module paths, ParamIds, shapes, dtypes, frozen
  /// flags, tied aliases, buffer paths, shapes and dtypes, root) and that nothing is wrong locally
  /// (duplicate ParamIds, a parameter or buffer on another device than the communicator's); any
  /// problem raises CollectiveError on every rank naming the rank and the difference, before any
  /// parameter moves. Then broadcasts every parameter from `root` (once per tied parameter,
  /// frozen ones too), then every buffer (Module::named_buffers: BatchNorm's running statistics).
  static DataParallel initialize(Communicator comm, nn::Module& model, int root = 0);
  /// initialize() with options: the bucket plan (BucketPlan::of(model, caps)) and the overlap
  /// flag are agreed too; ranks whose plans or flags differ fail together naming them.
  static DataParallel initialize(Communicator comm, nn::Module& model, int root,
                                 const DataParallelOptions& options);

  /// Runs `loss`'s backward and returns reduce(model, GradientsParams::from_module(model),
  /// local_weight, reduction, policy) -- with options.overlap, bucket by bucket while backward
  /// runs: each gradient is copied (and weighted) into its bucket as soon as it is final, and a
  /// bucket whose gradients are all final is started (all_reduce_async), buckets in plan order
  /// on every rank, each folded as reduce() folds its elements (its range of reduce()'s buffer is
  /// its fold window): bit-identical to reduce() for every plan at any world size
  /// (docs/training.md, "Exactness").
  /// A trainable parameter no gradient reached is, under MissingGradientPolicy::Error, one
  /// CollectiveError on every rank naming it (never a hang); Zero treats it as zeros. A rank
  /// with no data passes an undefined `loss` and weight 0 (it still takes part).
  ///
  ///   GradientsParams g = dp.backward(model, cross_entropy(model.forward(x), y), batch_size,
  ///                                   LossReduction::Mean);
  GradientsParams backward(const nn::Module& model, const autodiff::Var& loss, double local_weight,
                           LossReduction reduction,
                           MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// The last micro-batch of an accumulation window kept by the caller: `window`
  /// (accumulator.take()) holds the earlier micro-batches, which communicated nothing; this
  /// backward's gradients are folded into it exactly as GradientsAccumulator::accumulate folds
  /// them, and the one reduction of the whole window overlaps this backward. Equal to
  /// accumulate() then reduce(model, take()). no_sync() is the same without the accumulator.
  GradientsParams backward(const nn::Module& model, const autodiff::Var& loss, double local_weight,
                           LossReduction reduction, const AccumulatedGradients& window,
                           MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// PyTorch DDP's `with ddp.no_sync(): loss.backward()`: runs `loss`'s backward and folds its
  /// gradients (of a loss reduced as `reduction` over `local_weight` samples or tokens) into the
  /// accumulation window this DataParallel holds, as GradientsAccumulator::accumulate does;
  /// nothing is communicated. The model's gradients are cleared afterwards (they are in the
  /// window), so the next micro-batch needs no zero_grad. The next backward(model, loss,
  /// local_weight, reduction) folds the held window into its own micro-batch and reduces the
  /// whole window once, overlapped with its backward under options.overlap. A micro-batch with
  /// no samples passes weight 0 (its loss, if any, is still run backward and then ignored; an
  /// undefined loss runs nothing). ValueError for a bad weight, before anything runs.
  ///
  ///   for (int k = 0; k + 1 < K; ++k) dp.no_sync(model, loss_of(k), n[k], LossReduction::Mean);
  ///   GradientsParams g = dp.backward(model, loss_of(K - 1), n[K - 1], LossReduction::Mean);
  void no_sync(const nn::Module& model, const autodiff::Var& loss, double local_weight,
               LossReduction reduction);
  /// The held no_sync window (empty outside one): pass it to TrainingRecord::capture and
  /// restore to checkpoint in the middle of a window.
  GradientsAccumulator& accumulator() { return window_; }
  const GradientsAccumulator& accumulator() const { return window_; }

  /// The bucket plan agreed at initialize.
  const BucketPlan& bucket_plan() const { return plan_; }
  const DataParallelOptions& options() const { return options_; }

  /// The gradient of the global mean loss for every trainable parameter (see the file comment),
  /// in the parameter's dtype, reduced in it too for F32 and F64 (an F64 model matches a single
  /// replica to F64 rounding); F16 and BF16 gradients are accumulated in F32. `grads` holds this
  /// rank's gradients of its local loss, reduced over its `local_weight` samples or tokens (finite,
  /// >= 0) as `loss` says.
  ///
  ///   dp.reduce(model, GradientsParams::from_module(model), batch_size, LossReduction::Mean);
  GradientsParams reduce(const nn::Module& model, const GradientsParams& grads, double local_weight,
                         LossReduction loss,
                         MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// Like reduce(), but reduced in F32 and returned as F32 whatever the parameters' dtype (half
  /// the bytes on the wire for an F64 model).
  GradientsParams reduce_fp32(const nn::Module& model, const GradientsParams& grads,
                              double local_weight, LossReduction loss,
                              MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// The gradient of the global mean loss over every micro-batch of every rank's accumulation
  /// window (GradientsAccumulator::take): reduce() of the window's summed-loss gradient with its
  /// weight. A rank whose window is empty (no micro-batch, or only zero-weight ones) contributes
  /// nothing.
  ///
  ///   dp.reduce(model, accumulator.take());
  GradientsParams reduce(const nn::Module& model, AccumulatedGradients window,
                         MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// reduce_fp32() of an accumulation window.
  GradientsParams reduce_fp32(const nn::Module& model, AccumulatedGradients window,
                              MissingGradientPolicy policy = MissingGradientPolicy::Error);

  /// ZeRO-2: backward() that leaves this rank only its shard of the reduced gradients: each
  /// gradient element is reduced to the rank that steps it (one windowed reduce per rank whose
  /// shard a bucket meets, overlapped with backward under options.overlap), folded as reduce()
  /// folds it. The parameters' gradients are released as they are packed. Same contract and
  /// errors as backward(); a held no_sync window is reduced with it. ValueError unless
  /// options.zero_stage is 2.
  ///
  ///   GradientShard g = dp.backward_shard(model, loss, batch_size, LossReduction::Sum);
  ///   dp.step(optimizer, lr, model, g);
  GradientShard backward_shard(const nn::Module& model, const autodiff::Var& loss,
                               double local_weight, LossReduction reduction,
                               MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// ZeRO-2: reduce() that leaves this rank only its shard (see backward_shard).
  GradientShard reduce_shard(const nn::Module& model, const GradientsParams& grads,
                             double local_weight, LossReduction loss,
                             MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// ZeRO-2: reduce_shard() of an accumulation window (GradientsAccumulator::take).
  GradientShard reduce_shard(const nn::Module& model, AccumulatedGradients window,
                             MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// The optimizer step of every stage: without ZeRO optimizer.step(lr, model, grads); with
  /// ZeRO this rank steps its shard of `grads` (the reduced gradients of backward() or reduce())
  /// and the parameters are all-gathered. Every rank must call it.
  void step(Optimizer& optimizer, double lr, nn::Module& model, const GradientsParams& grads);
  /// ZeRO: steps this rank's shard (Optimizer::step_range per piece) and all-gathers the
  /// parameters (one all_gather per accumulation dtype). The first step after initialize or
  /// gather_optimizer_state cuts the optimizer's state (a restored whole one) to the shard, agreed:
  /// a state of another shard or world size is one CheckpointError on every rank naming the rank.
  /// ValueError without ZeRO.
  void step(Optimizer& optimizer, double lr, nn::Module& model, const GradientShard& grads);
  /// ZeRO: gives every rank the whole optimizer state (all-gathered from the shards, as plain
  /// DataParallel's optimizer would hold it), to checkpoint with TrainingRecord::capture; the
  /// next step() cuts it back to the shard. Nothing without ZeRO. Every rank must call it.
  void gather_optimizer_state(Optimizer& optimizer, const nn::Module& model);
  /// clip_grad_norm_ (optim/clip_grad_norm.h) of the step's reduced gradients, with the norm
  /// summed as every ZeRO stage sums it: each rank's shard (the squares of its pieces in F64,
  /// grad_norm_squared), then the ranks' sums in rank order. So plain, ZeRO-1 and ZeRO-2 clip to
  /// the same bits at any world size (the summation order differs from clip_grad_norm_(grads)'s:
  /// the norms agree to F64 rounding). Returns the norm before clipping. This overload takes
  /// whole gradients (backward(), reduce()) and communicates nothing.
  double clip_grad_norm_(const nn::Module& model, GradientsParams& grads, double max_norm) const;
  /// The same for a ZeRO-2 shard: one all_gather of the ranks' sums; every rank must call it.
  double clip_grad_norm_(GradientShard& grads, double max_norm);
  /// This rank's ZeRO shard (empty without ZeRO).
  const ZeroShard& shard() const { return shards_.empty() ? no_shard_ : shards_[rank()]; }

  /// Σ_r w_r of the last reduce (0 before the first).
  double last_total_weight() const { return last_total_weight_; }
  Communicator& communicator() { return comm_; }
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }
  int root() const { return root_; }

 private:
  DataParallel(Communicator comm, int root, DataParallelOptions options, BucketPlan plan)
      : comm_(std::move(comm)), root_(root), options_(options), plan_(std::move(plan)) {}
  GradientsParams overlapped_backward(const nn::Module& model, const autodiff::Var& loss,
                                      double local_weight, LossReduction reduction,
                                      const AccumulatedGradients* window,
                                      MissingGradientPolicy policy, GradientShard* shard = nullptr);
  /// Copies the shards' parameter values to every rank (ZeRO).
  void gather_parameters(nn::Module& model);
  void require_zero(const char* what, int stage) const;
  /// Cuts whatever state `optimizer` holds (a full one: restored, gathered) to this rank's shard.
  void cut_optimizer_state(Optimizer& optimizer, const nn::Module& model) const;
  /// What a reduction other than backward(model, loss, local_weight, reduction) reports on every
  /// rank while this rank holds a no_sync window ("" when it holds none).
  std::string held_window_problem() const;
  GradientsParams reduce_impl(const nn::Module& model, const GradientsParams& grads,
                              double local_weight, LossReduction loss, MissingGradientPolicy policy,
                              bool fp32, GradientShard* shard = nullptr);

  Communicator comm_;
  int root_;
  double last_total_weight_ = 0.0;
  std::map<DType, Tensor> flat_;  // the packed gradients per accumulation dtype, reused
  DataParallelOptions options_;
  BucketPlan plan_;
  std::vector<Tensor> buckets_;    // one buffer per bucket of plan_ (gradients, then flags), reused
  GradientsAccumulator window_;    // the no_sync micro-batches not yet reduced
  std::vector<ZeroShard> shards_;  // ZeRO: every rank's shard, by rank
  ZeroShard no_shard_;
  bool cut_state_ = true;  // ZeRO: the next step() first cuts the optimizer's state to the shard
};

}  // namespace ruccl::optim
