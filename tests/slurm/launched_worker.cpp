// A rank of a job started by a real launcher (srun, mpirun): tests/slurm/*.sh run it. It reads the
// launcher's variables (read_launch_env), joins through Communicator::from_env and runs one
// scenario, checking every value exactly. Output, one line per event, for the scripts to check:
//   "job <describe(read_launch_env())>"           first, from every rank
//   "ok rank R of W: C collectives exact (engine E)"  collectives: everything matched
//                                                 (E: Communicator::engine_name)
//   "dying rank R <monotonic ns>"                 fail-rank: the rank that kills itself, just
//   before "error <Kind> <monotonic ns> <message>"       on a CollectiveError (exit 3) "wrong
//   <what>: expected X, got Y"             a value differs (exit 1)
//
//   launched_worker collectives COUNT   all_reduce (Sum over COUNT floats, Max over doubles),
//                                       broadcast, all_gather, reduce_scatter, all_to_all, gather,
//                                       scatter, send/recv around a ring, barrier
//   launched_worker fail-rank K         all_reduces until an error; rank K SIGKILLs itself 20 ms
//                                       after its first (the others must fail, naming it)
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "collective/launch/launch_env.h"
#include "tensor/core/error.h"

namespace {

using namespace ruccl;

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

struct Wrong {
  std::string what;
};

/// Compares every element of `got` with `expected(i)`; throws Wrong naming the first difference.
template <typename T, typename Fn>
void expect(const char* what, const Tensor& got, std::size_t count, Fn expected) {
  const std::vector<T> values = got.to_vector<T>();
  if (values.size() != count) {
    throw Wrong{str(what, ": expected ", count, " elements, got ", values.size())};
  }
  for (std::size_t i = 0; i < count; ++i) {
    const T want = expected(static_cast<std::int64_t>(i));
    if (values[i] != want) {
      throw Wrong{str(what, "[", i, "]: expected ", static_cast<double>(want), ", got ",
                      static_cast<double>(values[i]))};
    }
  }
}

/// A 1-D tensor of `count` elements of T (F32 for float, F64 for double): value(i) at i.
template <typename T, typename Fn>
Tensor make(std::int64_t count, Fn value) {
  std::vector<T> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = value(i);
  return Tensor::from_vector(v, Shape{count});
}

int collectives(Communicator& comm, std::int64_t count) {
  const int r = comm.rank();
  const int w = comm.world_size();
  const auto W = static_cast<std::int64_t>(w);
  const float tri = static_cast<float>(w * (w + 1) / 2);
  int checked = 0;

  // Sum of (rank + 1) * (i % 7 + 1): every partial sum is a small integer, exact in F32.
  const Tensor big =
      make<float>(count, [&](std::int64_t i) { return static_cast<float>((r + 1) * (i % 7 + 1)); });
  expect<float>("all_reduce Sum", comm.all_reduce(big, ReduceOperation::Sum),
                static_cast<std::size_t>(count),
                [&](std::int64_t i) { return tri * static_cast<float>(i % 7 + 1); });
  ++checked;
  const Tensor small = make<double>(5, [&](std::int64_t i) { return r * 10.0 + i; });
  expect<double>("all_reduce Max", comm.all_reduce(small, ReduceOperation::Max), 5,
                 [&](std::int64_t i) { return (w - 1) * 10.0 + static_cast<double>(i); });
  ++checked;
  // broadcast from the last rank: the others pass no tensor.
  const Tensor root_values = make<float>(9, [](std::int64_t i) { return i * 3 + 0.5F; });
  expect<float>("broadcast", comm.broadcast(r == w - 1 ? root_values : Tensor(), w - 1), 9,
                [](std::int64_t i) { return static_cast<float>(i * 3) + 0.5F; });
  ++checked;
  const Tensor mine = make<float>(4, [&](std::int64_t i) { return r * 100.0F + i; });
  expect<float>("all_gather", comm.all_gather(mine), static_cast<std::size_t>(4 * W),
                [](std::int64_t i) { return static_cast<float>(i / 4 * 100 + i % 4); });
  ++checked;
  const Tensor rows =
      make<float>(3 * W, [&](std::int64_t i) { return static_cast<float>((r + 1) * (i + 1)); });
  expect<float>("reduce_scatter", comm.reduce_scatter(rows, ReduceOperation::Sum), 3,
                [&](std::int64_t i) { return tri * static_cast<float>(r * 3 + i + 1); });
  ++checked;
  // all_to_all: block j (2 elements) goes to rank j; element i of block s here came from rank s.
  const Tensor blocks =
      make<float>(2 * W, [&](std::int64_t i) { return static_cast<float>(r * 100 + i); });
  expect<float>("all_to_all", comm.all_to_all(blocks), static_cast<std::size_t>(2 * W),
                [&](std::int64_t i) { return static_cast<float>(i / 2 * 100 + r * 2 + i % 2); });
  ++checked;
  const std::optional<Tensor> gathered = comm.gather(mine, 0);
  if (r == 0) {
    if (!gathered) throw Wrong{"gather: expected a tensor on root 0, got none"};
    expect<float>("gather", *gathered, static_cast<std::size_t>(4 * W),
                  [](std::int64_t i) { return static_cast<float>(i / 4 * 100 + i % 4); });
  } else if (gathered) {
    throw Wrong{str("gather: expected no tensor on rank ", r, ", got one")};
  }
  ++checked;
  const Tensor scatter_in = make<float>(2 * W, [](std::int64_t i) { return i * 1.5F; });
  expect<float>("scatter", comm.scatter(scatter_in, 0), 2,
                [&](std::int64_t i) { return static_cast<float>(r * 2 + i) * 1.5F; });
  ++checked;
  // A ring of point-to-point messages, ordered so that it cannot deadlock: even ranks send first.
  const Tensor token = make<double>(3, [&](std::int64_t i) { return r * 1000.0 + i; });
  const int next = (r + 1) % w;
  const int prev = (r + w - 1) % w;
  Tensor got;
  if (r % 2 == 0) {
    comm.send(token, next);
    got = comm.recv(prev);
  } else {
    got = comm.recv(prev);
    comm.send(token, next);
  }
  expect<double>("recv", got, 3, [&](std::int64_t i) { return prev * 1000.0 + i; });
  ++checked;
  comm.barrier();
  ++checked;
  std::printf("ok rank %d of %d: %d collectives exact (engine %s)\n", r, w, checked,
              comm.engine_name().c_str());
  return 0;
}

int fail_rank(Communicator& comm, int victim) {
  // Every rank all_reduces 4 MiB until an error; the victim's timer kills it 20 ms after the
  // first call, so that the others are most likely inside a call (PeerLost) or enter one after
  // the loss (Aborted, carrying the loss).
  const Tensor ones = Tensor::ones(Shape{1 << 20}, DType::F32);
  std::optional<std::thread> killer;
  for (long long i = 0;; ++i) {
    const Tensor sum = comm.all_reduce(ones);
    if (i == 0) {
      expect<float>("all_reduce", sum, 1 << 20,
                    [&](std::int64_t) { return static_cast<float>(comm.world_size()); });
    }
    if (i == 0 && comm.rank() == victim) {
      killer.emplace([victim] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::printf("dying rank %d %lld\n", victim, monotonic_ns());
        std::fflush(stdout);
        ::raise(SIGKILL);  // a crash: no goodbye, the peers see the connection drop
      });
    }
  }
}

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const long long arg = argc > 2 ? std::atoll(argv[2]) : 0;
  std::printf("job %s\n", describe(read_launch_env()).c_str());
  std::fflush(stdout);
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(30);
  Communicator comm = Communicator::from_env(Device::cpu(), options);
  if (mode == "collectives") return collectives(comm, arg);
  if (mode == "fail-rank") return fail_rank(comm, static_cast<int>(arg));
  std::fprintf(stderr, "launched_worker: unknown mode '%s'\n", mode.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int rc = run(argc, argv);
    std::fflush(stdout);
    return rc;
  } catch (const Wrong& e) {
    std::printf("wrong %s\n", e.what.c_str());
  } catch (const ruccl::CollectiveError& e) {
    std::printf("error %s %lld %s\n",
                std::string(ruccl::collective_error_kind_name(e.kind())).c_str(), monotonic_ns(),
                e.what());
    std::fflush(stdout);
    return 3;
  } catch (const std::exception& e) {
    std::printf("exception %s\n", e.what());
    return 4;
  }
  std::fflush(stdout);
  return 1;
}
