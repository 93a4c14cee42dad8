#include "optim/bucket_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "collective/common/hash.h"
#include "optim/rank_agreement.h"

namespace ruccl::optim {
namespace {

/// The trainable parameters, each once (a tied one under its first path), in PLAN order: reverse
/// registration order.
std::vector<BucketEntry> plan_order(const nn::Module& model) {
  std::vector<BucketEntry> order;
  std::set<nn::ParamId> seen;
  for (const auto& [path, p] : model.named_parameters()) {
    if (!p.trainable() || !seen.insert(p.id()).second) continue;
    order.push_back(BucketEntry{p.id(), path, p.shape(), p.dtype(), 0, p.numel()});
  }
  std::reverse(order.begin(), order.end());
  return order;
}

DType accumulation_dtype(DType param_dtype) {
  return param_dtype == DType::F64 ? DType::F64 : DType::F32;
}

/// Appends `entry` to `bucket` at its end.
void append(Bucket& bucket, BucketEntry entry) {
  entry.offset = bucket.numel;
  bucket.numel += entry.numel;
  bucket.entries.push_back(std::move(entry));
}

}  // namespace

BucketPlan BucketPlan::of(const nn::Module& model, const BucketPlanOptions& options) {
  RUCCL_CHECK(options.bucket_cap_bytes > 0 && options.first_bucket_cap_bytes > 0, ValueError,
              "BucketPlan::of: expected bucket caps > 0 bytes, got bucket_cap_bytes ",
              options.bucket_cap_bytes, " and first_bucket_cap_bytes ",
              options.first_bucket_cap_bytes);
  BucketPlan plan;
  std::int64_t bytes = 0;  // of the open bucket (plan.buckets_.back())
  for (BucketEntry& entry : plan_order(model)) {
    const DType dtype = accumulation_dtype(entry.param_dtype);
    const std::int64_t entry_bytes = entry.numel * static_cast<std::int64_t>(dtype_size(dtype));
    // The open bucket is the last one; the first bucket has its own, smaller cap.
    const std::int64_t cap = plan.buckets_.size() == 1 ? std::min(options.first_bucket_cap_bytes,
                                                                  options.bucket_cap_bytes)
                                                       : options.bucket_cap_bytes;
    const bool open =
        !plan.buckets_.empty() && plan.buckets_.back().dtype == dtype && bytes + entry_bytes <= cap;
    if (!open) {
      plan.buckets_.push_back(Bucket{dtype, 0, {}, 0, 0});
      bytes = 0;
    }
    append(plan.buckets_.back(), std::move(entry));
    bytes += entry_bytes;
  }
  plan.place_in_whole();
  return plan;
}

void BucketPlan::place_in_whole() {
  // Plan order is whole()'s order within a dtype: a dtype's buckets tile its whole buffer's
  // gradients in plan order, and its flag words follow them all.
  std::map<DType, std::int64_t> numel, total;
  for (const Bucket& b : buckets_) total[b.dtype] += b.buffer_numel();
  for (Bucket& b : buckets_) {
    b.whole_offset = numel[b.dtype];
    b.whole_total = total[b.dtype];
    numel[b.dtype] += b.numel;
  }
}

BucketPlan BucketPlan::whole(const nn::Module& model, bool all_f32) {
  BucketPlan plan;
  for (BucketEntry& entry : plan_order(model)) {
    const DType dtype = all_f32 ? DType::F32 : accumulation_dtype(entry.param_dtype);
    auto bucket = std::find_if(plan.buckets_.begin(), plan.buckets_.end(),
                               [dtype](const Bucket& b) { return b.dtype == dtype; });
    if (bucket == plan.buckets_.end()) {
      bucket = plan.buckets_.insert(plan.buckets_.end(), Bucket{dtype, 0, {}, 0, 0});
    }
    append(*bucket, std::move(entry));
  }
  plan.place_in_whole();
  return plan;
}

std::size_t BucketPlan::num_entries() const {
  std::size_t n = 0;
  for (const Bucket& b : buckets_) n += b.entries.size();
  return n;
}

std::uint64_t BucketPlan::hash() const {
  std::string bytes;
  for (const Bucket& b : buckets_) {
    append_word(bytes, static_cast<std::int64_t>(b.dtype));
    append_word(bytes, b.numel);
    append_word(bytes, b.whole_offset);
    append_word(bytes, b.whole_total);
    append_word(bytes, static_cast<std::int64_t>(b.entries.size()));
    for (const BucketEntry& e : b.entries) {
      append_word(bytes, static_cast<std::int64_t>(e.id));
      bytes += e.path;
      bytes.push_back('\0');
      for (std::int64_t d : e.shape) append_word(bytes, d);
      append_word(bytes, static_cast<std::int64_t>(e.param_dtype));
      append_word(bytes, e.offset);
    }
  }
  return fnv1a64(bytes);
}

std::string BucketPlan::describe() const {
  std::ostringstream out;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const Bucket& b = buckets_[i];
    out << "bucket " << i << ' ' << b.dtype << ' ' << b.numel << " elements:";
    for (const BucketEntry& e : b.entries) out << ' ' << e.path;
    out << '\n';
  }
  return out.str();
}

}  // namespace ruccl::optim
