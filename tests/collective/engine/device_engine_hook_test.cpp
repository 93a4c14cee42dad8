// register_device_engine (collective/engine/algorithm_engine.h): an AlgorithmEngine of a rank on a
// device whose library registered an engine hands every call to it; CPU ranks, host_only engines
// and engines made after the registration is removed keep our host path; a group whose ranks run
// different engines is refused by the agreement.
#include <catch2/catch.hpp>

#include <atomic>

#include "collective/engine/algorithm_engine.h"
#include "collective/in_process_group.h"
#include "collective/transport/in_process/in_process_transport.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using ruccl::testing::run_group;

namespace {

std::atomic<int> engines_made{0};
std::atomic<int> calls_seen{0};

// Answers every reduction with 42 and counts the calls.
class MarkerEngine final : public CollectiveEngine {
 public:
  std::string name() const override { return "marker"; }
  bool supports(OpKind, DType, Device) const override { return true; }
  bool bit_identical() const override { return true; }
  Tensor all_reduce(const EngineCall&, const Tensor& t, ReduceOperation) override {
    ++calls_seen;
    return Tensor::full(t.shape(), 42.0, t.dtype());
  }
  std::optional<Tensor> reduce(const EngineCall&, const Tensor& t, int, ReduceOperation) override {
    ++calls_seen;
    return Tensor::full(t.shape(), 42.0, t.dtype());
  }
  Tensor reduce_scatter(const EngineCall&, const Tensor& t, ReduceOperation) override {
    ++calls_seen;
    return t;
  }
  Tensor broadcast(const EngineCall&, const Tensor& t, int) override {
    ++calls_seen;
    return t;
  }
  Tensor all_gather(const EngineCall&, const Tensor& t) override {
    ++calls_seen;
    return Tensor::full(t.shape(), 42.0, t.dtype());
  }
  std::optional<Tensor> gather(const EngineCall&, const Tensor& t, int) override {
    ++calls_seen;
    return t;
  }
  Tensor scatter(const EngineCall&, const Tensor& t, int) override {
    ++calls_seen;
    return t;
  }
  Tensor all_to_all(const EngineCall&, const Tensor& t) override {
    ++calls_seen;
    return t;
  }
  AllToAllVResult all_to_all_v(const EngineCall&, const Tensor& t,
                               std::span<const std::int64_t>) override {
    ++calls_seen;
    return AllToAllVResult{t, {}};
  }
};

std::unique_ptr<CollectiveEngine> make_marker(Transport&, Device, const CommunicatorOptions&) {
  ++engines_made;
  return std::make_unique<MarkerEngine>();
}

}  // namespace

TEST_CASE("an AlgorithmEngine of a CUDA rank hands its calls to the registered device engine",
          "[engine]") {
  engines_made = 0;
  calls_seen = 0;
  auto hub = std::make_shared<InProcessHub>(1);
  InProcessTransport transport(hub, 0);
  const CommunicatorOptions options;
  register_device_engine(DeviceType::CUDA, &make_marker);
  AlgorithmEngine cuda_rank(transport, Device::cuda(0), options);
  AlgorithmEngine host_only(transport, Device::cuda(0), options, /*host_only=*/true);
  AlgorithmEngine cpu_rank(transport, Device::cpu(), options);
  register_device_engine(DeviceType::CUDA, nullptr);
  AlgorithmEngine after_removal(transport, Device::cpu(), options);
  CHECK(engines_made == 1);  // only the CUDA rank that may delegate made one

  CallRecord record;
  record.kind = OpKind::AllReduce;
  record.algorithm = static_cast<std::uint8_t>(Algorithm::Direct);
  const Deadline deadline = Deadline::after(std::chrono::seconds(5), "all_reduce");
  const EngineCall call{record, std::span<const CallRecord>(&record, 1), "all_reduce",
                        AlgorithmContext{transport, 0, deadline}};
  const Tensor t = Tensor::full({3}, 1.5);
  CHECK(cuda_rank.all_reduce(call, t, ReduceOperation::Sum).to_vector<float>() ==
        std::vector<float>{42, 42, 42});
  CHECK(cuda_rank.all_gather(call, t).to_vector<float>() == std::vector<float>{42, 42, 42});
  CHECK(calls_seen == 2);
  // The others run our algorithms on the host: one rank's sum is its input.
  CHECK(cpu_rank.all_reduce(call, t, ReduceOperation::Sum).to_vector<float>() ==
        std::vector<float>{1.5, 1.5, 1.5});
  CHECK(after_removal.all_reduce(call, t, ReduceOperation::Sum).to_vector<float>() ==
        std::vector<float>{1.5, 1.5, 1.5});
  CHECK(calls_seen == 2);
}

TEST_CASE(
    "a group whose ranks run different engines fails every call with InvalidConfig naming "
    "them",
    "[engine]") {
  // Rank 1 is on CUDA, whose library registered a device engine; rank 0 is on the CPU. Their
  // messages could never match: the agreement refuses the call before any engine runs it.
  calls_seen = 0;
  register_device_engine(DeviceType::CUDA, &make_marker);
  auto out = run_group(2,
                       [](Communicator& c) {
                         std::string engine = c.engine_name();
                         std::vector<std::string> errors;
                         for (int call = 0; call < 2; ++call) {
                           try {
                             if (call == 0) {
                               c.barrier();
                             } else {
                               (void)c.all_reduce(Tensor::full({3}, 1.0), ReduceOperation::Sum);
                             }
                             errors.push_back("no error");
                           } catch (const CollectiveError& e) {
                             errors.push_back(str(collective_error_kind_name(e.kind()), ": ",
                                                  e.what(), " ranks ", e.ranks().size()));
                           }
                         }
                         return std::make_pair(engine, errors);
                       },
                       CommunicatorOptions{}, {Device::cpu(), Device::cuda(0)});
  register_device_engine(DeviceType::CUDA, nullptr);
  REQUIRE(out[0].value().first == "algorithms");
  REQUIRE(out[1].value().first == "marker");
  for (int r = 0; r < 2; ++r) {
    const auto& errors = out[static_cast<std::size_t>(r)].value().second;
    INFO("rank " << r);
    REQUIRE(errors.size() == 2);
    CHECK_THAT(errors[0], Catch::StartsWith("InvalidConfig: barrier (call #1): engine mismatch: "
                                            "rank 0 has engine 'algorithms', rank 1 has engine "
                                            "'marker': every rank of a group must run the same "
                                            "engine"));
    CHECK_THAT(errors[0], Catch::EndsWith(" ranks 2"));
    // The group is finished after the first failure.
    CHECK_THAT(errors[1], Catch::StartsWith("Aborted: "));
  }
  CHECK(calls_seen == 0);  // no engine ran anything
}
