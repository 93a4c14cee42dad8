#include "optim/data_parallel.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "autodiff/grad_mode.h"
#include "collective/common/hash.h"
#include "collective/trace/call_trace.h"
#include "optim/rank_agreement.h"
#include "optim/replica_description.h"
#include "optim/zero_reduce.h"

namespace ruccl::optim {
namespace {

constexpr const char* kInitLabel = "DataParallel::initialize";
constexpr const char* kReduceLabel = "DataParallel::reduce";

/// Exchanges the descriptions and raises the same error on every rank when they disagree or any
/// rank found a local problem. The fast path is one all_gather of three words per rank.
void agree(Communicator& comm, const ReplicaDescription& local, std::int64_t extra_word,
           std::vector<std::int64_t>* extra_words, const char* label) {
  const std::string encoded = local.encode();
  const auto words = all_gather_words(
      comm,
      {static_cast<std::int64_t>(fnv1a64(encoded)), local.problems.empty() ? 0 : 1, extra_word},
      label);
  bool same = true;
  for (const auto& w : words) same = same && w[0] == words[0][0] && w[1] == 0;
  if (!same) {
    std::vector<ReplicaDescription> all;
    for (const std::string& text : all_gather_strings(comm, encoded, label)) {
      all.push_back(ReplicaDescription::decode(text));
    }
    check_replicas(all, label);
    // Equal descriptions with different hashes cannot happen; a hash collision is harmless (the
    // collectives below check shapes and dtypes again).
  }
  if (extra_words != nullptr) {
    extra_words->clear();
    for (const auto& w : words) extra_words->push_back(w[2]);
  }
}

}  // namespace

DataParallel DataParallel::initialize(Communicator comm, nn::Module& model, int root) {
  return initialize(std::move(comm), model, root, DataParallelOptions{});
}

DataParallel DataParallel::initialize(Communicator comm, nn::Module& model, int root,
                                      const DataParallelOptions& options) {
  ReplicaDescription local = ReplicaDescription::of(model, root, comm.device());
  if (root < 0 || root >= comm.world_size()) {
    local.add_problem(CollectiveErrorKind::InvalidArgument,
                      str("root ", root, " is out of range for world size ", comm.world_size()));
  }
  BucketPlan plan;
  try {
    plan = BucketPlan::of(
        model, BucketPlanOptions{options.bucket_cap_bytes, options.first_bucket_cap_bytes});
  } catch (const ValueError& e) {
    local.add_problem(CollectiveErrorKind::InvalidArgument, e.what());
  }
  if (options.zero_stage < 0 || options.zero_stage > 2) {
    local.add_problem(
        CollectiveErrorKind::InvalidArgument,
        str("expected DataParallelOptions::zero_stage 0, 1 or 2, got ", options.zero_stage));
  }
  // The plan's hash and the flags travel beside the description: equal descriptions with
  // different words mean different caps or flags.
  const auto plan_word = static_cast<std::int64_t>(
      plan.hash() ^ (options.overlap ? 1 : 0) ^ (options.exact_buckets ? 2 : 0) ^
      (static_cast<std::uint64_t>(options.zero_stage & 3) << 2));
  std::vector<std::int64_t> plan_words;
  agree(comm, local, plan_word, &plan_words, kInitLabel);
  for (std::size_t r = 0; r < plan_words.size(); ++r) {
    if (plan_words[r] != plan_words[0]) {
      throw CollectiveError(
          CollectiveErrorKind::InvalidArgument,
          str(kInitLabel, ": rank ", r,
              "'s bucket plan or overlap flags differ from rank 0's "
              "(DataParallelOptions: overlap, bucket_cap_bytes, first_bucket_cap_bytes, "
              "exact_buckets, zero_stage must be the same on every rank)"));
    }
  }
  autodiff::NoGradGuard no_grad;
  for (nn::Param& p : model.parameters()) {  // distinct parameters: a tied one moves once
    Tensor value = comm.broadcast(p.value(), root, CallOptions().with_label(kInitLabel));
    if (comm.rank() != root) p.set_value(value);
  }
  for (const auto& [path, b] : model.named_buffers()) {  // running statistics, masks
    Tensor value = comm.broadcast(b, root, CallOptions().with_label(kInitLabel));
    if (comm.rank() != root) model.set_buffer(path, value);
  }
  DataParallel dp(std::move(comm), root, options, std::move(plan));
  if (options.zero_stage > 0) {
    const BucketPlan whole = BucketPlan::whole(model);
    for (int r = 0; r < dp.world_size(); ++r) {
      dp.shards_.push_back(ZeroShard::of(whole, r, dp.world_size()));
    }
  }
  return dp;
}

GradientsParams DataParallel::reduce(const nn::Module& model, const GradientsParams& grads,
                                     double local_weight, LossReduction loss,
                                     MissingGradientPolicy policy) {
  return reduce_impl(model, grads, local_weight, loss, policy, /*fp32=*/false);
}

GradientsParams DataParallel::reduce_fp32(const nn::Module& model, const GradientsParams& grads,
                                          double local_weight, LossReduction loss,
                                          MissingGradientPolicy policy) {
  return reduce_impl(model, grads, local_weight, loss, policy, /*fp32=*/true);
}

GradientsParams DataParallel::reduce(const nn::Module& model, AccumulatedGradients window,
                                     MissingGradientPolicy policy) {
  return reduce_impl(model, window.sum, window.weight, LossReduction::Sum, policy,
                     /*fp32=*/false);
}

GradientsParams DataParallel::reduce_fp32(const nn::Module& model, AccumulatedGradients window,
                                          MissingGradientPolicy policy) {
  return reduce_impl(model, window.sum, window.weight, LossReduction::Sum, policy,
                     /*fp32=*/true);
}

GradientsParams DataParallel::reduce_impl(const nn::Module& model, const GradientsParams& grads,
                                          double local_weight, LossReduction loss,
                                          MissingGradientPolicy policy, bool fp32,
                                          GradientShard* shard) {
  ReplicaDescription local = ReplicaDescription::of(model, root_, comm_.device());
  if (!held_window_problem().empty()) {
    local.add_problem(CollectiveErrorKind::InvalidArgument, held_window_problem());
  }
  const bool weight_ok = std::isfinite(local_weight) && local_weight >= 0.0;
  if (!weight_ok) {
    local.add_problem(CollectiveErrorKind::InvalidArgument,
                      str("expected a finite local weight >= 0, got ", local_weight));
  }
  // The trainable parameters, in ascending ParamId order (the same on every rank once the
  // descriptions agree), and the local gradient of each.
  std::map<ParamId, nn::Param> trainable;
  std::map<ParamId, std::string> path_of;
  for (const auto& [path, p] : model.named_parameters()) {
    path_of.emplace(p.id(), path);
    if (p.trainable()) trainable.emplace(p.id(), p);
  }
  for (const auto& [id, g] : grads.entries()) {
    const auto path = path_of.find(id);
    if (path == path_of.end()) {
      const std::string from = grads.path(id);
      local.add_problem(
          CollectiveErrorKind::InvalidArgument,
          str("a gradient for ParamId ", id, from.empty() ? std::string() : str(" ('", from, "')"),
              ", which is not a parameter of the model (the gradients come from another model, "
              "or from one whose ParamIds were set differently)"));
      continue;
    }
    const auto it = trainable.find(id);
    if (it == trainable.end()) {
      local.add_problem(CollectiveErrorKind::InvalidArgument,
                        str("a gradient for frozen parameter '", path->second, "' (ParamId ", id,
                            "); frozen parameters are never reduced"));
      continue;
    }
    if (g.shape() != it->second.shape()) {
      local.add_problem(CollectiveErrorKind::ShapeMismatch,
                        str("the gradient of '", path->second, "': expected shape ",
                            it->second.shape(), ", got ", g.shape()));
    }
    if (!is_floating(g.dtype())) {
      local.add_problem(
          CollectiveErrorKind::DTypeMismatch,
          str("the gradient of '", path->second, "': expected a floating dtype, got ", g.dtype()));
    }
  }
  const bool contributes = weight_ok && local_weight > 0.0;
  if (contributes && policy == MissingGradientPolicy::Error) {
    for (const auto& [id, p] : trainable) {
      if (!grads.contains(id)) {
        local.add_problem(CollectiveErrorKind::InvalidArgument,
                          str("no gradient for trainable parameter '", path_of[id], "' (ParamId ",
                              id, ") and the policy is MissingGradientPolicy::Error"));
      }
    }
  }

  std::vector<std::int64_t> weight_bits;
  agree(comm_, local, std::bit_cast<std::int64_t>(weight_ok ? local_weight : 0.0), &weight_bits,
        kReduceLabel);
  double total = 0.0;  // summed in rank order: identical on every rank
  for (std::int64_t bits : weight_bits) total += std::bit_cast<double>(bits);
  if (!(total > 0.0)) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str(kReduceLabel,
                              ": the total weight of all ranks is 0; at least one "
                              "rank must have a positive token or sample count"));
  }
  last_total_weight_ = total;

  // One flat buffer per accumulation dtype (F64 for F64 parameters, F32 for every other dtype or
  // with reduce_fp32: a pure F32 model has one), laid out as BucketPlan::whole: the trainable
  // gradients in plan order (reverse registration; zeros where a rank has none or a zero weight),
  // then one zero word per parameter where DataParallel::backward's buckets carry their flags.
  // So a bucket plan of one bucket is cut into the same chunks and every element folds over the
  // ranks in the same order (docs/training.md, "Exactness"). The gradients are scaled by the
  // local weight for a mean loss (the gradient of the local sum is w_r times the gradient of the
  // local mean); one all_reduce per buffer sums it (in the layout's dtype order, the same on every
  // rank once the descriptions agree); one division by the total weight finishes it.
  autodiff::NoGradGuard no_grad;
  const BucketPlan layout = BucketPlan::whole(model, fp32);
  for (auto it = flat_.begin(); it != flat_.end();) {  // forget buffers this model lacks
    const bool used = std::any_of(layout.buckets().begin(), layout.buckets().end(),
                                  [&](const Bucket& b) { return b.dtype == it->first; });
    it = used ? std::next(it) : flat_.erase(it);
  }
  GradientsParams out;
  for (const Bucket& bucket : layout.buckets()) {
    Tensor& flat = flat_[bucket.dtype];
    if (!flat.defined() || flat.numel() != bucket.buffer_numel() ||
        flat.device() != comm_.device()) {
      flat = Tensor::empty(Shape{bucket.buffer_numel()}, bucket.dtype, comm_.device());  // reused
    }
    for (const BucketEntry& entry : bucket.entries) {
      Tensor segment = flat.narrow(0, entry.offset, entry.numel);
      const auto g = grads.get(entry.id);
      if (contributes && g) {
        segment.copy_(g->reshape(Shape{entry.numel}));
      } else {
        segment.fill_(0.0);
      }
    }
    flat.narrow(0, bucket.numel, bucket.buffer_numel() - bucket.numel).fill_(0.0);  // the flags
    if (contributes && loss == LossReduction::Mean && local_weight != 1.0) {
      flat.mul_(local_weight);  // in place, in the bucket's dtype, on its device
    }
    // The bucket on the training track of the trace, beside its all_reduce on the collectives'.
    const TraceSpan span(comm_.trace(),
                         bucket.dtype == DType::F64 ? "gradient bucket F64" : "gradient bucket F32",
                         flat.nbytes());
    if (shard != nullptr) {  // ZeRO-2: each chunk to the rank that owns it, folded alike
      Tensor own = reduce_to_owners(comm_, flat, 0, flat.numel(), kReduceLabel);
      own.div_(total);
      const auto index = static_cast<std::size_t>(&bucket - layout.buckets().data());
      add_pieces(*shard, own, this->shard().ranges()[index]);  // the same layout: !fp32
      continue;
    }
    Tensor sum =
        comm_.all_reduce(flat, ReduceOperation::Sum, CallOptions().with_label(kReduceLabel));
    sum.div_(total);  // this rank's own result buffer
    for (const BucketEntry& entry : bucket.entries) {
      Tensor g = sum.narrow(0, entry.offset, entry.numel).view(entry.shape);
      out.insert(entry.id, fp32 ? g : g.to(entry.param_dtype));
    }
  }
  if (shard != nullptr) flat_.clear();  // ZeRO-2 keeps no whole buffer between steps
  return out;
}

}  // namespace ruccl::optim
