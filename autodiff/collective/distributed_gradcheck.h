#pragma once
// distributed_gradcheck: gradcheck for code that calls collectives. Public: check your own
// distributed model code with it.
//
// The function runs on N in-process ranks (one thread each, one Communicator each). Rank r maps
// its inputs x_r to its output L_r (a loss, or any floating tensor). The global objective is the
// sum over ranks (docs/autodiff.md §9), so what backward must produce on rank r is
// d (sum_s L_s) / d x_r. The check is stronger than that: it compares the whole cross-rank
// Jacobian d L_s[j] / d x_r[k], for every pair of ranks (s, r), against central differences in
// float64:
// - analytic: for each output element (s, j), EVERY rank runs backward (retaining the graph),
//   rank s seeded with the one-hot of j and the others with zeros, and every rank reads its
//   inputs' gradients;
// - numeric: for each input element (r, k), every rank runs the forward collectively with rank
//   r's element moved by +eps, then by -eps (a probe on one rank changes every rank's output),
//   under NoGradGuard.
//
//   DistributedGradcheckReport r = distributed_gradcheck(
//       [](Communicator& comm, const std::vector<Var>& in) {
//         return sum(mul(all_gather_dim(in[0], -1, comm), in[1]));
//       },
//       {{x0, w0}, {x1, w1}, {x2, w2}});          // rank r's inputs; grad inputs F64
//   REQUIRE(r.ok);                              // else r.message names ranks, elements, values
//
// Costs: one backward per output element of every rank and two forwards per input element of
// every rank, each a collective over all ranks: keep tensors small.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autodiff/gradcheck.h"
#include "autodiff/var.h"
#include "collective/communicator.h"
#include "collective/protocol/call_options.h"

namespace ruccl::autodiff::collective {

/// The per-rank function under test: this rank's Communicator and inputs in (in the order given
/// for this rank), this rank's output out. Runs on the rank's own thread, so it must not touch
/// another rank's state.
using DistributedGradcheckFn = std::function<Var(Communicator& comm, const std::vector<Var>&)>;

/// Step, tolerances and the group's options.
struct DistributedGradcheckOptions {
  /// eps, atol, rtol and check_no_grad_inputs, as gradcheck.
  GradcheckOptions gradcheck;
  /// Options of the in-process group the ranks use. The default deadline is short (60 s) so that
  /// a function that leaves ranks waiting fails the check instead of stalling it.
  CommunicatorOptions communicator = [] {
    CommunicatorOptions o;
    o.timeout = std::chrono::seconds(60);
    return o;
  }();
};

/// The verdict and the worst element found (the largest error relative to its tolerance).
struct DistributedGradcheckReport {
  bool ok = true;
  /// "ok ..." or what failed: ranks, input, elements (multi-indices), both values and errors.
  std::string message = "ok";
  int input_rank = 0;                ///< the rank whose input element was probed
  std::size_t input = 0;             ///< which of that rank's inputs
  std::int64_t element = -1;         ///< flat index in that input
  int output_rank = 0;               ///< the rank whose output element was differentiated
  std::int64_t output_element = -1;  ///< flat index in that rank's output
  double analytic = 0.0;
  double numeric = 0.0;
  double abs_error = 0.0;
  double rel_error = 0.0;
  explicit operator bool() const { return ok; }
};

/// Checks every d L_s[j] / d x_r[k] of `fn` over inputs.size() in-process ranks (rank r gets
/// inputs[r]; ranks may have different numbers and shapes of inputs). Inputs that require grad
/// must be F64 (DTypeError otherwise); the others pass through unchanged. The inputs are not
/// modified and their gradients are not touched. An exception thrown on any rank aborts the group
/// and is rethrown here (the first rank's own error is preferred over the Aborted/PeerLost errors
/// it causes on the other ranks). ValueError when inputs is empty.
DistributedGradcheckReport distributed_gradcheck(const DistributedGradcheckFn& fn,
                                                 const std::vector<std::vector<Var>>& inputs,
                                                 const DistributedGradcheckOptions& options = {});

}  // namespace ruccl::autodiff::collective
