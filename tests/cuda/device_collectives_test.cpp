// GPU tests of the collectives on device memory (cuda/collective): in-process ranks on one GPU
// (device to device, fold kernels), CUDA tensors over TCP (pinned staging), and the NCCL engine.
// Every result is compared bit for bit with the CPU path on the same inputs. Each test fails with
// the reason on a machine without a GPU.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "collective/store/in_memory_store.h"
#include "collective/tcp_group.h"
#include "cuda/collective/device_engine.h"
#include "cuda/collective/nccl_group.h"
#include "cuda/cuda.h"
#include "tensor/tensor.h"

using namespace ruccl;

namespace {

void require_gpu() {
  if (!cuda::cuda_available()) FAIL("GPU tests need a CUDA device: " << cuda::device_status());
  cuda::install_collectives();
}

// Runs fn(rank, comm) on one thread per rank; rethrows the first failure.
template <typename Fn>
void on_ranks(std::vector<Communicator>& comms, Fn fn) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(static_cast<int>(r), comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Rank r's input: n pseudo-random F32 values with many distinct exponents (rounding shows).
std::vector<float> input_of(int r, std::size_t n) {
  std::vector<float> v(n);
  std::uint32_t s = 12345u + 7919u * static_cast<std::uint32_t>(r);
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * static_cast<float>(1 + (i % 97));
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<Communicator> group(int world, Device device, Algorithm algorithm) {
  CommunicatorOptions options;
  options.all_reduce_algorithm = algorithm;
  return InProcessGroup::create(world, std::vector<Device>(static_cast<std::size_t>(world), device),
                                options);
}

// Every rank's all_reduce result, as host vectors.
std::vector<std::vector<float>> all_reduce_results(Device device, Algorithm algorithm, int world,
                                                   std::size_t n, ReduceOperation op) {
  auto comms = group(world, device, algorithm);
  std::vector<std::vector<float>> out(static_cast<std::size_t>(world));
  on_ranks(comms, [&](int r, Communicator& c) {
    const Tensor t = Tensor::from_vector(input_of(r, n), device);
    const Tensor got = c.all_reduce(t, op);
    CHECK(got.device() == device);
    out[static_cast<std::size_t>(r)] = got.to(Device::cpu()).to_vector<float>();
    CHECK(same_bits(t.to(Device::cpu()).to_vector<float>(), input_of(r, n)));  // unchanged
  });
  return out;
}

}  // namespace

TEST_CASE("the all_reduce demo's values hold on four logical ranks of GPU 0",
          "[cuda][collective]") {
  require_gpu();
  auto comms = group(4, Device::cuda(0), Algorithm::Ring);
  on_ranks(comms, [&](int r, Communicator& c) {
    const Tensor v =
        Tensor::arange(0, 257, 1, DType::F32, Device::cuda(0)) * 0.25 + static_cast<double>(r);
    const Tensor t = 2.0 * v + 1.0;
    const std::vector<float> sum =
        c.all_reduce(t, ReduceOperation::Sum).to(Device::cpu()).to_vector<float>();
    const std::vector<float> mean =
        c.all_reduce(t, ReduceOperation::Mean).to(Device::cpu()).to_vector<float>();
    for (int i = 0; i < 257; ++i) {
      REQUIRE(sum[static_cast<std::size_t>(i)] == static_cast<float>(2 * i + 16));
      REQUIRE(mean[static_cast<std::size_t>(i)] == static_cast<float>(2 * i + 16) / 4);
    }
  });
}

TEST_CASE("device all_reduce is bit-identical to the CPU path for every algorithm and size",
          "[cuda][collective]") {
  require_gpu();
  for (Algorithm a : {Algorithm::Ring, Algorithm::Direct, Algorithm::Tree}) {
    for (int world : {1, 2, 3, 4}) {
      for (std::size_t n :
           {std::size_t{0}, std::size_t{2}, std::size_t{257}, std::size_t{300001}}) {
        for (ReduceOperation op :
             {ReduceOperation::Sum, ReduceOperation::Mean, ReduceOperation::Max}) {
          INFO("algorithm " << algorithm_name(a) << " world " << world << " n " << n << " op "
                            << reduce_operation_name(op));
          const auto gpu = all_reduce_results(Device::cuda(0), a, world, n, op);
          const auto cpu = all_reduce_results(Device::cpu(), a, world, n, op);
          for (int r = 0; r < world; ++r) {
            REQUIRE(same_bits(gpu[static_cast<std::size_t>(r)], cpu[static_cast<std::size_t>(r)]));
          }
        }
      }
    }
  }
}

TEST_CASE("device reduce, reduce_scatter, broadcast and the gathers match the CPU path",
          "[cuda][collective]") {
  require_gpu();
  constexpr int kWorld = 4;
  constexpr std::int64_t kRows = 8;
  constexpr std::int64_t kCols = 33;
  std::vector<std::vector<std::vector<float>>> results(2);  // [cpu, gpu][rank * 8 + op]
  for (int d = 0; d < 2; ++d) {
    const Device device = d == 0 ? Device::cpu() : Device::cuda(0);
    auto comms = group(kWorld, device, Algorithm::Auto);
    results[static_cast<std::size_t>(d)].resize(kWorld * 8);
    on_ranks(comms, [&](int r, Communicator& c) {
      const Tensor t = Tensor::from_vector(input_of(r, kRows * kCols), {kRows, kCols}, device);
      auto keep = [&](int k, const Tensor& x) {
        results[static_cast<std::size_t>(d)][static_cast<std::size_t>(r * 8 + k)] =
            x.to(Device::cpu()).contiguous().to_vector<float>();
      };
      const auto reduced = c.reduce(t, 2, ReduceOperation::Sum);
      if (r == 2) keep(0, *reduced);
      CHECK(reduced.has_value() == (r == 2));
      keep(1, c.reduce_scatter(t, ReduceOperation::Mean));
      keep(2, c.broadcast(r == 1 ? t : Tensor(), 1));
      keep(3, c.all_gather(t));
      const auto gathered = c.gather(t, 3);
      if (r == 3) keep(4, *gathered);
      keep(5, c.scatter(r == 0 ? t : Tensor(), 0));
      keep(6, c.all_to_all(t));
      keep(7, c.all_reduce(t.transpose(0, 1), ReduceOperation::Sum));  // a strided input
    });
  }
  for (std::size_t k = 0; k < results[0].size(); ++k) {
    INFO("rank " << k / 8 << " result " << k % 8);
    CHECK(same_bits(results[1][k], results[0][k]));
  }
}

TEST_CASE("CUDA tensors over TCP are staged through pinned memory with the CPU's results",
          "[cuda][collective]") {
  require_gpu();
  constexpr int kWorld = 2;
  constexpr std::size_t kCount = 3 << 20;  // 12 MiB: several staging segments
  auto store = std::make_shared<InMemoryStore>();
  const SessionId session = random_session_id();
  std::vector<Communicator> comms(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      TcpTransportOptions transport;
      transport.listen_host = "127.0.0.1";
      comms[static_cast<std::size_t>(r)] =
          TcpGroup::connect(store, r, kWorld, session, Device::cuda(0), {}, transport);
    });
  }
  for (auto& t : threads) t.join();
  const auto cpu =
      all_reduce_results(Device::cpu(), Algorithm::Ring, kWorld, kCount, ReduceOperation::Sum);
  on_ranks(comms, [&](int r, Communicator& c) {
    const Tensor t = Tensor::from_vector(input_of(r, kCount), Device::cuda(0));
    const Tensor got =
        c.all_reduce(t, ReduceOperation::Sum, CallOptions().with_algorithm(Algorithm::Ring));
    CHECK(got.device() == Device::cuda(0));
    CHECK(same_bits(got.to(Device::cpu()).to_vector<float>(), cpu[static_cast<std::size_t>(r)]));
    const Tensor b = c.broadcast(r == 0 ? t : Tensor(), 0);
    CHECK(same_bits(b.to(Device::cpu()).to_vector<float>(), input_of(0, kCount)));
  });
}

TEST_CASE("the NCCL engine runs a one-GPU group and fails with Aborted after abort",
          "[cuda][nccl]") {
  require_gpu();
  std::vector<Communicator> comms = cuda::NcclGroup::create({Device::cuda(0)});
  REQUIRE(comms.size() == 1);
  Communicator& c = comms[0];
  CHECK(c.engine_name() == "nccl");
  const Tensor t = Tensor::from_vector(input_of(0, 1000), Device::cuda(0));
  CHECK(same_bits(c.all_reduce(t, ReduceOperation::Sum).to(Device::cpu()).to_vector<float>(),
                  input_of(0, 1000)));
  CHECK(same_bits(c.all_gather(t).to(Device::cpu()).to_vector<float>(), input_of(0, 1000)));
  const Tensor i = Tensor::from_vector<std::int64_t>({5, 6, 7}, Device::cuda(0));
  // Bitwise: NCCL has none, the fallback runs it.
  CHECK(c.all_reduce(i, ReduceOperation::BitXor).to(Device::cpu()).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{5, 6, 7});
  c.abort("test abort");
  try {
    (void)c.all_reduce(t, ReduceOperation::Sum);
    FAIL("a call after abort succeeded");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::Aborted);
  }
}

TEST_CASE("an NCCL group splits through ncclCommSplit (one GPU)", "[cuda][nccl]") {
  require_gpu();
  std::vector<Communicator> comms = cuda::NcclGroup::create({Device::cuda(0)});
  std::optional<Communicator> group = comms[0].split(0, 0, "one");
  REQUIRE(group.has_value());
  CHECK(group->engine_name() == "nccl");
  CHECK(group->world_size() == 1);
  const Tensor t = Tensor::from_vector(input_of(0, 1000), Device::cuda(0));
  CHECK(same_bits(group->all_reduce(t, ReduceOperation::Sum).to(Device::cpu()).to_vector<float>(),
                  input_of(0, 1000)));
  CHECK_FALSE(comms[0].split(-1, 0).has_value());  // NCCL_SPLIT_NOCOLOR
  CHECK(same_bits(comms[0].all_gather(t).to(Device::cpu()).to_vector<float>(), input_of(0, 1000)));
}

TEST_CASE("two NCCL ranks on one GPU fail on both ranks promptly instead of hanging",
          "[cuda][nccl]") {
  require_gpu();
  // NCCL refuses a communicator with two ranks on one device (ncclInvalidUsage): both ranks must
  // raise a CollectiveError (the refusal, or PeerLost once the other rank's control channel went
  // away), within the connect deadline, neither waits forever.
  auto store = std::make_shared<InMemoryStore>();
  const SessionId session = random_session_id();
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      TcpTransportOptions transport;
      transport.listen_host = "127.0.0.1";
      transport.connect_timeout = std::chrono::seconds(30);
      try {
        (void)cuda::NcclGroup::connect(store, r, 2, session, Device::cuda(0), {}, transport);
        errors[static_cast<std::size_t>(r)] = "no error";
      } catch (const CollectiveError& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = std::string("not a CollectiveError: ") + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("rank 0: " << errors[0] << "\nrank 1: " << errors[1] << "\n" << seconds << " s");
  CHECK(seconds < 45);
  for (const std::string& e : errors) {
    CHECK(e != "no error");
    CHECK(e.rfind("not a CollectiveError", 0) != 0);
  }
  CHECK((errors[0].find("ncclInvalidUsage") != std::string::npos ||
         errors[1].find("ncclInvalidUsage") != std::string::npos));
}
