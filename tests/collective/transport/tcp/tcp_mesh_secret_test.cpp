// The mesh of a group with a job secret (docs/security.md): the same results as without, an
// impostor refused and named while the group connects (or in the timeout when the real rank never
// comes), a squatted listener that learns nothing but a challenge, one-way shared-memory names, a
// squatted bell or segment name failing the set-up on every rank with a message, and silent
// connections that hold nothing.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <thread>

#include "collective/net/peer_auth.h"
#include "collective/store/in_memory_store.h"
#include "collective/transport/process/process_transport.h"
#include "collective/transport/shm/shm_connect.h"
#include "collective/transport/tcp/tcp_mesh_accept.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/error_capture.h"
#include "tests/collective/trace/debug_log_support.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

TcpTransportOptions loopback(const std::optional<JobSecret>& secret, int world) {
  TcpTransportOptions o;
  o.listen_host = "127.0.0.1";
  o.local_ranks = world;
  o.secret = secret;
  return o;
}

/// An outsider who read rank 0's address and dials it claiming rank 1, with a made-up proof.
void impostor(InMemoryStore& store) {
  const net::Endpoint at =
      net::parse_endpoint(store.get_string("ruccl/tcp/addr/0", Deadline::after(10s)));
  net::Socket s = net::connect_tcp(at, Deadline::after(5s));
  net::AuthMessage m;
  m.purpose = net::AuthPurpose::MeshControl;
  m.from_rank = 1;
  m.to_rank = 0;
  m.nonce = net::auth_nonce();
  auto bytes = net::encode_auth_message(m);
  net::write_all(s, bytes.data(), bytes.size(), Deadline::after(5s));
  net::read_exact(s, bytes.data(), bytes.size(), Deadline::after(5s));  // rank 0's response
  m.type = net::AuthMessageType::Proof;
  m.mac = net::auth_nonce();  // a guess
  bytes = net::encode_auth_message(m);
  net::write_all(s, bytes.data(), bytes.size(), Deadline::after(5s));
  std::uint8_t byte = 0;
  try {
    net::read_exact(s, &byte, 1, Deadline::after(5s));  // closed without a word
  } catch (const CollectiveError&) {
  }
}

/// Connects a 2-rank group without a secret (one thread per rank); each rank's error, "" if none.
std::vector<std::string> connect_errors(const SessionId& session) {
  InMemoryStore store;
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        TcpTransport::connect(store, r, 2, session, loopback(std::nullopt, 2));
      } catch (const CollectiveError& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

/// Rank 0 of a 2-rank group with a secret, connecting on a thread while a test plays strangers
/// at its listener (`at`); rank 1 comes when the test calls rank1_connects.
struct Rank0Listening {
  InMemoryStore store;
  SessionId session = random_session_id();
  TcpTransportOptions options = loopback(random_job_secret(), 2);
  std::vector<std::unique_ptr<TcpTransport>> ranks{2};
  std::thread rank0{[this] { ranks[0] = TcpTransport::connect(store, 0, 2, session, options); }};
  net::Endpoint at =
      net::parse_endpoint(store.get_string("ruccl/tcp/addr/0", Deadline::after(10s)));

  ~Rank0Listening() {
    if (rank0.joinable()) rank0.join();
  }
  /// Connects rank 1 and waits for rank 0: how long that took. Both are then connected.
  std::chrono::steady_clock::duration rank1_connects() {
    const auto start = std::chrono::steady_clock::now();
    ranks[1] = TcpTransport::connect(store, 1, 2, session, options);
    rank0.join();
    CHECK(ranks[0] != nullptr);
    return std::chrono::steady_clock::now() - start;
  }
};

}  // namespace

TEST_CASE("a group with a secret computes what one without does, through TCP and shared memory",
          "[collective][tcp][shm][security]") {
  for (const bool shm : {true, false}) {
    INFO("shared memory " << shm);
    TcpTransportOptions transport;
    transport.secret = random_job_secret();
    if (!shm) transport.shared_memory = SharedMemory::Off;
    std::vector<int> ok(3, 0);
    run_ranks(make_tcp_loopback_group(3, short_timeout(), transport), [&](Communicator& c) {
      const Tensor in = Tensor::full(Shape{100003}, c.rank() + 1.0, DType::F32);
      const auto v = c.all_reduce(in, ReduceOperation::Sum).to_vector<float>();
      ok[static_cast<std::size_t>(c.rank())] = v.front() == 6.0F && v.back() == 6.0F;
    });
    CHECK(ok == std::vector<int>(3, 1));
  }
}

TEST_CASE("an impostor rank without the secret is refused and named while the group connects",
          "[collective][tcp][security]") {
  InMemoryStore store;
  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  const std::uint64_t before = net::auth_refusals();
  std::vector<std::unique_ptr<TcpTransport>> ranks(2);
  std::thread rank0(
      [&] { ranks[0] = TcpTransport::connect(store, 0, 2, session, loopback(secret, 2)); });
  impostor(store);
  CHECK(net::auth_refusals() == before + 1);
  CHECK(contains(net::last_auth_refusal(), "claiming rank 1: wrong MAC"));
  ranks[1] = TcpTransport::connect(store, 1, 2, session, loopback(secret, 2));  // the real rank 1
  rank0.join();
  REQUIRE(ranks[0]);
  std::vector<Communicator> comms;
  for (auto& t : ranks) comms.emplace_back(std::move(t), Device::cpu(), short_timeout());
  std::vector<double> sums(2);
  run_ranks(std::move(comms), [&](Communicator& c) {
    sums[static_cast<std::size_t>(c.rank())] =
        c.all_reduce(Tensor::full(Shape{1}, c.rank() + 1.0, DType::F64), ReduceOperation::Sum)
            .item<double>();
  });
  CHECK(sums == std::vector<double>{3.0, 3.0});
}

TEST_CASE("an impostor is named in the timeout when the real rank never comes",
          "[collective][tcp][security]") {
  InMemoryStore store;
  const SessionId session = random_session_id();
  TcpTransportOptions options = loopback(random_job_secret(), 2);
  options.connect_timeout = 1500ms;
  std::optional<CollectiveError> error;
  std::thread rank0([&] {
    try {
      TcpTransport::connect(store, 0, 2, session, options);
    } catch (const CollectiveError& e) {
      error = e;
    }
  });
  impostor(store);
  rank0.join();
  REQUIRE(error.has_value());
  CHECK(error->kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(error->what(),
                 "never connected within 1500 ms; 1 connection(s) failed "
                 "authentication, the last: 127.0.0.1:"));
  CHECK(contains(error->what(), "claiming rank 1: wrong MAC (it does not hold the secret)"));
}

TEST_CASE("a rank dialling a squatted listener sends it a challenge and nothing else",
          "[collective][tcp][security]") {
  InMemoryStore store;
  const SessionId session = random_session_id();
  net::Socket squatter = net::listen_tcp("127.0.0.1", 0);
  store.set("ruccl/tcp/addr/0", net::local_endpoint(squatter).to_string());
  std::vector<std::uint8_t> heard;
  std::thread outsider([&] {
    net::Socket s = net::accept_tcp(squatter, Deadline::after(10s));
    std::uint8_t byte = 0;
    try {
      for (;;) {  // everything until the rank gives up (or 1 s of silence)
        net::read_exact(s, &byte, 1, Deadline::after(1s));
        heard.push_back(byte);
      }
    } catch (const CollectiveError&) {
    }
  });
  TcpTransportOptions options = loopback(random_job_secret(), 2);
  options.connect_timeout = 3s;
  const CollectiveError e = error_of([&] { TcpTransport::connect(store, 1, 2, session, options); });
  outsider.join();
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  CHECK(contains(e.what(), "is not rank 0 of this job"));
  CHECK(contains(e.what(), "failed authentication"));
  CHECK(heard.size() == net::kAuthMessageBytes);  // the challenge: no Hello, no session id
  CHECK(std::search(heard.begin(), heard.end(), session.begin(), session.end()) == heard.end());
}

TEST_CASE("shared-memory names derive one-way from the secret or the session",
          "[collective][shm][security]") {
  const SessionId session = random_session_id();
  TcpTransportOptions with;
  with.secret = random_job_secret();
  const std::string named = shared_memory_group_name(session, with);
  const std::string unnamed = shared_memory_group_name(session, {});
  CHECK(named != unnamed);
  CHECK(named.size() == 32);
  CHECK_FALSE(contains(named + unnamed, session_id_to_hex(session).substr(0, 12)));
  with.store_prefix = "other";
  CHECK(shared_memory_group_name(session, with) != named);
}

TEST_CASE("a squatted bell name fails the shared-memory set-up on every rank with a message",
          "[collective][shm][security]") {
  const SessionId session = random_session_id();
  const std::string name = str("ruccl-", shared_memory_group_name(session, {}), "-1");
  net::Socket squat(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::copy(name.begin(), name.end(), address.sun_path + 1);
  REQUIRE(::bind(squat.fd(), reinterpret_cast<const sockaddr*>(&address),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
  const std::vector<std::string> errors = connect_errors(session);
  for (const std::string& e : errors) {
    CHECK(contains(e, "its abstract socket name is already bound by another process"));
  }
}

TEST_CASE("a segment name taken by another user fails the set-up on every rank, naming the uid",
          "[collective][shm][security]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot play another user here (the test needs to set its uid)");
    return;
  }
  const SessionId session = random_session_id();
  const std::string name = str("/ruccl-", shared_memory_group_name(session, {}), "-0-1");
  const pid_t child = ::fork();
  if (child == 0) {  // the other user: nobody
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0666);
    ::_exit(fd >= 0 ? 0 : 3);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::vector<std::string> errors = connect_errors(session);
  ::shm_unlink(name.c_str());
  for (const std::string& e : errors) {
    CHECK(contains(e, "shared-memory segment " + name + ": the name is taken by uid 65534"));
  }
}

TEST_CASE("silent strangers, and strangers that speak and then stall, do not hold up a group",
          "[collective][tcp][security]") {
  for (const bool with_secret : {true, false}) {
    INFO("secret " << with_secret);
    InMemoryStore store;
    const SessionId session = random_session_id();
    const TcpTransportOptions options =
        loopback(with_secret ? std::optional<JobSecret>(random_job_secret()) : std::nullopt, 3);
    std::vector<std::unique_ptr<TcpTransport>> ranks(3);
    std::thread rank0([&] { ranks[0] = TcpTransport::connect(store, 0, 3, session, options); });
    const net::Endpoint at =
        net::parse_endpoint(store.get_string("ruccl/tcp/addr/0", Deadline::after(10s)));
    std::vector<net::Socket> strangers;
    for (int i = 0; i < 20; ++i) strangers.push_back(net::connect_tcp(at, Deadline::after(5s)));
    const std::uint8_t start_of_a_message[10] = {};
    for (int i = 0; i < 10; ++i) {  // each sends 10 bytes, then nothing: 2 s per step each
      strangers.push_back(net::connect_tcp(at, Deadline::after(5s)));
      net::write_all(strangers.back(), start_of_a_message, sizeof start_of_a_message,
                     Deadline::after(5s));
    }
    std::this_thread::sleep_for(50ms);  // their handshakes are under way
    const auto start = std::chrono::steady_clock::now();
    std::thread rank1([&] { ranks[1] = TcpTransport::connect(store, 1, 3, session, options); });
    ranks[2] = TcpTransport::connect(store, 2, 3, session, options);
    rank1.join();
    rank0.join();
    // Before: each silent one held the listener 5 s in turn, each stalled one 2 s (120 s here).
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    CHECK((ranks[0] && ranks[1] && ranks[2]));
  }
}

TEST_CASE("a flood of silent connections from one address closes its oldest beyond the cap",
          "[collective][tcp][security]") {
  Rank0Listening job;
  std::vector<net::Socket> silent;
  for (std::size_t i = 0; i < kMaxSilentPerAddress + 4; ++i) {
    silent.push_back(net::connect_tcp(job.at, Deadline::after(5s)));
  }
  // The first 4 are closed by rank 0 (end of stream), well before their 5 s are up.
  for (std::size_t i = 0; i < 4; ++i) {
    std::uint8_t byte = 0;
    const CollectiveError e =
        error_of([&] { net::read_exact(silent[i], &byte, 1, Deadline::after(3s)); });
    CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  }
  CHECK(contains(net::last_auth_refusal(), "silent connections from its address"));
  CHECK(job.rank1_connects() < 3s);
}

TEST_CASE("a refused connection is a RUCCL_DEBUG line and in the hang report, never the secret",
          "[collective][tcp][security]") {
  const auto dir = fresh_dir("ruccl_refusal_log");
  const std::string pattern = (dir / "log.%r").string();
  const JobSecret secret = random_job_secret();
  const std::string hex = job_secret_to_hex(secret);
  std::string timeout;
  {
    const ScopedEnv level("RUCCL_DEBUG", "WARN");
    const ScopedEnv file("RUCCL_DEBUG_FILE", pattern.c_str());
    InMemoryStore store;
    const SessionId session = random_session_id();
    std::vector<std::unique_ptr<TcpTransport>> ranks(2);
    std::thread rank0(
        [&] { ranks[0] = TcpTransport::connect(store, 0, 2, session, loopback(secret, 2)); });
    impostor(store);
    ranks[1] = TcpTransport::connect(store, 1, 2, session, loopback(secret, 2));
    rank0.join();
    REQUIRE(ranks[0]);
    std::vector<Communicator> comms;
    for (auto& t : ranks) comms.emplace_back(std::move(t), Device::cpu(), short_timeout());
    run_ranks(std::move(comms), [&](Communicator& c) {
      if (c.rank() == 0) {
        try {
          c.barrier(CallOptions().with_timeout(100ms));
        } catch (const CollectiveError& e) {
          timeout = e.what();
        }
      } else {
        while (!c.finished()) std::this_thread::sleep_for(1ms);
      }
    });
  }
  const std::string log = read_text(dir / "log.0") + read_text(dir / "log.1");
  std::filesystem::remove_all(dir);
  INFO(log);
  // 1 here, more when earlier test cases of this process refused some that no log took.
  CHECK(contains(log, "ruccl WARN refused "));
  CHECK(contains(log, " connection(s) since the last report ("));
  CHECK(contains(log, "claiming rank 1: wrong MAC (it does not hold the secret)"));
  CHECK(contains(timeout, "calls reached: "));
  CHECK(contains(timeout, "connection(s) refused by this process"));
  CHECK(contains(timeout, "claiming rank 1: wrong MAC"));
  for (const std::string& text : {log, timeout}) {
    CHECK_FALSE(contains(text, hex));
    CHECK_FALSE(contains(text, hex.substr(0, 16)));
  }
}

TEST_CASE("a flood of stalled handshakes from one address queues a bounded number, then the group",
          "[collective][tcp][security][slow]") {
  Rank0Listening job;
  // 64 handshakes run (each stalls its 2 s), 64 queue, and 2 more close the 2 oldest queued.
  const std::size_t n = kMaxHandshakesPerAddress + kMaxSilentPerAddress + 2;
  std::vector<net::Socket> stalled;
  const std::uint8_t start_of_a_message[10] = {};
  for (std::size_t i = 0; i < n; ++i) {
    stalled.push_back(net::connect_tcp(job.at, Deadline::after(5s)));
    net::write_all(stalled.back(), start_of_a_message, sizeof start_of_a_message,
                   Deadline::after(5s));
  }
  std::uint8_t byte = 0;
  for (const std::size_t i : {kMaxHandshakesPerAddress, kMaxHandshakesPerAddress + 1}) {
    INFO("connection " << i);
    const CollectiveError e =
        error_of([&] { net::read_exact(stalled[i], &byte, 1, Deadline::after(1900ms)); });
    CHECK(e.kind() == CollectiveErrorKind::PeerLost);  // closed, well before a step's 2 s
  }
  CHECK(contains(net::last_auth_refusal(), "waiting for a handshake"));
  const CollectiveError still = error_of([&] {
    net::read_exact(stalled[kMaxHandshakesPerAddress + 2], &byte, 1, Deadline::after(200ms));
  });
  CHECK(still.kind() == CollectiveErrorKind::Timeout);  // queued, still open
  // Behind at most one round of stalled handshakes (2 s each, in parallel; one at a time they
  // held the listener 260 s).
  CHECK(job.rank1_connects() < 6s);
}
