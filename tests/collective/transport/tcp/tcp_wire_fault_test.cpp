// Faults injected on the TCP wire, below the framing (TcpTransportOptions::wire_faults): each is
// detected by the receiver's checks and fails every rank with the right error, naming the rank,
// with no hang. (The Transport-level wrapper's faults over TCP: fault_injection_test.cpp.)
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "collective/collective.h"
#include "collective/common/job_secret.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"

namespace ruccl {
namespace {

struct Outcome {
  bool ok = false;
  CollectiveErrorKind kind = CollectiveErrorKind::Unsupported;
  std::string message;
  std::vector<int> ranks;
  std::vector<float> values;
  bool finished = false;  ///< the communicator is finished (the failure reached this rank)
};

/// Two ranks run `calls` all_reduces of 1000 floats (Direct), each rank's transport options set
/// by `customize`.
std::vector<Outcome> run_customized(const std::function<void(int, TcpTransportOptions&)>& customize,
                                    int calls = 1,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                    bool barrier = true) {
  CommunicatorOptions options;
  options.timeout = timeout;
  auto comms = testing::make_tcp_loopback_group(2, options, {}, customize);
  std::vector<Outcome> out(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Outcome& o = out[static_cast<std::size_t>(r)];
      try {
        for (int i = 0; i < calls; ++i) {
          o.values =
              comms[static_cast<std::size_t>(r)]
                  .all_reduce(Tensor::full(Shape{1000}, r + 1.0, DType::F32), ReduceOperation::Sum,
                              CallOptions().with_algorithm(Algorithm::Direct))
                  .to_vector<float>();
        }
        if (barrier) comms[static_cast<std::size_t>(r)].barrier();
        o.ok = true;
      } catch (const CollectiveError& e) {
        o.kind = e.kind();
        o.message = e.what();
        o.ranks = e.ranks();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    // Both ranks succeeded: nothing is on its way (no wait); else the failure must arrive.
    const bool all_ok = out[0].ok && out[1].ok;
    out[static_cast<std::size_t>(r)].finished =
        all_ok ? comms[static_cast<std::size_t>(r)].finished()
               : testing::finished_within(comms[static_cast<std::size_t>(r)]);
  }
  return out;
}

/// run_customized where rank 0 injects `rule` on its wire. Payload checksums are on for both
/// ranks (over loopback they are off by default): a Corrupt fault is a payload that fails its CRC.
std::vector<Outcome> run_with_fault(const FaultRule& rule, int calls = 1,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                    bool barrier = true) {
  return run_customized(
      [&](int r, TcpTransportOptions& o) {
        o.payload_checksum = PayloadChecksum::On;
        if (r == 0) o.wire_faults.add(rule);
      },
      calls, timeout, barrier);
}

/// Both ranks failed because rank 0 sent rank 1 a frame it refused (`what`). Rank 1 reads the bad
/// frame: PeerLost. Rank 0's all_reduce may complete first (what it received was sound); the
/// failure then reaches it inside the barrier (PeerLost), or before the barrier starts, which
/// refuses with Aborted naming that first error.
void check_rank0_refused(const std::vector<Outcome>& out, const std::string& what) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    const Outcome& o = out[r];
    INFO("rank " << r << ": " << o.message);
    CHECK_FALSE(o.ok);
    if (r == 1) {
      CHECK(o.kind == CollectiveErrorKind::PeerLost);
    } else {
      CHECK((o.kind == CollectiveErrorKind::PeerLost || o.kind == CollectiveErrorKind::Aborted));
    }
    CHECK_THAT(o.message, Catch::Contains("rank 0 sent a malformed frame: " + what));
    CHECK(o.ranks == std::vector<int>{0});
  }
}

TEST_CASE("tcp corrupted payload on the wire fails its CRC on every rank", "[collective][tcp]") {
  check_rank0_refused(run_with_fault(FaultRule::on_message(FaultAction::Corrupt, 1, 0)),
                      "payload CRC-32C mismatch");
}

/// Rank r's options under RUCCL_INTEGRITY=mac (`mac`), with the job's `secret`, over TCP only
/// (the MAC is a TCP frame's).
void integrity(TcpTransportOptions& o, const JobSecret& secret, bool mac) {
  o.secret = secret;
  o.integrity = mac ? Integrity::Mac : Integrity::Off;
  o.shared_memory = SharedMemory::Off;
}

TEST_CASE("tcp a payload byte changed on the wire arrives unnoticed without checksums",
          "[collective][tcp][security]") {
  // What RUCCL_INTEGRITY=off with payload checksums off (the default between loopback ends)
  // gives against a changed byte: a wrong result on rank 1 and no error (docs/security.md).
  const JobSecret secret = random_job_secret();
  const auto out = run_customized([&](int r, TcpTransportOptions& o) {
    integrity(o, secret, false);
    o.payload_checksum = PayloadChecksum::Off;
    // Byte 3 of rank 0's first float (1.0f = 0x3F800000): its sign bit, so 1 + 2 = 3 becomes 1.
    if (r == 0)
      o.wire_faults.add(FaultRule::on_message(FaultAction::Corrupt, 1, 0).with_corruption(3, 0x80));
  });
  REQUIRE(out[0].ok);
  REQUIRE(out[1].ok);
  CHECK(out[0].values == std::vector<float>(1000, 3.0f));
  CHECK(out[1].values[0] == 1.0f);
  CHECK(out[1].values[1] == 3.0f);
}

TEST_CASE("tcp RUCCL_INTEGRITY=mac refuses a changed payload byte on every rank, naming the sender",
          "[collective][tcp][security]") {
  const JobSecret secret = random_job_secret();
  for (const std::size_t offset : {std::size_t{3}, std::size_t{3999}}) {
    INFO("offset " << offset);
    check_rank0_refused(
        run_customized([&](int r, TcpTransportOptions& o) {
          integrity(o, secret, true);
          if (r == 0)
            o.wire_faults.add(
                FaultRule::on_message(FaultAction::Corrupt, 1, 0).with_corruption(offset, 0x80));
        }),
        "MAC mismatch in Data frame");
  }
}

TEST_CASE("tcp RUCCL_INTEGRITY=mac refuses a replayed frame", "[collective][tcp][security]") {
  const JobSecret secret = random_job_secret();
  const auto out = run_customized([&](int r, TcpTransportOptions& o) {
    integrity(o, secret, true);
    if (r == 0) o.wire_faults.add(FaultRule::on_message(FaultAction::Duplicate, 1, 0));
  });
  INFO(out[1].message);
  CHECK(out[1].kind == CollectiveErrorKind::PeerLost);
  CHECK_THAT(out[1].message, Catch::Contains("rank 0") && Catch::Contains("out of order"));
  CHECK(out[0].finished);
}

TEST_CASE("tcp RUCCL_INTEGRITY=mac gives the exact result, over messages of one and many frames",
          "[collective][tcp][security]") {
  const JobSecret secret = random_job_secret();
  for (const bool shm : {false, true}) {  // shared memory: the MAC is not applied there
    INFO("shared memory " << shm);
    CommunicatorOptions options;
    options.timeout = std::chrono::seconds(10);
    auto comms = testing::make_tcp_loopback_group(3, options, {}, [&](int, TcpTransportOptions& o) {
      integrity(o, secret, true);
      if (shm) o.shared_memory = SharedMemory::Auto;
    });
    std::vector<int> exact(3, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r) {
      threads.emplace_back([&, r] {
        Communicator& c = comms[static_cast<std::size_t>(r)];
        bool ok = true;
        for (const std::int64_t n : {1, 1000, 300001}) {  // 300001 floats: 5 frames per message
          const auto v =
              c.all_reduce(Tensor::full(Shape{n}, r + 1.0, DType::F32)).to_vector<float>();
          ok = ok && v == std::vector<float>(static_cast<std::size_t>(n), 6.0f);
        }
        c.barrier();
        exact[static_cast<std::size_t>(r)] = ok;
      });
    }
    for (auto& t : threads) t.join();
    CHECK(exact == std::vector<int>(3, 1));
  }
}

TEST_CASE("tcp ranks whose RUCCL_INTEGRITY differs fail at the first frame, saying so",
          "[collective][tcp][security]") {
  const JobSecret secret = random_job_secret();
  const auto out =
      run_customized([&](int r, TcpTransportOptions& o) { integrity(o, secret, r == 0); });
  for (const Outcome& o : out) {
    INFO(o.message);
    CHECK_FALSE(o.ok);
    CHECK_THAT(o.message, Catch::Contains("RUCCL_INTEGRITY"));
  }
}

TEST_CASE("tcp RUCCL_INTEGRITY=mac without a secret is refused at connect",
          "[collective][tcp][security]") {
  TcpTransportOptions o;
  o.integrity = Integrity::Mac;
  try {
    testing::make_tcp_loopback_group(2, {}, o);
    FAIL("connected");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK_THAT(e.what(), Catch::Contains("RUCCL_INTEGRITY=mac needs a job secret"));
  }
}

TEST_CASE("tcp ranks whose payload checksum settings differ fail at the first message",
          "[collective][tcp]") {
  check_rank0_refused(run_customized([](int r, TcpTransportOptions& o) {
                        o.payload_checksum = r == 0 ? PayloadChecksum::Off : PayloadChecksum::On;
                        o.shared_memory =
                            SharedMemory::Off;  // checksums are for frames on the wire
                      }),
                      "expected a payload CRC-32C");
}

TEST_CASE("tcp payload checksums on or off on both ranks give the exact result",
          "[collective][tcp]") {
  for (const PayloadChecksum mode :
       {PayloadChecksum::Auto, PayloadChecksum::On, PayloadChecksum::Off}) {
    const auto out =
        run_customized([&](int, TcpTransportOptions& o) { o.payload_checksum = mode; }, 3);
    for (const Outcome& o : out) {
      INFO(static_cast<int>(mode) << ": " << o.message);
      REQUIRE(o.ok);
      CHECK(o.values == std::vector<float>(1000, 3.0f));
    }
  }
}

TEST_CASE("tcp duplicated frame on the wire is out of sequence", "[collective][tcp]") {
  const auto out = run_with_fault(FaultRule::on_message(FaultAction::Duplicate, 1, 0));
  INFO(out[1].message);
  CHECK(out[1].kind == CollectiveErrorKind::PeerLost);
  CHECK_THAT(out[1].message, Catch::Contains("rank 0") && Catch::Contains("out of order"));
  CHECK(out[0].finished);  // its calls may have ended first; the failure still reached it
}

TEST_CASE("tcp dropped message is a sequence gap at the next frame", "[collective][tcp]") {
  const auto out = run_with_fault(FaultRule::on_message(FaultAction::Drop, 1, 0), 2);
  INFO(out[1].message);
  CHECK(out[1].kind == CollectiveErrorKind::PeerLost);
  CHECK_THAT(out[1].message, Catch::Contains("rank 0") && Catch::Contains("out of order"));
  CHECK(out[0].finished);  // the failure reached the sender too
}

TEST_CASE("tcp dropped last message times out naming the sender", "[collective][tcp]") {
  // Rank 0 drops everything to rank 1 from its first message on: rank 1 waits for the data,
  // then its deadline names rank 0.
  const auto start = std::chrono::steady_clock::now();
  const auto out = run_with_fault(FaultRule::on_message(FaultAction::Drop, 1, 0), 1,
                                  std::chrono::milliseconds(400), false);
  INFO(out[1].message);
  CHECK(out[1].kind == CollectiveErrorKind::Timeout);
  CHECK(out[1].ranks == std::vector<int>{0});
  CHECK(out[0].finished);  // the timeout is sent to every rank
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("tcp cut data connection is a lost peer on both sides", "[collective][tcp]") {
  const auto out = run_with_fault(FaultRule::on_message(FaultAction::Cut, 1, 0));
  INFO(out[1].message);
  // Rank 0 cuts at its first data message, which it sends with its record before waiting for
  // rank 1: rank 1 may find the loss in its call (PeerLost) or, entering it later, the group
  // already finished by it (Aborted, carrying rank 0's PeerLost).
  const bool in_call = out[1].kind == CollectiveErrorKind::PeerLost;
  const bool after = out[1].kind == CollectiveErrorKind::Aborted &&
                     out[1].message.find("finished after an earlier error") != std::string::npos &&
                     out[1].message.find("lost rank 1") != std::string::npos;
  CHECK((in_call || after));
  CHECK_THAT(out[1].message, Catch::Contains("rank 0"));
  CHECK(out[0].finished);
}

TEST_CASE("tcp delay below the deadline still gives the exact result", "[collective][tcp]") {
  const auto out = run_with_fault(
      FaultRule::on_message(FaultAction::Delay, 1, 0).with_delay(std::chrono::milliseconds(60)));
  for (const Outcome& o : out) {
    INFO(o.message);
    CHECK(o.ok);
    CHECK_FALSE(o.finished);
    CHECK(o.values == std::vector<float>(1000, 3.0f));
  }
}

TEST_CASE("tcp rank killed at a call through the fault wrapper fails the others naming it",
          "[collective][tcp]") {
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(10);
  auto comms = testing::make_tcp_loopback_group_with_faults(3, options, [](int r) {
    FaultPlan plan;
    if (r == 1) plan.add(FaultRule::on_call(FaultAction::KillRank, 1));
    return plan;
  });
  std::vector<Outcome> out(3);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      Outcome& o = out[static_cast<std::size_t>(r)];
      try {
        for (int i = 0; i < 3; ++i) {
          comms[static_cast<std::size_t>(r)].all_reduce(Tensor::ones(Shape{300000}, DType::F32));
        }
        o.ok = true;
      } catch (const CollectiveError& e) {
        o.kind = e.kind();
        o.message = e.what();
        o.ranks = e.ranks();
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  for (const int r : {0, 2}) {
    // PeerLost, or Aborted carrying it when the rank entered its next call after the loss.
    const Outcome& o = out[static_cast<std::size_t>(r)];
    INFO(o.message);
    CHECK((o.kind == CollectiveErrorKind::PeerLost || o.kind == CollectiveErrorKind::Aborted));
    CHECK_THAT(o.message, Catch::Contains("lost rank 1"));
    CHECK(o.ranks == std::vector<int>{1});
  }
  CHECK_FALSE(out[1].ok);  // the dead rank's own calls end too
}

}  // namespace
}  // namespace ruccl
