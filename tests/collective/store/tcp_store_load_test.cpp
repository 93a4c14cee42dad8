// One TcpStoreServer under the load of a large job's rendezvous: 1,024 clients (one per rank of a
// 1,024-rank job, each with its own connection and reader thread, as every rank has) connect in a
// storm from 16 threads, authenticate with the job secret, write their key, count themselves in
// and read a peer's key, while silent connections and a client parked on a key nobody writes sit
// beside them. Every client is served, and the whole rendezvous stays within a measured bound.
#include <catch2/catch.hpp>

#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collective/common/job_secret.h"
#include "collective/store/tcp_store.h"
#include "collective/store/tcp_store_server.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

TEST_CASE("a store serves the rendezvous of 1,024 clients beside silent and parked ones",
          "[collective][store][slow]") {
  constexpr int kClients = 1024;
  constexpr int kThreads = 16;
  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  TcpStoreServer server("127.0.0.1", 0, session, secret);

  // Beside them: silent connections (never a byte) and a client parked on a key written only at
  // the end.
  std::vector<net::Socket> silent;
  for (int i = 0; i < 8; ++i)
    silent.push_back(net::connect_tcp(server.endpoint(), Deadline::after(5s)));
  TcpStore parked_client(server.endpoint(), session, Deadline::after(10s), 300s, secret);
  std::atomic<bool> parked_done{false};
  std::thread parked([&] {
    parked_client.wait({"the end"}, Deadline::after(300s));
    parked_done = true;
  });

  std::vector<std::unique_ptr<TcpStore>> clients(kClients);
  std::atomic<int> failures{0};
  std::atomic<std::int64_t> slowest_connect_us{0};
  std::barrier all_in(kThreads);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int i = t; i < kClients; i += kThreads) {  // a storm: connect, write, count in
          const auto c0 = std::chrono::steady_clock::now();
          clients[i] = std::make_unique<TcpStore>(server.endpoint(), session, Deadline::after(120s),
                                                  300s, secret, i);
          const std::int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::steady_clock::now() - c0)
                                      .count();
          std::int64_t seen = slowest_connect_us.load();
          while (us > seen && !slowest_connect_us.compare_exchange_weak(seen, us)) {
          }
          clients[i]->set("rank/" + std::to_string(i), "address of " + std::to_string(i));
          if (clients[i]->add("arrived", 1) == kClients) clients[i]->set("all arrived", "yes");
        }
        all_in.arrive_and_wait();
        for (int i = t; i < kClients; i += kThreads) {  // every one reads the go key and a peer's
          clients[i]->wait({"all arrived"}, Deadline::after(120s));
          const int peer = (i * 7 + 1) % kClients;
          if (clients[i]->get_string("rank/" + std::to_string(peer), Deadline::after(120s)) !=
              "address of " + std::to_string(peer))
            ++failures;
        }
      } catch (const std::exception& e) {
        UNSCOPED_INFO("thread " << t << ": " << e.what());
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(failures == 0);
  CHECK(clients[0]->add("arrived", 0) == kClients);
  // The bound: 0.26-0.9 s measured here in release with the machine at load 17-19
  // (docs/testing.md); generous for the sanitizer builds.
  CHECK(seconds < 60);
  WARN(kClients << " clients: rendezvous in " << seconds << " s, the slowest connect took "
                << slowest_connect_us.load() / 1000 << " ms");
  // The parked wait is still pending, and is answered when its key comes.
  CHECK_FALSE(parked_done);
  clients[1]->set("the end", "yes");
  parked.join();
  CHECK(parked_done);
  clients.clear();
}
