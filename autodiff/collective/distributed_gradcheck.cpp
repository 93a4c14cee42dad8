// distributed_gradcheck: the cross-rank Jacobian from backward (one collective backward per
// output element of every rank, graph retained) against central differences (two collective
// forwards per input element of every rank), both in float64. See the header.
#include "autodiff/collective/distributed_gradcheck.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include "autodiff/grad_mode.h"
#include "autodiff/gradcheck_detail.h"
#include "collective/common/collective_error.h"
#include "collective/in_process_group.h"
#include "collective/run_ranks.h"

namespace ruccl::autodiff::collective {

namespace {

using namespace gradcheck_detail;

// One input element that the numeric pass moves: rank, input, flat index.
struct Probe {
  int rank;
  std::size_t input;
  std::int64_t element;
};

// What one rank measured. analytic[o][i]: the gradient of input i for global output element o
// (empty: no gradient arrived, i.e. zeros). numeric[p][j]: d output_j / d probe p.
struct RankResult {
  Shape out_shape;
  std::vector<std::vector<std::vector<double>>> analytic;
  std::vector<std::vector<double>> numeric;
  std::string violation;  // a contract failure found on this rank ("" when none)
};

Var call(const DistributedGradcheckFn& fn, Communicator& comm, const std::vector<Var>& in) {
  Var y = fn(comm, in);
  RUCCL_CHECK(y.defined(), ValueError, "distributed_gradcheck: rank ", comm.rank(),
              "'s function returned an undefined Var");
  RUCCL_CHECK(is_floating(y.dtype()), DTypeError, "distributed_gradcheck: expected rank ",
              comm.rank(), "'s function to return a floating Var, got ", y.dtype());
  return y;
}

// Analytic pass on rank r: fills res.analytic for every global output element.
void analytic_pass(Communicator& comm, const DistributedGradcheckFn& fn,
                   const std::vector<Var>& inputs, const GradcheckOptions& options,
                   RankResult& res) {
  const int r = comm.rank();
  std::vector<Var> leaves = fresh_leaves(inputs);
  Var y = call(fn, comm, leaves);
  res.out_shape = y.shape();
  const std::int64_t n_out = y.numel();
  const std::vector<std::int64_t> n_outs =
      comm.all_gather(Tensor::from_vector<std::int64_t>({n_out}),
                      CallOptions().with_label("distributed_gradcheck (output sizes)"))
          .to_vector<std::int64_t>();
  for (int s = 0; s < comm.world_size(); ++s) {
    for (std::int64_t j = 0; j < n_outs[static_cast<std::size_t>(s)]; ++j) {
      std::vector<std::vector<double>>& row = res.analytic.emplace_back(inputs.size());
      if (!y.requires_grad()) continue;  // no node on this rank: nothing to run
      for (Var& leaf : leaves) leaf.zero_grad();
      std::vector<double> seed(static_cast<std::size_t>(n_out), 0.0);
      if (s == r) seed[static_cast<std::size_t>(j)] = 1.0;
      y.backward(Tensor::from_vector<double>(seed, y.shape()).to(y.dtype()),
                 /*retain_graph=*/true);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& g = leaves[i].grad();
        if (!g.defined()) continue;
        if (!inputs[i].requires_grad()) {
          if (options.check_no_grad_inputs && res.violation.empty()) {
            res.violation =
                str("rank ", r, " input ", i, " does not require grad but received a gradient");
          }
          continue;
        }
        if (g.shape() != inputs[i].shape() || g.dtype() != inputs[i].dtype()) {
          if (res.violation.empty()) {
            res.violation = str("the gradient of rank ", r, " input ", i, " has shape ", g.shape(),
                                " and dtype ", g.dtype(), "; expected shape ", inputs[i].shape(),
                                " and dtype ", inputs[i].dtype());
          }
          continue;
        }
        row[i] = values_f64(g);
      }
    }
  }
}

// Numeric pass on rank r: every rank runs the forward for every probe of every rank.
void numeric_pass(Communicator& comm, const DistributedGradcheckFn& fn,
                  const std::vector<Var>& inputs, const std::vector<Probe>& probes, double eps,
                  RankResult& res) {
  NoGradGuard no_grad;
  const int r = comm.rank();
  const std::int64_t n_out = res.out_shape.numel();
  std::vector<std::vector<double>> base(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].requires_grad()) base[i] = values_f64(inputs[i].value());
  }
  auto output_at = [&](const Probe& p, double delta) {
    std::vector<Var> args = fresh_leaves(inputs);
    if (p.rank == r) {
      std::vector<double> v = base[p.input];
      v[static_cast<std::size_t>(p.element)] += delta;
      args[p.input] = Var(Tensor::from_vector<double>(v, inputs[p.input].shape()));
    }
    std::vector<double> out = values_f64(call(fn, comm, args).value());
    RUCCL_CHECK(static_cast<std::int64_t>(out.size()) == n_out, ShapeError,
                "distributed_gradcheck: rank ", r, "'s output changed size from ", n_out, " to ",
                out.size(), " when an input moved");
    return out;
  };
  res.numeric.reserve(probes.size());
  for (const Probe& p : probes) {
    const std::vector<double> plus = output_at(p, eps);
    const std::vector<double> minus = output_at(p, -eps);
    std::vector<double>& d = res.numeric.emplace_back(static_cast<std::size_t>(n_out));
    for (std::size_t j = 0; j < d.size(); ++j) d[j] = (plus[j] - minus[j]) / (2.0 * eps);
  }
}

}  // namespace

DistributedGradcheckReport distributed_gradcheck(const DistributedGradcheckFn& fn,
                                                 const std::vector<std::vector<Var>>& inputs,
                                                 const DistributedGradcheckOptions& options) {
  RUCCL_CHECK(!inputs.empty(), ValueError,
              "distributed_gradcheck: expected the inputs of at least one rank, got none");
  const int world = static_cast<int>(inputs.size());
  std::vector<Probe> probes;
  for (int q = 0; q < world; ++q) {
    const std::vector<Var>& in = inputs[static_cast<std::size_t>(q)];
    for (std::size_t i = 0; i < in.size(); ++i) {
      RUCCL_CHECK(in[i].defined(), ValueError, "distributed_gradcheck: rank ", q, " input ", i,
                  " is undefined");
      RUCCL_CHECK(!in[i].requires_grad() || in[i].dtype() == DType::F64, DTypeError,
                  "distributed_gradcheck: inputs that require grad must be F64 for finite "
                  "differences; rank ",
                  q, " input ", i, " is ", in[i].dtype());
      if (!in[i].requires_grad()) continue;
      for (std::int64_t k = 0; k < in[i].numel(); ++k) probes.push_back({q, i, k});
    }
  }

  // One thread per rank; each owns its Communicator, so a rank that finishes early releases its
  // endpoint and peers still waiting on it fail promptly (PeerLost) instead of at the deadline.
  std::vector<RankResult> results(static_cast<std::size_t>(world));
  run_ranks(InProcessGroup::create(world, {}, options.communicator), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    analytic_pass(comm, fn, inputs[r], options.gradcheck, results[r]);
    numeric_pass(comm, fn, inputs[r], probes, options.gradcheck.eps, results[r]);
  });

  DistributedGradcheckReport report;
  for (int r = 0; r < world; ++r) {
    if (!results[static_cast<std::size_t>(r)].violation.empty()) {
      report.ok = false;
      report.message =
          str("distributed_gradcheck: ", results[static_cast<std::size_t>(r)].violation);
      return report;
    }
  }
  double worst_excess = -1.0;
  std::size_t o = 0;  // global output element index, in (rank, element) order
  for (int s = 0; s < world; ++s) {
    const RankResult& out_rank = results[static_cast<std::size_t>(s)];
    for (std::int64_t j = 0; j < out_rank.out_shape.numel(); ++j, ++o) {
      for (std::size_t p = 0; p < probes.size(); ++p) {
        const Probe& probe = probes[p];
        const std::vector<double>& grad =
            results[static_cast<std::size_t>(probe.rank)].analytic[o][probe.input];
        const double a = grad.empty() ? 0.0 : grad[static_cast<std::size_t>(probe.element)];
        const double numeric = out_rank.numeric[p][static_cast<std::size_t>(j)];
        const ElementError e = compare_element(a, numeric, options.gradcheck);
        if (e.excess > worst_excess) {
          worst_excess = e.excess;
          report.input_rank = probe.rank;
          report.input = probe.input;
          report.element = probe.element;
          report.output_rank = s;
          report.output_element = j;
          report.analytic = a;
          report.numeric = numeric;
          report.abs_error = e.abs_error;
          report.rel_error = e.rel_error;
        }
        if (e.excess > 1.0) report.ok = false;
      }
    }
  }
  if (worst_excess >= 0.0) {
    const Shape& in_shape =
        inputs[static_cast<std::size_t>(report.input_rank)][report.input].shape();
    std::ostringstream out;
    out.precision(10);
    out << (report.ok ? "ok; worst: " : "distributed_gradcheck failed: ") << "d (rank "
        << report.output_rank << " output element "
        << unravel_index(report.output_element,
                         results[static_cast<std::size_t>(report.output_rank)].out_shape)
        << ") / d (rank " << report.input_rank << " input " << report.input << " element "
        << unravel_index(report.element, in_shape) << "): analytic " << report.analytic
        << ", numeric " << report.numeric << ", abs error " << report.abs_error << ", rel error "
        << report.rel_error << " (allowed " << options.gradcheck.atol << " + "
        << options.gradcheck.rtol << " * |numeric|)";
    report.message = out.str();
  }
  return report;
}

}  // namespace ruccl::autodiff::collective
