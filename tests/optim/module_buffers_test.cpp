// Module buffers in the training layer: a TrainingRecord saves and restores them (and names a
// missing or mismatched one), a record without buffers still restores a model without any, and
// DataParallel::initialize broadcasts them from the root and checks that replicas agree on them.
#include <catch2/catch.hpp>

#include <string>

#include "autodiff/nn/batch_norm.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/sequential.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/training_record.h"
#include "optim/data_parallel.h"
#include "tests/optim/scratch_dir.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::testing::error_kind;
using ruccl::testing::run_group;
using ruccl::testing::TensorEqual;

namespace {

// Linear(3 -> 2) then BatchNorm1d(2): buffers "1.running_mean", "1.running_var",
// "1.num_batches_tracked".
std::shared_ptr<nn::Sequential> make_net(std::uint64_t seed, std::int64_t features = 2) {
  Generator gen(seed);
  return std::make_shared<nn::Sequential>(
      nn::Sequential{nn::Linear(3, features, gen), nn::BatchNorm1d(features)});
}

std::string restore_error(const TrainingRecord& record, nn::Module& model) {
  try {
    record.restore(model);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a TrainingRecord saves and restores module buffers", "[optim]") {
  test_support::ScratchDir dir;
  auto net = make_net(1);
  Generator gen(2);
  net->forward(Tensor::randn({4, 3}, gen));  // moves the running statistics
  const Tensor mean = net->buffer("1.running_mean").clone();
  const Tensor var = net->buffer("1.running_var").clone();
  REQUIRE(net->buffer("1.num_batches_tracked").item<std::int64_t>() == 1);
  TrainingRecord::capture(*net).save(dir.path() / "r.ckpt");
  const TrainingRecord record = TrainingRecord::load(dir.path() / "r.ckpt");
  CHECK(record.buffers().size() == 3);

  auto fresh = make_net(1);
  record.restore(*fresh);
  CHECK_THAT(fresh->buffer("1.running_mean"), TensorEqual(mean));
  CHECK_THAT(fresh->buffer("1.running_var"), TensorEqual(var));
  CHECK(fresh->buffer("1.num_batches_tracked").item<std::int64_t>() == 1);
}

TEST_CASE("restoring names a buffer the record lacks, has in excess or holds differently",
          "[optim]") {
  // A model without buffers writes a record without any (the bytes records had before).
  Generator gen(3);
  nn::Linear plain(3, 2, gen);
  const TrainingRecord no_buffers = TrainingRecord::capture(plain);
  CHECK(no_buffers.buffers().empty());
  nn::Linear other(3, 2, gen);
  CHECK_NOTHROW(no_buffers.restore(other));  // old records restore models without buffers

  // The same parameters, plus buffers the record does not hold.
  class WithBuffer : public nn::Cloneable<WithBuffer> {
   public:
    explicit WithBuffer(const Tensor& mask) {
      register_parameter("weight", nn::Param(Tensor::zeros({2, 3})));
      register_parameter("bias", nn::Param(Tensor::zeros({2})));
      register_buffer("mask", mask);
    }
  };
  WithBuffer with(Tensor::ones({2}));
  CHECK(restore_error(no_buffers, with) ==
        "TrainingRecord::restore: the model's buffer 'mask' is not in the record (the record "
        "holds no buffers: it was saved from a model without any, or before records held them)");
  const TrainingRecord has_mask = TrainingRecord::capture(with);
  nn::Linear without(3, 2, gen);
  CHECK(restore_error(has_mask, without) ==
        "TrainingRecord::restore: the record's buffer 'mask' is not in the model");
  WithBuffer wider(Tensor::ones({3}));
  CHECK(restore_error(has_mask, wider) ==
        "TrainingRecord::restore: buffer 'mask': expected shape [3], the record has [2]");
  WithBuffer f64(Tensor::ones({2}, DType::F64));
  CHECK(restore_error(has_mask, f64) ==
        "TrainingRecord::restore: buffer 'mask': expected dtype F64, the record has F32");
  // Nothing changed on a refused restore.
  CHECK_THAT(wider.buffer("mask"), TensorEqual(Tensor::ones({3})));
}

TEST_CASE("DataParallel::initialize broadcasts buffers from the root", "[optim]") {
  auto out = run_group(3, [](Communicator& comm) {
    auto net = make_net(10 + static_cast<std::uint64_t>(comm.rank()));  // differs on every rank
    net->set_buffer("1.running_mean", Tensor::full({2}, static_cast<double>(comm.rank() + 1)));
    net->set_buffer("1.num_batches_tracked",
                    Tensor::full({}, std::int64_t{comm.rank() + 5}, DType::I64));
    DataParallel::initialize(comm, *net, /*root=*/1);
    return std::pair{net->buffer("1.running_mean"), net->buffer("1.num_batches_tracked")};
  });
  for (const auto& o : out) {
    CHECK_THAT(o.value().first, TensorEqual(Tensor::full({2}, 2.0)));
    CHECK(o.value().second.item<std::int64_t>() == 6);
  }
}

TEST_CASE("DataParallel::initialize fails on every rank when replicas' buffers differ", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    // Rank 1's BatchNorm keeps no running statistics: same parameters, no buffers.
    Generator gen(4);
    nn::Sequential net{nn::Linear(3, 2, gen),
                       nn::BatchNorm1d(2, {.track_running_stats = comm.rank() == 0})};
    DataParallel::initialize(comm, net);
    return 0;
  });
  for (const auto& o : out) {
    CHECK(error_kind(o) == CollectiveErrorKind::ArgumentMismatch);
    CHECK(o.message().find("rank 0 has 3 buffers and rank 1 has 0; buffer '1.running_mean' "
                           "exists only on rank 0") != std::string::npos);
  }
}
