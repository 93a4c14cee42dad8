// The first GradientsParams::all_reduce_with of a model checks that every rank's replica holds
// the same values, and run_ranks gives each rank thread its own default generator: replicas built
// on rank threads without a Generator& can no longer train apart silently.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>

#include "autodiff/nn/linear.h"
#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "optim/gradients_params.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::testing::error_kind;
using ruccl::testing::run_group;
using ruccl::testing::TensorEqual;

namespace {

/// One backward pass of `model` on a fixed batch: its gradients.
GradientsParams gradients_of(nn::Linear& model) {
  const autodiff::Var x(Tensor::ones({2, 3}), false);
  model.forward(x).sum().backward();
  return GradientsParams::from_module(model);
}

}  // namespace

TEST_CASE(
    "replicas built on plain threads from the default generator fail the first "
    "all_reduce_with on every rank, naming the parameter",
    "[optim]") {
  // The old trap: plain rank threads share the process's default generator, so each replica
  // draws other numbers (whatever the interleaving); all-reducing their gradients trained
  // divergent models with no error.
  auto out = run_group(2, [](Communicator& comm) {
    nn::Linear model(3, 2);  // no Generator&: the process's default generator
    return gradients_of(model).all_reduce_with(comm, ReduceOperation::Mean).size();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    CHECK(error_kind(out[static_cast<std::size_t>(r)]) == CollectiveErrorKind::ArgumentMismatch);
    CHECK_THAT(out[static_cast<std::size_t>(r)].message(),
               Catch::StartsWith("GradientsParams::all_reduce_with: the replicas differ: "
                                 "parameter '") &&
                   Catch::Contains("holds other values on rank 1 than on rank 0"));
  }
  CHECK(out[0].message() == out[1].message());
}

TEST_CASE(
    "replicas built on run_ranks threads from the default generator are identical and "
    "train together",
    "[optim]") {
  std::vector<Tensor> weights(3);
  run_ranks(InProcessGroup::create(3), [&](Communicator& comm) {
    nn::Linear model(3, 2);  // each rank thread draws from its own copy of the default generator
    const GradientsParams reduced =
        gradients_of(model).all_reduce_with(comm, ReduceOperation::Mean);
    if (reduced.size() != 2) throw std::runtime_error("expected 2 gradients");
    weights[static_cast<std::size_t>(comm.rank())] = model.weight().value();
  });
  CHECK_THAT(weights[1], TensorEqual(weights[0]));
  CHECK_THAT(weights[2], TensorEqual(weights[0]));
}

TEST_CASE("the replica check names the first differing parameter and runs once per model",
          "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    Generator gen(3);
    nn::Linear model(3, 2, gen);  // the same values on both ranks
    if (comm.rank() == 1) {
      Tensor bias = model.bias().value().clone();
      bias.add_(1.0);
      model.bias().set_value(bias);  // only the bias differs
    }
    std::string first;
    try {
      (void)gradients_of(model).all_reduce_with(comm, ReduceOperation::Sum);
    } catch (const CollectiveError& e) {
      first = e.what();
    }
    return first;
  });
  for (const auto& o : out) {
    CHECK_THAT(o.value(), Catch::Contains("parameter 'bias' (ParamId ") &&
                              Catch::Contains("on rank 1 than on rank 0 (1 parameter(s) differ)"));
  }
  // Equal replicas pass, and a later call of the same model is not checked again (it would
  // need no exchange of values: the replicas were found equal once).
  auto again = run_group(2, [](Communicator& comm) {
    Generator gen(3);
    nn::Linear model(3, 2, gen);
    (void)gradients_of(model).all_reduce_with(comm, ReduceOperation::Sum);
    if (comm.rank() == 1) model.bias().set_value(model.bias().value().clone().add_(1.0));
    model.zero_grad();
    return gradients_of(model).all_reduce_with(comm, ReduceOperation::Sum).size();
  });
  CHECK(again[0].value() == 2);
  CHECK(again[1].value() == 2);
}
