// The engine seam (collective/engine/collective_engine.h): every collective reaches the group's
// engine once agreed; the core refuses, on every rank, what the engine cannot run; an engine's
// failure fails the whole group; require_bit_identical refuses an engine that is not.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>

#include "collective/engine/algorithm_engine.h"
#include "collective/transport/in_process/in_process_transport.h"
#include "tests/collective/collective_test_support.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

// What the probe engines of one group saw and do.
struct ProbeLog {
  std::mutex mutex;
  std::map<std::string, int> calls;  // "all_reduce" -> number of calls, over all ranks
  DType refused = DType::Bool;       // supports() is false for this dtype (Bool: refuses none)
  int failing_rank = -1;             // this rank's all_reduce throws
  bool bit_identical = true;
};

// Our algorithms, with a log of the calls that reach the engine.
class ProbeEngine final : public CollectiveEngine {
 public:
  ProbeEngine(Transport& transport, Device device, const CommunicatorOptions& options,
              std::shared_ptr<ProbeLog> log)
      : inner_(transport, device, options), rank_(transport.rank()), log_(std::move(log)) {}

  std::string name() const override { return "probe"; }
  bool supports(OpKind, DType dtype, Device) const override { return dtype != log_->refused; }
  bool bit_identical() const override { return log_->bit_identical; }
  bool sends_with_agreement(OpKind kind, Algorithm a) const override {
    return inner_.sends_with_agreement(kind, a);
  }
  Tensor all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) override {
    note("all_reduce");
    if (rank_ == log_->failing_rank) {
      throw CollectiveError(CollectiveErrorKind::InvalidArgument, "the probe engine failed",
                            {rank_});
    }
    return inner_.all_reduce(call, t, op);
  }
  std::optional<Tensor> reduce(const EngineCall& call, const Tensor& t, int root,
                               ReduceOperation op) override {
    note("reduce");
    return inner_.reduce(call, t, root, op);
  }
  Tensor reduce_scatter(const EngineCall& call, const Tensor& t, ReduceOperation op) override {
    note("reduce_scatter");
    return inner_.reduce_scatter(call, t, op);
  }
  Tensor broadcast(const EngineCall& call, const Tensor& t, int root) override {
    note("broadcast");
    return inner_.broadcast(call, t, root);
  }
  Tensor all_gather(const EngineCall& call, const Tensor& t) override {
    note("all_gather");
    return inner_.all_gather(call, t);
  }
  std::optional<Tensor> gather(const EngineCall& call, const Tensor& t, int root) override {
    note("gather");
    return inner_.gather(call, t, root);
  }
  Tensor scatter(const EngineCall& call, const Tensor& t, int root) override {
    note("scatter");
    return inner_.scatter(call, t, root);
  }
  Tensor all_to_all(const EngineCall& call, const Tensor& t) override {
    note("all_to_all");
    return inner_.all_to_all(call, t);
  }
  AllToAllVResult all_to_all_v(const EngineCall& call, const Tensor& t,
                               std::span<const std::int64_t> counts) override {
    note("all_to_all_v");
    return inner_.all_to_all_v(call, t, counts);
  }

 private:
  void note(const std::string& kind) {
    const std::lock_guard<std::mutex> lock(log_->mutex);
    ++log_->calls[kind];
  }

  AlgorithmEngine inner_;
  int rank_;
  std::shared_ptr<ProbeLog> log_;
};

std::vector<Communicator> probe_group(int world, const std::shared_ptr<ProbeLog>& log,
                                      CommunicatorOptions options = short_timeout()) {
  auto hub = std::make_shared<InProcessHub>(world, options.rank_names);
  std::vector<Communicator> comms;
  for (int r = 0; r < world; ++r) {
    comms.emplace_back(std::make_unique<InProcessTransport>(hub, r), Device::cpu(), options,
                       [log](Transport& t, Device d, const CommunicatorOptions& o) {
                         return std::make_unique<ProbeEngine>(t, d, o, log);
                       });
  }
  return comms;
}

template <typename Fn>
auto run_probe(int world, const std::shared_ptr<ProbeLog>& log, Fn fn) {
  std::vector<Communicator> comms = probe_group(world, log);
  return run_ranks(world, [&](int r) { return fn(comms[static_cast<std::size_t>(r)]); });
}

}  // namespace

TEST_CASE("Every collective of a group reaches the engine its factory made, once per rank",
          "[collective][engine]") {
  auto log = std::make_shared<ProbeLog>();
  const int world = 3;
  struct Seen {
    std::string engine;
    std::vector<float> sum, shard, broadcast, scattered, exchanged;
    bool has_reduce = false, has_gather = false;
    std::int64_t gathered = 0;
    std::vector<std::int64_t> counts;
  };
  auto out = run_probe(world, log, [](Communicator& c) {
    const Tensor x = Tensor::full({3}, static_cast<double>(c.rank() + 1), DType::F32);
    const std::vector<std::int64_t> counts = {1, 1, 1};
    Seen seen;
    seen.engine = c.engine_name();
    seen.sum = c.all_reduce(x, ReduceOperation::Sum).to_vector<float>();
    seen.has_reduce = c.reduce(x, 1, ReduceOperation::Sum).has_value();
    seen.shard = c.reduce_scatter(x, ReduceOperation::Sum).to_vector<float>();
    seen.broadcast = c.broadcast(x, 2).to_vector<float>();
    seen.gathered = c.all_gather(x).numel();
    seen.has_gather = c.gather(x, 0).has_value();
    seen.scattered = c.scatter(x, 0).to_vector<float>();
    seen.exchanged = c.all_to_all(x).to_vector<float>();
    seen.counts = c.all_to_all_v(x, counts).recv_counts;
    c.barrier();
    return seen;
  });
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(out[r].ok());
    const Seen& s = out[r].value();
    CHECK(s.engine == "probe");
    CHECK(s.sum == std::vector<float>{6, 6, 6});
    CHECK(s.has_reduce == (r == 1));
    CHECK(s.shard == std::vector<float>{6});
    CHECK(s.broadcast == std::vector<float>{3, 3, 3});
    CHECK(s.gathered == 9);
    CHECK(s.has_gather == (r == 0));
    CHECK(s.scattered == std::vector<float>{1});
    CHECK(s.exchanged == std::vector<float>{1, 2, 3});
    CHECK(s.counts == std::vector<std::int64_t>{1, 1, 1});
  }
  for (const char* kind : {"all_reduce", "reduce", "reduce_scatter", "broadcast", "all_gather",
                           "gather", "scatter", "all_to_all", "all_to_all_v"}) {
    INFO(kind);
    CHECK(log->calls[kind] == world);
  }
  CHECK(log->calls.size() == 9);  // barrier is the agreement alone: no engine call
}

TEST_CASE("A call the engine cannot run is refused on every rank, naming the engine",
          "[collective][engine]") {
  auto log = std::make_shared<ProbeLog>();
  log->refused = DType::F16;
  auto out = run_probe(2, log, [](Communicator& c) {
    c.all_reduce(Tensor::ones({4}, DType::F16), ReduceOperation::Sum);
  });
  for (const auto& o : out) {
    REQUIRE(error_kind(o) == CollectiveErrorKind::InvalidArgument);
    CHECK_THAT(o.message(), Catch::Contains("the probe engine can run all_reduce on, got a F16"));
  }
  CHECK(log->calls.empty());  // refused before any engine call, on every rank
}

TEST_CASE("An engine that fails on one rank fails the call on every rank and finishes the group",
          "[collective][engine]") {
  auto log = std::make_shared<ProbeLog>();
  log->failing_rank = 1;
  std::vector<Communicator> comms = probe_group(3, log);
  auto out = run_ranks(3, [&](int r) {
    comms[static_cast<std::size_t>(r)].all_reduce(Tensor::ones({1 << 16}), ReduceOperation::Sum,
                                                  CallOptions().with_algorithm(Algorithm::Ring));
  });
  for (const auto& o : out) REQUIRE_FALSE(o.ok());
  CHECK_THAT(out[1].message(), Catch::Contains("the probe engine failed"));
  for (const auto& c : comms) {
    REQUIRE(c.finished());
    CHECK_THAT(c.failure()->what(), Catch::Contains("the probe engine failed"));
  }
}

TEST_CASE("require_bit_identical refuses an engine whose reductions are not bit-identical",
          "[collective][engine]") {
  auto log = std::make_shared<ProbeLog>();
  log->bit_identical = false;
  CommunicatorOptions options = short_timeout();
  CHECK(probe_group(2, log, options).size() == 2);  // allowed unless asked for
  options.require_bit_identical = true;
  try {
    probe_group(2, log, options);
    FAIL("expected InvalidConfig");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK_THAT(e.what(), Catch::Contains("expected an engine with bit-identical reductions"));
    CHECK_THAT(e.what(), Catch::Contains("got the probe engine"));
  }
}
