#pragma once
// BucketPlan: which trainable parameters' gradients travel together in one all_reduce when
// DataParallel overlaps the reduction with backward (docs/training.md, "Overlapped reduction").
//
// A pure function of the model's parameter list and the caps: the trainable parameters, each
// once (a tied parameter under its first path), in REVERSE registration order (the order in which
// backward usually finishes their gradients: the last layer first), packed greedily into buckets
// of at most `bucket_cap_bytes` (in the accumulation dtype). The first bucket is capped at
// `first_bucket_cap_bytes` so that the first all_reduce starts after little of backward. A
// parameter larger than the cap gets a bucket of its own. A bucket holds one accumulation dtype:
// F64 for F64 parameters, F32 for F32, F16 and BF16 ones (as DataParallel::reduce); a change of
// dtype closes the open bucket.
//
//   registration: fc1.weight fc1.bias fc2.weight fc2.bias          (caps: first 1 MiB, then 25)
//   plan:         bucket 0 = [fc2.bias fc2.weight]   bucket 1 = [fc1.bias fc1.weight]
//
// Every rank computes the same plan from the same model; DataParallel::initialize agrees on its
// hash().
//
// A bucket travels as one buffer: its gradients (entries packed from offset 0), then one flag word
// per entry (DataParallel::backward counts there the ranks that lacked the gradient).
// DataParallel::reduce packs the model as BucketPlan::whole lays it out (one bucket per dtype,
// the same order), and each bucket of a plan is a contiguous range of that layout
// (whole_offset): reduced with that range as its fold window, every element folds over the ranks
// in reduce()'s order (docs/collectives.md, "Reduction order"), whatever the caps.
#include <cstdint>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"

namespace ruccl::optim {

/// The caps of a bucket plan.
struct BucketPlanOptions {
  /// The most bytes of gradient one bucket holds (PyTorch DDP's default, 25 MiB).
  std::int64_t bucket_cap_bytes = 25LL << 20;
  /// The first bucket's cap (1 MiB, DDP's too): small so that communication starts early.
  std::int64_t first_bucket_cap_bytes = 1LL << 20;
};

/// One parameter's place in its bucket.
struct BucketEntry {
  nn::ParamId id = nn::kNoParamId;
  std::string path;         ///< its first path in the model
  Shape shape;              ///< the parameter's shape
  DType param_dtype{};      ///< the parameter's dtype (the result is returned in it)
  std::int64_t offset = 0;  ///< first element in the bucket's buffer
  std::int64_t numel = 0;
};

/// Parameters whose gradients are reduced by one all_reduce.
struct Bucket {
  DType dtype{};  ///< the accumulation dtype of every entry (F32 or F64)
  std::int64_t numel = 0;
  std::vector<BucketEntry> entries;  ///< in plan order (reverse registration), packed
  /// Where the bucket's gradients sit in the buffer DataParallel::reduce packs for its dtype
  /// (BucketPlan::whole): elements [whole_offset, whole_offset + numel) of whole_total. The
  /// bucket's all_reduce folds them in that buffer's order (CallOptions::with_fold_window), so
  /// every plan reduces every element as reduce() does.
  std::int64_t whole_offset = 0;
  std::int64_t whole_total = 0;

  /// The elements of the bucket's buffer: its gradients, then one flag word per entry.
  std::int64_t buffer_numel() const { return numel + static_cast<std::int64_t>(entries.size()); }
};

/// Parameters → buckets (see the file comment).
class BucketPlan {
 public:
  BucketPlan() = default;
  /// The plan of `model`'s trainable parameters. ValueError for a cap <= 0.
  static BucketPlan of(const nn::Module& model, const BucketPlanOptions& options = {});
  /// The whole model with no caps: one bucket per accumulation dtype (`all_f32`: a single F32
  /// bucket whatever the parameters' dtypes), each in plan order, in the order the dtypes first
  /// occur. What DataParallel::reduce packs; for a model of one accumulation dtype it is exactly
  /// of(model, caps) whenever that plan has one bucket.
  static BucketPlan whole(const nn::Module& model, bool all_f32 = false);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// How many parameters the plan holds (each tied parameter once).
  std::size_t num_entries() const;
  /// A hash of the plan (ids, paths, shapes, dtypes, offsets, bucket boundaries): equal plans have
  /// equal hashes.
  std::uint64_t hash() const;
  /// One line per bucket ("bucket 0 F32 12 elements: fc2.bias fc2.weight"), for messages and
  /// the training log.
  std::string describe() const;

 private:
  void place_in_whole();  // sets every bucket's whole_offset and whole_total

  std::vector<Bucket> buckets_;
};

}  // namespace ruccl::optim
