// What a TCP group costs at start-up, counted: the sockets a rank holds (/proc/self/fd) and the
// store reads it makes. Today's mesh is eager (docs/collectives.md, "Connections at scale"):
// every rank holds a control and a data connection to each of its W - 1 peers whatever the
// algorithm, and rank r reads the address of every lower rank from the store. These tests pin
// those numbers, so a change to how connections are made (lazy connections, issue 34) shows here.
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "collective/store/in_memory_store.h"
#include "collective/tcp_group.h"

namespace ruccl {
namespace {

/// The sockets this process holds open.
std::size_t open_sockets() {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const auto target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

/// A rank's view of a shared store that counts the reads (get) it makes, by key.
class CountingStore final : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> inner) : inner_(std::move(inner)) {}
  std::string describe() const override { return "CountingStore"; }
  std::vector<std::string> reads() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return reads_;
  }

 protected:
  void do_set(std::string_view key, std::span<const std::uint8_t> value) override {
    inner_->set(key, value);
  }
  StoreValue do_get(std::string_view key, const Deadline& deadline) override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      reads_.emplace_back(key);
    }
    return inner_->get(key, deadline);
  }
  void do_wait(std::span<const std::string> keys, const Deadline& deadline) override {
    inner_->wait(keys, deadline);
  }
  std::int64_t do_add(std::string_view key, std::int64_t delta) override {
    return inner_->add(key, delta);
  }
  StoreValue do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                            std::span<const std::uint8_t> desired) override {
    return inner_->compare_set(key, expected, desired);
  }
  bool do_remove(std::string_view key) override { return inner_->remove(key); }
  bool do_check(std::span<const std::string> keys) override { return inner_->check(keys); }

 private:
  std::shared_ptr<Store> inner_;
  mutable std::mutex mutex_;
  std::vector<std::string> reads_;
};

std::size_t count_containing(const std::vector<std::string>& keys, const std::string& part) {
  std::size_t n = 0;
  for (const auto& key : keys) n += key.find(part) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("an eager TCP group of 8 holds 2 (W - 1) sockets per rank and reads W(W-1)/2 addresses",
          "[collective][tcp]") {
  constexpr int kWorld = 8;
  const SessionId session = random_session_id();
  auto shared = std::make_shared<InMemoryStore>();
  std::vector<std::shared_ptr<CountingStore>> stores;
  for (int r = 0; r < kWorld; ++r) stores.push_back(std::make_shared<CountingStore>(shared));
  TcpTransportOptions transport;
  transport.listen_host = "127.0.0.1";
  transport.local_ranks = kWorld;
  transport.shared_memory = SharedMemory::Off;  // the data path of every pair is its socket
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(20);

  const std::size_t before = open_sockets();
  std::vector<Communicator> comms(kWorld);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorld; ++r) {
      threads.emplace_back([&, r] {
        comms[static_cast<std::size_t>(r)] =
            TcpGroup::connect(stores[static_cast<std::size_t>(r)], r, kWorld, session,
                              Device::cpu(), options, transport);
      });
    }
    for (auto& t : threads) t.join();
  }
  // Connected: every listener is closed, each rank holds a control and a data socket per peer.
  const std::size_t connected = open_sockets();
  CHECK(connected - before == static_cast<std::size_t>(kWorld * 2 * (kWorld - 1)));

  // A ring all-reduce talks to 2 peers, yet the eager mesh keeps all of them.
  {
    std::vector<std::thread> threads;
    std::vector<double> sums(kWorld);
    for (int r = 0; r < kWorld; ++r) {
      threads.emplace_back([&, r] {
        CallOptions call;
        call.algorithm = Algorithm::Ring;
        const Tensor out = comms[static_cast<std::size_t>(r)].all_reduce(
            Tensor::full(Shape{5}, static_cast<double>(r + 1), DType::F64), ReduceOperation::Sum,
            call);
        sums[static_cast<std::size_t>(r)] = out.to_vector<double>()[0];
      });
    }
    for (auto& t : threads) t.join();
    for (double s : sums) CHECK(s == 36.0);
  }
  CHECK(open_sockets() == connected);

  // Rank r read the address of each lower rank, once.
  for (int r = 0; r < kWorld; ++r) {
    const auto reads = stores[static_cast<std::size_t>(r)]->reads();
    CHECK(count_containing(reads, "/addr/") == static_cast<std::size_t>(r));
  }
  comms.clear();
  CHECK(open_sockets() == before);
}

}  // namespace ruccl
