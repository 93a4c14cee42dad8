#pragma once
// clip_grad_norm_: scales gradients so that their global L2 norm is at most max_norm
// (torch.nn.utils.clip_grad_norm_ with norm_type 2), on the GradientsParams of a step, after the
// all-reduce.
//
//   GradientsParams grads = GradientsParams::from_module(model).all_reduce_with(comm, Mean);
//   const double norm = clip_grad_norm_(grads, 1.0);  // the norm before clipping
//   optimizer.step(lr, model, grads);
//
// A sharded gradient (each rank holds some of the parameters' gradients, or a slice of each)
// joins with one all-reduce of the squared norm: the steps are separate functions,
//
//   const double local = grad_norm_squared(my_shard);
//   const double total = comm.all_reduce(Tensor::full({1}, local, DType::F64),
//                                        ReduceOperation::Sum).item<double>();
//   scale_to_max_norm_(my_shard, max_norm, std::sqrt(total));
//
// which clip_grad_norm_(grads, max_norm, comm) does in one call.
#include "collective/communicator.h"
#include "optim/gradients_params.h"

namespace ruccl::optim {

/// The sum of the squares of every element of every gradient, accumulated in float64 whatever the
/// gradients' dtype (on their device). 0 for no gradients.
double grad_norm_squared(const GradientsParams& grads);

/// Multiplies every gradient in place (mul_: the tensors are shared with the model's gradients
/// when from_module made `grads`) by max_norm / (total_norm + 1e-6) when that is below 1, as
/// PyTorch does (the 1e-6 keeps a zero norm finite); leaves them unchanged otherwise. A
/// non-finite total_norm scales by 0 (infinite) or NaN, as PyTorch's default does. ValueError
/// "clip_grad_norm_: expected max_norm >= 0, got X" for a negative or NaN max_norm.
void scale_to_max_norm_(GradientsParams& grads, double max_norm, double total_norm);

/// The global L2 norm of all gradients (sqrt(grad_norm_squared)), then scale_to_max_norm_ by it;
/// returns the norm before clipping.
double clip_grad_norm_(GradientsParams& grads, double max_norm);

/// The same over gradients sharded across the ranks of `comm` (each rank passes its own part,
/// disjoint): the squared norms are summed by one all_reduce (F64, every rank must call it), so
/// every rank scales by the same global norm and returns it.
double clip_grad_norm_(GradientsParams& grads, double max_norm, Communicator& comm);

}  // namespace ruccl::optim
