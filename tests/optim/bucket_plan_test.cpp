// BucketPlan: parameters -> buckets (reverse registration order, caps, one dtype per bucket,
// trainable parameters once), and its agreement at DataParallel::initialize.
#include <catch2/catch.hpp>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/sequential.h"
#include "optim/bucket_plan.h"
#include "optim/data_parallel.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::testing::error_kind;
using ruccl::testing::run_group;
using test_support::ParamBag;

namespace {

/// The paths of each bucket, in plan order.
std::vector<std::vector<std::string>> paths(const BucketPlan& plan) {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : plan.buckets()) {
    out.emplace_back();
    for (const BucketEntry& e : b.entries) out.back().push_back(e.path);
  }
  return out;
}

/// a: 4 F32 (16 bytes), b: 2 F32 (8), c: 8 F32 (32), d: 1 F32 (4), registered a b c d.
ParamBag four_params() {
  return ParamBag({{"a", nn::Param(1, Tensor::zeros({2, 2}))},
                   {"b", nn::Param(2, Tensor::zeros({2}))},
                   {"c", nn::Param(3, Tensor::zeros({8}))},
                   {"d", nn::Param(4, Tensor::zeros({1}))}});
}

}  // namespace

TEST_CASE("the bucket plan packs in reverse registration order under the caps", "[optim]") {
  ParamBag model = four_params();
  SECTION("one bucket when everything fits under both caps") {
    const BucketPlan plan = BucketPlan::of(model);
    REQUIRE(paths(plan) == std::vector<std::vector<std::string>>{{"d", "c", "b", "a"}});
    REQUIRE(plan.buckets()[0].numel == 15);
    REQUIRE(plan.buckets()[0].dtype == DType::F32);
    // Offsets are packed in plan order.
    const auto& e = plan.buckets()[0].entries;
    REQUIRE(e[0].offset == 0);
    REQUIRE(e[1].offset == 1);
    REQUIRE(e[2].offset == 9);
    REQUIRE(e[3].offset == 11);
    REQUIRE(e[3].shape == Shape{2, 2});
  }
  SECTION("a small first bucket, then buckets up to the cap") {
    // first cap 4 bytes: d alone; cap 40 bytes: c + b = 40 fit, a starts a new one.
    const BucketPlan plan =
        BucketPlan::of(model, {.bucket_cap_bytes = 40, .first_bucket_cap_bytes = 4});
    REQUIRE(paths(plan) == std::vector<std::vector<std::string>>{{"d"}, {"c", "b"}, {"a"}});
    // Each bucket is a range of reduce()'s buffer (15 gradients, then 4 flag words).
    REQUIRE(plan.buckets()[0].whole_offset == 0);
    REQUIRE(plan.buckets()[1].whole_offset == 1);
    REQUIRE(plan.buckets()[2].whole_offset == 11);
    for (const Bucket& b : plan.buckets()) REQUIRE(b.whole_total == 19);
    REQUIRE(plan.buckets()[1].entries[1].offset == 8);
  }
  SECTION("a parameter over the cap gets a bucket of its own") {
    const BucketPlan plan =
        BucketPlan::of(model, {.bucket_cap_bytes = 8, .first_bucket_cap_bytes = 8});
    REQUIRE(paths(plan) == std::vector<std::vector<std::string>>{{"d"}, {"c"}, {"b"}, {"a"}});
  }
  SECTION("the first bucket's cap never exceeds the cap") {
    const BucketPlan plan =
        BucketPlan::of(model, {.bucket_cap_bytes = 4, .first_bucket_cap_bytes = 1 << 20});
    REQUIRE(plan.buckets().size() == 4);
  }
}

TEST_CASE("the bucket plan holds trainable parameters once and one dtype per bucket", "[optim]") {
  nn::Param tied(1, Tensor::zeros({3}));
  ParamBag model({{"w", tied},
                  {"frozen", nn::Param(2, Tensor::zeros({5}), /*trainable=*/false)},
                  {"half", nn::Param(3, Tensor::zeros({2}, DType::F16))},
                  {"wide", nn::Param(4, Tensor::zeros({2}, DType::F64))},
                  {"wide2", nn::Param(5, Tensor::zeros({1}, DType::F64))},
                  {"w_again", tied}});
  const BucketPlan plan = BucketPlan::of(model);
  // Reverse order: wide2 wide (F64) | half (F16 in F32) w (F32); the tie once, under "w".
  REQUIRE(paths(plan) == std::vector<std::vector<std::string>>{{"wide2", "wide"}, {"half", "w"}});
  REQUIRE(plan.num_entries() == 4);
  REQUIRE(plan.buckets()[0].dtype == DType::F64);
  REQUIRE(plan.buckets()[1].dtype == DType::F32);
  REQUIRE(plan.buckets()[1].entries[0].param_dtype == DType::F16);
  REQUIRE(plan.describe() ==
          "bucket 0 F64 3 elements: wide2 wide\nbucket 1 F32 5 elements: half w\n");
}

TEST_CASE("the whole-model layout is one bucket per accumulation dtype, flags after", "[optim]") {
  ParamBag model = four_params();
  // A single-dtype model: exactly the one-bucket plan (what DataParallel::reduce packs).
  REQUIRE(BucketPlan::whole(model).hash() == BucketPlan::of(model).hash());
  REQUIRE(BucketPlan::whole(model).buckets()[0].buffer_numel() == 15 + 4);

  ParamBag mixed({{"w", nn::Param(1, Tensor::zeros({3}))},
                  {"wide", nn::Param(2, Tensor::zeros({2}, DType::F64))},
                  {"half", nn::Param(3, Tensor::zeros({2}, DType::F16))},
                  {"wide2", nn::Param(4, Tensor::zeros({1}, DType::F64))}});
  // Plan order wide2 half wide w: the caps' plan alternates dtypes, whole() groups them in the
  // order they first occur.
  const BucketPlan alternating = BucketPlan::of(mixed);
  REQUIRE(alternating.buckets().size() == 4);
  // wide2 | half | wide | w: each a range of its dtype's whole buffer (F64: 3 + 2 flags, F32: 5 +
  // 2 flags).
  const std::vector<std::pair<std::int64_t, std::int64_t>> ranges = {
      {0, 5}, {0, 7}, {1, 5}, {2, 7}};
  for (std::size_t b = 0; b < ranges.size(); ++b) {
    INFO("bucket " << b);
    REQUIRE(alternating.buckets()[b].whole_offset == ranges[b].first);
    REQUIRE(alternating.buckets()[b].whole_total == ranges[b].second);
  }
  const BucketPlan whole = BucketPlan::whole(mixed);
  REQUIRE(paths(whole) == std::vector<std::vector<std::string>>{{"wide2", "wide"}, {"half", "w"}});
  REQUIRE(whole.buckets()[0].dtype == DType::F64);
  REQUIRE(whole.buckets()[1].entries[1].offset == 2);
  const BucketPlan all_f32 = BucketPlan::whole(mixed, /*all_f32=*/true);
  REQUIRE(paths(all_f32) == std::vector<std::vector<std::string>>{{"wide2", "half", "wide", "w"}});
  REQUIRE(all_f32.buckets()[0].dtype == DType::F32);
  REQUIRE(all_f32.buckets()[0].buffer_numel() == 8 + 4);
}

TEST_CASE("the bucket plan's hash follows the plan; bad caps are a ValueError", "[optim]") {
  ParamBag model = four_params();
  REQUIRE(BucketPlan::of(model).hash() == BucketPlan::of(four_params()).hash());
  REQUIRE(BucketPlan::of(model).hash() !=
          BucketPlan::of(model, {.bucket_cap_bytes = 8, .first_bucket_cap_bytes = 8}).hash());
  REQUIRE_THROWS_AS(BucketPlan::of(model, {.bucket_cap_bytes = 0}), ValueError);
  REQUIRE_THROWS_WITH(BucketPlan::of(model, {.first_bucket_cap_bytes = -1}),
                      Catch::Contains("expected bucket caps > 0 bytes"));
}

TEST_CASE("DataParallel::initialize fails on every rank when the bucket plans differ", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    ParamBag model = four_params();
    DataParallelOptions options{.overlap = true};
    if (comm.rank() == 1) options.bucket_cap_bytes = 8;
    DataParallel::initialize(comm, model, 0, options);
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE_FALSE(out[r].ok());
    CHECK(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
    CHECK_THAT(out[r].message(), Catch::Contains("rank 1's bucket plan or overlap flags differ"));
  }
  auto ok = run_group(2, [](Communicator& comm) {
    ParamBag model = four_params();
    return DataParallel::initialize(comm, model, 0, {.overlap = true, .bucket_cap_bytes = 8})
        .bucket_plan()
        .buckets()
        .size();
  });
  REQUIRE(ok[0].value() == 4);
  REQUIRE(ok[1].value() == 4);
}

TEST_CASE("the bucket plan of the Fashion-MNIST MLP is the one training.md draws", "[optim]") {
  Generator gen(0);
  nn::Sequential mlp({std::make_shared<nn::Linear>(784, 512, gen), std::make_shared<nn::ReLU>(),
                      std::make_shared<nn::Linear>(512, 512, gen), std::make_shared<nn::ReLU>(),
                      std::make_shared<nn::Linear>(512, 10, gen)});
  const BucketPlan plan = BucketPlan::of(mlp);
  REQUIRE(paths(plan) == std::vector<std::vector<std::string>>{{"4.bias", "4.weight", "2.bias"},
                                                               {"2.weight", "0.bias", "0.weight"}});
  REQUIRE(plan.buckets()[0].numel == 5642);
  REQUIRE(plan.buckets()[1].numel == 664064);
}
