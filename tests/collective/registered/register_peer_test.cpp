// The registered session API: registration rounds, session collectives, strategies, errors that
// reach every caller, finish_collective and reset_collective.
#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <thread>

#include "tests/collective/collective_test_support.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::testing;
using Kind = CollectiveErrorKind;
using namespace std::chrono_literals;

namespace {

CollectiveConfig config_for(int peers) {
  return CollectiveConfig().with_num_devices(peers).with_timeout(20s);
}

// Peer ids deliberately not 0..n-1, and registered from threads in reverse order: ranks follow
// the PeerId order.
PeerId peer_id(int index) { return PeerId(static_cast<std::uint32_t>(10 + 7 * index)); }

struct ResetGuard {
  ~ResetGuard() { reset_collective(); }
};

}  // namespace

TEST_CASE("registered peers all_reduce, broadcast and reduce, then finish", "[collective]") {
  ResetGuard guard;
  for (int peers : {1, 2, 4}) {
    auto out = run_ranks(peers, [&](int i) {
      const PeerId id = peer_id(peers - 1 - i);
      const int index = peers - 1 - i;
      register_peer(id, Device::cpu(), config_for(peers));
      std::vector<std::optional<Tensor>> got;
      got.push_back(all_reduce(id, Tensor::full({5}, index + 1.0), ReduceOperation::Sum));
      got.push_back(all_reduce(id, Tensor::full({5}, index + 1.0), ReduceOperation::Mean));
      got.push_back(broadcast(
          id, index == peers - 1 ? std::optional<Tensor>(Tensor::full({2}, 42.0)) : std::nullopt));
      got.push_back(
          reduce(id, Tensor::full({3}, 2.0, DType::I64), ReduceOperation::Prod, peer_id(0)));
      finish_collective(id);
      return got;
    });
    for (int i = 0; i < peers; ++i) {
      const int index = peers - 1 - i;
      INFO(peers << " peers, peer index " << index << ": "
                 << out[static_cast<std::size_t>(i)].message());
      const auto& got = out[static_cast<std::size_t>(i)].value();
      const double sum = peers * (peers + 1) / 2.0;
      REQUIRE_THAT(*got[0], TensorEqual(Tensor::full({5}, sum)));
      REQUIRE_THAT(*got[1], TensorEqual(Tensor::full({5}, sum / peers)));
      REQUIRE_THAT(*got[2], TensorEqual(Tensor::full({2}, 42.0)));
      REQUIRE(got[3].has_value() == (index == 0));
      if (index == 0) REQUIRE_THAT(*got[3], TensorEqual(Tensor::full({3}, 1 << peers, DType::I64)));
    }
  }
}

TEST_CASE("every session strategy gives bit-identical results", "[collective]") {
  ResetGuard guard;
  const int peers = 4;
  std::vector<Tensor> inputs;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1000.0f);
  for (int i = 0; i < peers; ++i) {
    std::vector<float> v(257);
    for (float& x : v) x = normal(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 20) - 10);
    inputs.push_back(Tensor::from_vector<float>(v));
  }
  std::vector<Tensor> results;
  for (Strategy s :
       {Strategy::centralized(), Strategy::tree(2), Strategy::tree(3), Strategy::ring()}) {
    const CollectiveConfig config = config_for(peers)
                                        .with_local_all_reduce_strategy(s)
                                        .with_local_reduce_strategy(s)
                                        .with_local_broadcast_strategy(s);
    auto out = run_ranks(peers, [&](int i) {
      register_peer(PeerId(i), Device::cpu(), config);
      std::vector<Tensor> got{
          all_reduce(PeerId(i), inputs[static_cast<std::size_t>(i)], ReduceOperation::Sum),
          all_reduce(PeerId(i), inputs[static_cast<std::size_t>(i)], ReduceOperation::Mean)};
      auto r =
          reduce(PeerId(i), inputs[static_cast<std::size_t>(i)], ReduceOperation::Sum, PeerId(2));
      if (r) got.push_back(*r);
      got.push_back(broadcast(PeerId(i), i == 1 ? std::optional<Tensor>(inputs[1]) : std::nullopt));
      finish_collective(PeerId(i));
      return got;
    });
    for (int i = 0; i < peers; ++i) {
      INFO(s.to_string() << ", peer " << i << ": " << out[static_cast<std::size_t>(i)].message());
      const auto& got = out[static_cast<std::size_t>(i)].value();
      if (results.empty()) results = {got[0], got[1]};
      REQUIRE_THAT(got[0], TensorEqual(results[0]));
      REQUIRE_THAT(got[1], TensorEqual(results[1]));
      if (i == 2) REQUIRE_THAT(got[2], TensorEqual(results[0]));
      REQUIRE_THAT(got.back(), TensorEqual(inputs[1]));
    }
  }
}

TEST_CASE("registration errors reach every registering peer", "[collective]") {
  ResetGuard guard;
  SECTION("mismatching configs") {
    auto out = run_ranks(2, [](int i) {
      if (i == 1) std::this_thread::sleep_for(20ms);  // peer 0 is already waiting
      register_peer(
          PeerId(i), Device::cpu(),
          i == 0 ? config_for(2) : config_for(2).with_local_all_reduce_strategy(Strategy::ring()));
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::RegistrationParamsMismatch);
  }
  SECTION("a duplicate id") {
    auto out = run_ranks(2, [](int i) {
      if (i == 1) std::this_thread::sleep_for(20ms);
      register_peer(PeerId(5), Device::cpu(), config_for(3));
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::DuplicateRegistration);
  }
  SECTION("an invalid config: global parameters partly set") {
    const CollectiveConfig bad =
        config_for(2).with_num_nodes(2).with_global_address("127.0.0.1:9000");
    REQUIRE_FALSE(bad.is_valid());
    auto out = run_ranks(2, [&](int i) {
      if (i == 1) std::this_thread::sleep_for(20ms);
      register_peer(PeerId(i), Device::cpu(), i == 0 ? config_for(2) : bad);
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::InvalidConfig);
  }
  SECTION("too few peers: a timeout listing who registered") {
    auto out = run_ranks(2, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(3).with_timeout(50ms));
    });
    for (auto& o : out) {
      REQUIRE(error_kind(o) == Kind::Timeout);
      REQUIRE(o.message().find("[0, 1]") != std::string::npos);
    }
  }
}

TEST_CASE("session calls by unregistered peers raise MissingRegistration", "[collective]") {
  ResetGuard guard;
  auto kind_of = [](auto fn) -> std::optional<Kind> {
    try {
      fn();
    } catch (const CollectiveError& e) {
      return e.kind();
    }
    return std::nullopt;
  };
  REQUIRE(kind_of([] { all_reduce(PeerId(99), Tensor::zeros({1}), ReduceOperation::Sum); }) ==
          Kind::MissingRegistration);
  REQUIRE(kind_of([] { broadcast(PeerId(99), std::nullopt); }) == Kind::MissingRegistration);
  REQUIRE(kind_of([] {
            reduce(PeerId(99), Tensor::zeros({1}), ReduceOperation::Sum, PeerId(0));
          }) == Kind::MissingRegistration);
  REQUIRE(kind_of([] { finish_collective(PeerId(99)); }) == Kind::MissingRegistration);
}

TEST_CASE("a failed session operation raises its error on every caller", "[collective]") {
  ResetGuard guard;
  SECTION("zero broadcast senders") {
    auto out = run_ranks(3, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(3));
      broadcast(PeerId(i), std::nullopt);
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::NoBroadcastSender);
  }
  SECTION("two broadcast senders") {
    auto out = run_ranks(3, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(3));
      broadcast(PeerId(i), i == 2 ? std::nullopt : std::optional<Tensor>(Tensor::zeros({1})));
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::SeveralBroadcastSenders);
  }
  SECTION("shapes") {
    auto out = run_ranks(2, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(2));
      all_reduce(PeerId(i), Tensor::zeros({i + 1}), ReduceOperation::Sum);
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::ShapeMismatch);
  }
  SECTION("reduce operations") {
    auto out = run_ranks(2, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(2));
      all_reduce(PeerId(i), Tensor::zeros({2}),
                 i == 0 ? ReduceOperation::Sum : ReduceOperation::Max);
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::ReduceOperationMismatch);
  }
  SECTION("roots") {
    auto out = run_ranks(2, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(2));
      reduce(PeerId(i), Tensor::zeros({2}), ReduceOperation::Sum, PeerId(i));
    });
    for (auto& o : out) REQUIRE(error_kind(o) == Kind::RootMismatch);
  }
  SECTION("a root that is not a peer") {
    auto out = run_ranks(2, [](int i) {
      register_peer(PeerId(i), Device::cpu(), config_for(2));
      reduce(PeerId(i), Tensor::zeros({2}), ReduceOperation::Sum, PeerId(7));
    });
    for (auto& o : out) {
      REQUIRE(error_kind(o) == Kind::InvalidArgument);
      REQUIRE(o.message().find("PeerId(7) is not a registered peer") != std::string::npos);
    }
  }
}

TEST_CASE("reset_collective fails blocked calls and lets a new session register", "[collective]") {
  ResetGuard guard;
  // Peers 0 and 1 block in all_reduce waiting for peer 2, which never calls; peer 3 blocks in
  // a registration round of its own after the session formed... the main thread resets.
  std::thread resetter([] {
    std::this_thread::sleep_for(150ms);
    reset_collective();
  });
  auto out = run_ranks(3, [](int i) {
    register_peer(PeerId(i), Device::cpu(), config_for(3));
    if (i == 2) {
      std::this_thread::sleep_for(400ms);  // after the reset its id is gone
      all_reduce(PeerId(i), Tensor::zeros({2}), ReduceOperation::Sum);
      return;
    }
    all_reduce(PeerId(i), Tensor::zeros({2}), ReduceOperation::Sum);
  });
  resetter.join();
  REQUIRE(error_kind(out[0]) == Kind::Aborted);
  REQUIRE(error_kind(out[1]) == Kind::Aborted);
  REQUIRE(out[0].message().find("reset_collective") != std::string::npos);
  REQUIRE(error_kind(out[2]) == Kind::MissingRegistration);

  // A registration blocked in an incomplete round is released too.
  std::thread resetter2([] {
    std::this_thread::sleep_for(50ms);
    reset_collective();
  });
  auto blocked = run_ranks(1, [](int) { register_peer(PeerId(1), Device::cpu(), config_for(2)); });
  resetter2.join();
  REQUIRE(error_kind(blocked[0]) == Kind::Aborted);

  // And a fresh session works.
  auto again = run_ranks(2, [](int i) {
    register_peer(PeerId(i), Device::cpu(), config_for(2));
    Tensor t = all_reduce(PeerId(i), Tensor::full({1}, 1.0), ReduceOperation::Sum);
    finish_collective(PeerId(i));
    return t.item<float>();
  });
  for (auto& o : again) REQUIRE(o.value() == 2.0f);
}
