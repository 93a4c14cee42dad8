#pragma once
// DataParallel: token-weighted replicas. Every rank holds a replica of the model,
// computes the gradient of its LOCAL LOSS SUM over its own data, and reduce() turns the ranks'
// gradients into the gradient of the global mean:
//
//     g = (G_0 + G_1 + ... + G_{W-1}) / (w_0 + w_1 + ... + w_{W-1})        (in FP32)
//
// where G_r is rank r's gradient of its loss sum and w_r its token (or sample) count. A rank
// with w_r = 0 contributes zeros (it may have no gradient at all); a total weight of 0 is an
// error. Frozen parameters are never reduced; a tied parameter is reduced once.
//
//   DataParallel dp = DataParallel::initialize(comm, model, /*root=*/0);   // same start on all
//   Var loss = cross_entropy(model.forward(x), y, Reduction::Sum);         // local SUM
//   loss.backward();
//   GradientsParams g = dp.reduce(model, GradientsParams::from_module(model), batch_size);
//   optimizer.step(lr, model, g);
//
// Every contract error (replicas that differ, a missing or extra gradient, a bad weight, a zero
// total) raises CollectiveError on every rank together, with the same message naming the rank and
// the problem, before any gradient moves; the communicator stays usable afterwards.
#include <cstdint>
#include <string>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"
#include "optim/gradients_params.h"

namespace ruccl::optim {

/// What reduce() does with a trainable parameter that has no local gradient on a rank whose
/// weight is not zero.
enum class MissingGradientPolicy {
  Error,  ///< raise CollectiveError (InvalidArgument) on every rank
  Zero,   ///< treat it as a zero gradient (a parameter this rank's data did not reach)
};

/// Token-weighted data parallelism over any Communicator. See the file comment.
class DataParallel {
 public:
  /// Checks on every rank that the replicas agree (module paths, ParamIds, shapes, dtypes, frozen
  /// flags, tied aliases, root) and that nothing is wrong locally (duplicate ParamIds, a parameter
  /// on another device than the communicator's); any problem raises CollectiveError on every rank
  /// naming the rank and the difference, before any parameter moves. Then broadcasts every
  /// parameter from `root` (once per tied parameter, frozen ones too).
  static DataParallel initialize(Communicator comm, nn::Module& model, int root = 0);

  /// The weighted mean gradient of every trainable parameter (see the file comment), in the
  /// parameter's dtype. `grads` holds this rank's gradients of its local loss SUM and
  /// `local_weight` its token or sample count (finite, >= 0).
  GradientsParams reduce(const nn::Module& model, const GradientsParams& grads, double local_weight,
                         MissingGradientPolicy policy = MissingGradientPolicy::Error);
  /// Like reduce(), but the results are F32 whatever the parameters' dtype.
  GradientsParams reduce_fp32(const nn::Module& model, const GradientsParams& grads,
                              double local_weight,
                              MissingGradientPolicy policy = MissingGradientPolicy::Error);

  /// Σ_r w_r of the last reduce (0 before the first).
  double last_total_weight() const { return last_total_weight_; }
  Communicator& communicator() { return comm_; }
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }
  int root() const { return root_; }

 private:
  DataParallel(Communicator comm, int root) : comm_(std::move(comm)), root_(root) {}
  GradientsParams reduce_impl(const nn::Module& model, const GradientsParams& grads,
                              double local_weight, MissingGradientPolicy policy, bool fp32);

  Communicator comm_;
  int root_;
  double last_total_weight_ = 0.0;
  Tensor flat_;  // the packed gradients, reused from step to step
};

}  // namespace ruccl::optim
