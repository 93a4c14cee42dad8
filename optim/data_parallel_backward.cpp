// DataParallel::backward: backward with the gradient-ready hook that reduces bucket by bucket
// (docs/training.md, "Overlapped reduction").
//
// One step, on every rank:
//   1. all_gather_async of two words (the local weight's bits, a local-problem flag), started
//      before backward: the total weight is known before any division, without a round trip at
//      the end.
//   2. backward with the hook. When a parameter's gradient is final, the hook writes its bucket
//      segment once (the weighted gradient, folded with the accumulation window's as
//      GradientsAccumulator::accumulate does) and its flag word; a bucket whose entries are all
//      written is started (all_reduce_async, Sum) once every bucket before it in the plan is.
//      A started bucket is never written again (its progress thread reads it).
//   3. After backward (or when it threw), the entries no gradient reached are written (zeros,
//      flag 1 when they are an error), the rest of the buckets are started, and every handle is
//      waited for: every rank always starts every bucket, in plan order, so nothing hangs.
//   4. The summed flags (one F32/F64 word per parameter after the bucket's gradients: how many
//      ranks lacked it) are the same on every rank, so the missing-gradient error is too.
// Under ZeRO-2 (backward_shard) a started bucket is reduced to the owners of its elements
// (optim/zero_reduce.h) instead of all-reduced, the hook releases each gradient once packed, and
// the flag words travel in one all_reduce of their own after backward.
#include <bit>
#include <cmath>
#include <exception>
#include <unordered_map>

#include "optim/data_parallel.h"
#include "optim/rank_agreement.h"
#include "optim/zero_reduce.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::optim {
namespace {

constexpr const char* kBackwardLabel = "DataParallel::backward";

/// Folds the last micro-batch into a window exactly as GradientsAccumulator::accumulate does.
GradientsParams fold_window(const AccumulatedGradients& window, const GradientsParams& grads,
                            double weight, LossReduction reduction) {
  GradientsParams out = window.sum;
  if (!(weight > 0.0)) return out;
  const bool scale = reduction == LossReduction::Mean && weight != 1.0;
  for (const auto& [id, g] : grads.entries()) {
    Tensor term = scale ? mul(g, weight) : g;
    const auto prev = window.sum.get(id);
    out.remove(id);
    out.insert(id, prev ? add(*prev, term) : term);
  }
  return out;
}

}  // namespace

void DataParallel::no_sync(const nn::Module& model, const autodiff::Var& loss, double local_weight,
                           LossReduction reduction) {
  RUCCL_CHECK(std::isfinite(local_weight) && local_weight >= 0.0, ValueError,
              "DataParallel::no_sync: expected a finite local weight >= 0 (the micro-batch's "
              "samples or tokens), got ",
              local_weight);
  if (!loss.defined()) {
    window_.accumulate(GradientsParams(), local_weight, reduction);
    return;
  }
  loss.backward();
  window_.accumulate(GradientsParams::from_module(model), local_weight, reduction);
  for (nn::Param p : model.parameters()) p.zero_grad();  // the window holds them now
}

std::string DataParallel::held_window_problem() const {
  if (window_.empty()) return "";
  return str("a no_sync window of ", window_.micro_batches(),
             " micro-batch(es) is held; finish it with DataParallel::backward(model, loss, "
             "local_weight, reduction), the call that reduces it");
}

GradientsParams DataParallel::backward(const nn::Module& model, const autodiff::Var& loss,
                                       double local_weight, LossReduction reduction,
                                       MissingGradientPolicy policy) {
  if (!window_.empty()) {  // the last micro-batch of a no_sync window
    return backward(model, loss, local_weight, reduction, window_.take(), policy);
  }
  if (options_.overlap) {
    return overlapped_backward(model, loss, local_weight, reduction, nullptr, policy);
  }
  if (!loss.defined()) return reduce(model, GradientsParams(), local_weight, reduction, policy);
  loss.backward();
  return reduce(model, GradientsParams::from_module(model), local_weight, reduction, policy);
}

GradientsParams DataParallel::backward(const nn::Module& model, const autodiff::Var& loss,
                                       double local_weight, LossReduction reduction,
                                       const AccumulatedGradients& window,
                                       MissingGradientPolicy policy) {
  if (options_.overlap) {
    return overlapped_backward(model, loss, local_weight, reduction, &window, policy);
  }
  if (loss.defined()) loss.backward();
  const bool weight_ok = std::isfinite(local_weight) && local_weight >= 0.0;
  AccumulatedGradients all;
  all.sum =
      fold_window(window, loss.defined() ? GradientsParams::from_module(model) : GradientsParams(),
                  local_weight, reduction);
  all.weight = weight_ok ? window.weight + local_weight : local_weight;  // a bad one is reported
  return reduce(model, std::move(all), policy);
}

GradientShard DataParallel::backward_shard(const nn::Module& model, const autodiff::Var& loss,
                                           double local_weight, LossReduction reduction,
                                           MissingGradientPolicy policy) {
  require_zero("backward_shard", 2);
  GradientShard out;
  const bool held = !window_.empty();  // the last micro-batch of a no_sync window
  const AccumulatedGradients window = held ? window_.take() : AccumulatedGradients{};
  if (options_.overlap) {
    overlapped_backward(model, loss, local_weight, reduction, held ? &window : nullptr, policy,
                        &out);
    return out;
  }
  // backward()'s arithmetic, then the sharded reduction.
  if (loss.defined()) loss.backward();
  const GradientsParams grads =
      loss.defined() ? GradientsParams::from_module(model) : GradientsParams();
  for (nn::Param p : model.parameters()) p.zero_grad();  // only `grads` holds them now
  if (!held) {
    reduce_impl(model, grads, local_weight, reduction, policy, /*fp32=*/false, &out);
    return out;
  }
  const bool weight_ok = std::isfinite(local_weight) && local_weight >= 0.0;
  reduce_impl(model, fold_window(window, grads, local_weight, reduction),
              weight_ok ? window.weight + local_weight : local_weight, LossReduction::Sum, policy,
              /*fp32=*/false, &out);
  return out;
}

GradientsParams DataParallel::overlapped_backward(
    const nn::Module& model, const autodiff::Var& loss, double weight, LossReduction reduction,
    const AccumulatedGradients* window, MissingGradientPolicy policy, GradientShard* shard) {
  const std::vector<Bucket>& buckets = plan_.buckets();
  // Where each parameter's leaf lives in the plan.
  std::unordered_map<const autodiff::VarImpl*, std::pair<std::size_t, std::size_t>> where;
  std::unordered_map<ParamId, const autodiff::VarImpl*> leaf_of;
  for (const auto& [path, p] : model.named_parameters()) leaf_of[p.id()] = p.var().impl().get();
  std::string problem;  // this rank's contract problem, if any
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    for (std::size_t e = 0; e < buckets[b].entries.size(); ++e) {
      const auto it = leaf_of.find(buckets[b].entries[e].id);
      if (it == leaf_of.end()) {
        problem = str("the model lacks parameter '", buckets[b].entries[e].path,
                      "' of the bucket plan made at initialize (pass the model given there)");
      } else {
        where[it->second] = {b, e};
      }
    }
  }
  const bool weight_ok = std::isfinite(weight) && weight >= 0.0;
  if (!weight_ok) problem = str("expected a finite local weight >= 0, got ", weight);
  if (!held_window_problem().empty()) problem = held_window_problem();
  const GradientsParams empty;
  const GradientsParams& earlier = window != nullptr ? window->sum : empty;
  for (const auto& [id, g] : earlier.entries()) {
    bool planned = false;
    for (const Bucket& bucket : buckets) {
      for (const BucketEntry& entry : bucket.entries) {
        if (entry.id != id) continue;
        planned = true;
        if (g.shape() != entry.shape) {
          problem = str("the window's gradient of '", entry.path, "': expected shape ", entry.shape,
                        ", got ", g.shape());
        }
      }
    }
    if (!planned) {
      problem = str("the window holds a gradient for ParamId ", id,
                    ", which is not a trainable parameter of the model");
    }
  }
  const double local_weight =
      weight_ok ? (window != nullptr ? window->weight + weight : weight) : 0.0;
  const bool contributes = problem.empty() && local_weight > 0.0;
  const bool scale = reduction == LossReduction::Mean && weight != 1.0;

  // 1. The weights (and problem flags) first.
  const Tensor words = Tensor::from_vector<std::int64_t>(
      {std::bit_cast<std::int64_t>(local_weight), problem.empty() ? 0 : 1}, Shape{2},
      comm_.device());
  Work weights = comm_.all_gather_async(words, CallOptions().with_label(kBackwardLabel));

  // 2. The buckets, filled by the hook.
  buckets_.resize(buckets.size());
  std::vector<std::size_t> pending(buckets.size());
  std::vector<std::vector<bool>> written(buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const Bucket& bucket = buckets[b];
    const std::int64_t n = bucket.buffer_numel();
    Tensor& buffer = buckets_[b];
    if (!buffer.defined() || buffer.numel() != n || buffer.device() != comm_.device()) {
      buffer = Tensor::empty(Shape{n}, bucket.dtype, comm_.device());
    }
    pending[b] = bucket.entries.size();
    written[b].assign(bucket.entries.size(), false);
  }
  std::vector<Work> works;
  std::vector<std::vector<OwnerReduce>> owner_reduces;  // ZeRO-2: per bucket
  std::size_t next = 0;                                 // the next bucket to start
  const auto start_ready = [&] {
    while (next < buckets.size() && pending[next] == 0) {
      if (shard != nullptr) {  // ZeRO-2: each element to its owner, folded as reduce() folds it
        owner_reduces.push_back(start_owner_reduces(
            comm_, buckets_[next].narrow(0, 0, buckets[next].numel), buckets[next].whole_offset,
            buckets[next].whole_total, kBackwardLabel));
        ++next;
        continue;
      }
      // Folded as reduce() folds these elements: the bucket's range of its whole buffer.
      CallOptions call = CallOptions().with_label(kBackwardLabel);
      if (options_.exact_buckets) {
        call.with_fold_window(buckets[next].whole_offset, buckets[next].whole_total);
      }
      works.push_back(comm_.all_reduce_async(buckets_[next], ReduceOperation::Sum, call));
      ++next;
    }
  };
  // Writes entry (b, e) of its bucket once: `grad` is this backward's gradient (undefined: none).
  const auto write = [&](std::size_t b, std::size_t e, const Tensor& grad) {
    const Bucket& bucket = buckets[b];
    const BucketEntry& entry = bucket.entries[e];
    Tensor segment = buckets_[b].narrow(0, entry.offset, entry.numel);
    const std::optional<Tensor> prev = earlier.get(entry.id);
    const bool have = contributes && grad.defined() && weight > 0.0;
    bool missing = false;
    if (have && prev) {  // GradientsAccumulator::accumulate's arithmetic
      segment.copy_(add(*prev, scale ? mul(grad, weight) : grad).reshape(Shape{entry.numel}));
    } else if (have) {  // reduce()'s: the copy, then the local weight
      segment.copy_(grad.reshape(Shape{entry.numel}));
      if (scale) segment.mul_(weight);
    } else if (contributes && prev) {
      segment.copy_(prev->reshape(Shape{entry.numel}));
    } else {
      segment.fill_(0.0);
      missing = contributes && policy == MissingGradientPolicy::Error;
    }
    buckets_[b].narrow(0, bucket.numel + static_cast<std::int64_t>(e), 1).fill_(missing ? 1 : 0);
    written[b][e] = true;
    --pending[b];
  };
  autodiff::BackwardOptions options;
  options.grad_ready = [&](const autodiff::Var& leaf) {
    const auto it = where.find(leaf.impl().get());
    if (it == where.end()) return;  // an input requiring grad, a frozen parameter
    const auto [b, e] = it->second;
    if (written[b][e]) return;
    write(b, e, leaf.grad());
    if (shard != nullptr) {  // ZeRO-2: the bucket holds it now; the full gradient is not kept
      autodiff::Var packed = leaf;
      packed.zero_grad();
    }
    start_ready();
  };
  std::exception_ptr failure;
  try {
    if (loss.defined()) loss.backward(options);  // undefined: no local data (weight 0)
  } catch (...) {
    failure = std::current_exception();
  }

  // 3. Whatever backward did, every bucket is started, in plan order, and waited for.
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    for (std::size_t e = 0; e < written[b].size(); ++e) {
      if (!written[b][e]) write(b, e, Tensor());
    }
  }
  try {
    start_ready();
  } catch (...) {
    if (!failure) failure = std::current_exception();
  }
  // ZeRO-2: the flag words travel in one all_reduce of their own (every rank gets here).
  Work flag_sum;
  if (shard != nullptr) {
    std::vector<double> flags;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const auto n = static_cast<std::int64_t>(buckets[b].entries.size());
      for (double f :
           buckets_[b].narrow(0, buckets[b].numel, n).to(DType::F64).to_vector<double>()) {
        flags.push_back(f);
      }
    }
    try {
      flag_sum = comm_.all_reduce_async(
          Tensor::from_vector<double>(flags, Shape{static_cast<std::int64_t>(flags.size())},
                                      comm_.device()),
          ReduceOperation::Sum, CallOptions().with_label(kBackwardLabel));
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  std::vector<Tensor> sums;
  Tensor gathered;
  try {
    gathered = weights.result();
  } catch (...) {
    if (!failure) failure = std::current_exception();
  }
  for (Work& w : works) {
    try {
      sums.push_back(w.result());
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  std::vector<Tensor> own_chunks;  // ZeRO-2: this rank's chunk of each whole buffer
  std::vector<double> summed_flags;
  if (shard != nullptr) {
    for (const ShardRange& range : this->shard().ranges()) {
      own_chunks.push_back(Tensor::zeros(Shape{range.numel}, range.dtype, comm_.device()));
    }
    for (std::size_t b = 0; b < owner_reduces.size(); ++b) {
      collect_owned(owner_reduces[b], rank(), own_chunks[this->shard().range_of(buckets[b].dtype)],
                    failure);
    }
    try {
      summed_flags = flag_sum.result().to_vector<double>();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);

  // 4. The same verdicts on every rank.
  const std::vector<std::int64_t> all_words = gathered.to_vector<std::int64_t>();
  bool any_problem = false;
  double total = 0.0;  // summed in rank order, as reduce() does
  for (std::size_t r = 0; 2 * r < all_words.size(); ++r) {
    total += std::bit_cast<double>(all_words[2 * r]);
    any_problem = any_problem || all_words[2 * r + 1] != 0;
  }
  if (any_problem) {
    std::string message = str(kBackwardLabel, ":");
    const auto texts = all_gather_strings(comm_, problem, kBackwardLabel);
    for (std::size_t r = 0; r < texts.size(); ++r) {
      if (!texts[r].empty()) message += str(" rank ", r, ": ", texts[r], ";");
    }
    throw CollectiveError(CollectiveErrorKind::InvalidArgument, message);
  }
  std::string missing;
  std::size_t flag_at = 0;  // ZeRO-2: into summed_flags
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto count = static_cast<std::int64_t>(buckets[b].entries.size());
    std::vector<double> flags;
    if (shard != nullptr) {
      flags.assign(summed_flags.begin() + static_cast<std::ptrdiff_t>(flag_at),
                   summed_flags.begin() + static_cast<std::ptrdiff_t>(flag_at) + count);
      flag_at += static_cast<std::size_t>(count);
    } else {
      flags = sums[b].narrow(0, buckets[b].numel, count).to(DType::F64).to_vector<double>();
    }
    for (std::size_t e = 0; e < flags.size(); ++e) {
      if (flags[e] == 0.0) continue;
      const BucketEntry& entry = buckets[b].entries[e];
      missing += str(missing.empty() ? "" : ", ", "'", entry.path, "' (ParamId ", entry.id, ", on ",
                     flags[e], " rank(s))");
    }
  }
  if (!missing.empty()) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidArgument,
        str(kBackwardLabel, ": no gradient reached trainable parameter(s) ", missing,
            " by the end of backward and the policy is MissingGradientPolicy::Error (a branch "
            "not taken, a layer unused this step: pass MissingGradientPolicy::Zero to treat "
            "them as zero gradients)"));
  }
  if (!(total > 0.0)) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str(kBackwardLabel,
                              ": the total weight of all ranks is 0; at least one "
                              "rank must have a positive token or sample count"));
  }
  last_total_weight_ = total;
  if (shard != nullptr) {
    for (std::size_t i = 0; i < own_chunks.size(); ++i) {
      own_chunks[i].div_(total);  // as reduce() divides the whole buffer
      add_pieces(*shard, own_chunks[i], this->shard().ranges()[i]);
    }
    buckets_.clear();  // ZeRO-2 keeps no whole buffer between steps
    return {};
  }
  GradientsParams out;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    Tensor mean = sums[b].narrow(0, 0, buckets[b].numel);
    mean.div_(total);  // this rank's own result buffer
    for (const BucketEntry& entry : buckets[b].entries) {
      Tensor g = mean.narrow(0, entry.offset, entry.numel).view(entry.shape);
      out.insert(entry.id, g.to(entry.param_dtype));
    }
  }
  return out;
}

}  // namespace ruccl::optim
