// mpi_engine_bench: nccl-tests-style all_reduce (F32 Sum, 4 KiB .. 64 MiB) over ruCCL's MPI
// engine beside raw MPI_Allreduce, in the same run of the same processes, plus our algorithms over
// MPI point-to-point (the engine's fallback). An MPI program: start it with mpirun, e.g.
//
//   mpirun -np 2 --mca btl self,vader mpi_engine_bench          # shared memory
//   mpirun -np 4 --mca btl self,tcp --mca btl_tcp_if_include lo mpi_engine_bench   # TCP
//   mpi_engine_bench [--sizes 4096,...] [--rounds R] [--quick] [--agreement] [--only LIST]
//
// Method (every implementation's): per iteration every rank passes MPI_Barrier, then times one
// all_reduce; an iteration's time is the max over ranks; an implementation's figure in a round is
// the median over iterations (400/200/50/15/8 iterations up to 16 KiB/256 KiB/4 MiB/16 MiB/more);
// the table shows the median over rounds, which alternate the order of the implementations (the
// machine is shared). Raw MPI is out of place into a buffer allocated once; ours returns a new
// tensor (its allocation is in the time). The engine runs an all_reduce of at most
// MpiTransportOptions::fused_all_reduce_bytes as one exchange (record and data together), larger
// ones (up to 4 ranks) as the agreement exchange then our pairwise reduce-scatter + all-gather
// over MPI messages; eng_unfused is the same engine with both off (every size on MPI_Iallreduce
// after the agreement: the engine of session 8).
// raw_iallred: raw MPI_Iallreduce polled with MPI_Test (what the engine calls, without ruCCL).
// overhead = ours - raw; busbw = bytes / time * 2(n-1)/n, GB = 1e9 B. --only raw,engine,...
// runs just those implementations (raw, engine, algorithms, iallreduce, unfused: for profiling).
// --crossover: each of the engine's three all_reduce paths forced at every size (fused,
// MPI_Iallreduce, pairwise) beside raw MPI_Allreduce, to place MpiTransportOptions' limits.
//
// --agreement: what one call's agreement costs, against the two ways to build it on MPI: our
// barrier (only the agreement: every rank's encoded CallRecord to every peer, MPI_Isend/Irecv,
// polled against the deadline and the failure notices) beside raw MPI_Ibarrier, a raw
// MPI_Iallgather of a record-sized buffer and a raw Isend/Irecv exchange of it (all polled with
// MPI_Test).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/mpi_group.h"
#include "tensor/tensor.h"

namespace {

using namespace ruccl;

/// The implementations, by index (--only takes a comma-separated list of these).
const char* const kNames[] = {"raw", "engine", "algorithms", "iallreduce", "unfused"};

int iters_for(std::size_t bytes, int div) {
  const int n = bytes <= (16u << 10)    ? 400
                : bytes <= (256u << 10) ? 200
                : bytes <= (4u << 20)   ? 50
                : bytes <= (16u << 20)  ? 15
                                        : 8;
  return std::max(3, n / std::max(div, 1));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Times `op` `iters` times after a warm-up, each behind MPI_Barrier; returns (on every rank)
/// the median over iterations of the max over ranks, in microseconds.
double time_op(const std::function<void()>& op, int iters) {
  const int warmup = std::max(2, iters / 8);
  std::vector<double> t;
  for (int it = -warmup; it < iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    op();
    if (it >= 0) t.push_back((MPI_Wtime() - t0) * 1e6);
  }
  std::vector<double> tmax(t.size());
  MPI_Allreduce(t.data(), tmax.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return median(tmax);
}

void wait_polled(MPI_Request* requests, int n) {
  int done = 0;
  while (!done) MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
}

void fail(const std::string& why) {
  std::fprintf(stderr, "mpi_engine_bench: %s\n", why.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void agreement_table(int rounds, int div) {
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(120);
  Communicator comm = MpiGroup::world(Device::cpu(), options);
  const int n = comm.world_size();
  const int r = comm.rank();
  constexpr int kRecordBytes = 128;       // an all_reduce's encoded CallRecord is about this long
  constexpr int kFusedBytes = 4096 + 80;  // 4 KiB behind an all_reduce's record (76 B, padded)
  std::vector<char> mine(kFusedBytes, static_cast<char>(r)), all(kFusedBytes * n);
  const Tensor in = Tensor::full({1024}, 1.0, DType::F32);
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  const int iters = iters_for(4096, div);
  std::vector<std::vector<double>> t(6);
  for (int round = 0; round < rounds; ++round) {
    t[0].push_back(time_op([&] { comm.barrier(); }, iters));
    t[1].push_back(time_op(
        [&] {
          MPI_Request q;
          MPI_Ibarrier(raw, &q);
          wait_polled(&q, 1);
        },
        iters));
    t[2].push_back(time_op(
        [&] {
          MPI_Request q;
          MPI_Iallgather(mine.data(), kRecordBytes, MPI_BYTE, all.data(), kRecordBytes, MPI_BYTE,
                         raw, &q);
          wait_polled(&q, 1);
        },
        iters));
    // The same exchange of `bytes` per peer: the record alone, and a fused 4 KiB all_reduce's
    // message (the record with 4 KiB behind it: the floor of the engine's 4 KiB all_reduce).
    for (const int bytes : {kRecordBytes, kFusedBytes}) {
      t[bytes == kRecordBytes ? 3 : 4].push_back(time_op(
          [&] {
            std::vector<MPI_Request> q;
            for (int p = 0; p < n; ++p) {
              if (p == r) continue;
              q.emplace_back();
              MPI_Irecv(all.data() + p * kFusedBytes, bytes, MPI_BYTE, p, 0, raw, &q.back());
            }
            for (int p = 0; p < n; ++p) {
              if (p == r) continue;
              q.emplace_back();
              MPI_Isend(mine.data(), bytes, MPI_BYTE, p, 0, raw, &q.back());
            }
            wait_polled(q.data(), static_cast<int>(q.size()));
          },
          iters));
    }
    t[5].push_back(time_op([&] { comm.all_reduce(in, ReduceOperation::Sum); }, iters));
  }
  if (r == 0) {
    std::printf("# agreement of one call, %d processes (median us, max over ranks)\n", n);
    std::printf("%-48s %10s\n", "what", "us");
    const char* names[] = {
        "ours: barrier (the agreement alone)",           "raw MPI_Ibarrier + MPI_Test",
        "raw MPI_Iallgather of 128 B + MPI_Test",        "raw Isend/Irecv of 128 B to every peer",
        "raw Isend/Irecv of 4 KiB + 80 B to every peer", "ours: a fused 4 KiB all_reduce"};
    for (int i = 0; i < 6; ++i) std::printf("%-48s %10.2f\n", names[i], median(t[i]));
  }
  MPI_Comm_free(&raw);
}

/// --crossover: the engine's three all_reduce paths, each forced at every size, beside raw
/// MPI_Allreduce: where each one wins decides MpiTransportOptions' two limits.
void crossover_table(const std::vector<std::size_t>& sizes, int rounds, int div) {
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(120);
  MpiTransportOptions fused, iallreduce, pairwise;
  fused.fused_all_reduce_bytes = std::size_t{64} << 20;
  iallreduce.fused_all_reduce_bytes = 0;
  iallreduce.pairwise_all_reduce_bytes = SIZE_MAX;
  pairwise.fused_all_reduce_bytes = 0;
  std::vector<Communicator> comms;
  comms.push_back(MpiGroup::world(Device::cpu(), options, fused));
  comms.push_back(MpiGroup::world(Device::cpu(), options, iallreduce));
  comms.push_back(MpiGroup::world(Device::cpu(), options, pairwise));
  const int r = comms[0].rank();
  if (r == 0) {
    std::printf("# all_reduce F32 Sum, %d processes: the engine's paths forced (median us)\n",
                comms[0].world_size());
    std::printf("%10s %10s %10s %12s %10s %10s\n", "bytes", "raw_us", "fused_us", "iallreduce_us",
                "pairwise_us", "fastest");
  }
  for (const std::size_t bytes : sizes) {
    const auto count = static_cast<std::int64_t>(bytes / 4);
    const Tensor in = Tensor::full({count}, r + 1.0, DType::F32);
    Tensor raw_out = Tensor::empty({count}, DType::F32);
    const int iters = iters_for(bytes, div);
    std::vector<std::vector<double>> t(4);
    auto run = [&](int which) {
      if (which == 3) {
        t[3].push_back(time_op(
            [&] {
              MPI_Allreduce(in.data_ptr(), raw_out.data_ptr(), static_cast<int>(count), MPI_FLOAT,
                            MPI_SUM, MPI_COMM_WORLD);
            },
            iters));
        return;
      }
      Communicator& c = comms[static_cast<std::size_t>(which)];
      t[static_cast<std::size_t>(which)].push_back(
          time_op([&] { c.all_reduce(in, ReduceOperation::Sum); }, iters));
    };
    for (int round = 0; round < rounds; ++round) {
      for (int k = 0; k < 4; ++k) run(round % 2 == 0 ? k : 3 - k);
    }
    if (r == 0) {
      const double f = median(t[0]), i = median(t[1]), p = median(t[2]);
      const char* best = f <= i && f <= p ? "fused" : i <= p ? "iallreduce" : "pairwise";
      std::printf("%10zu %10.1f %10.1f %12.1f %10.1f %10s\n", bytes, median(t[3]), f, i, p, best);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {4u << 10, 16u << 10, 64u << 10, 256u << 10,
                                    1u << 20, 4u << 20,  16u << 20, 64u << 20};
  int rounds = 5;
  int div = 1;
  bool agreement = false;
  bool crossover = false;
  std::string only;  // --only: run just these implementations (for profiling)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::istringstream f(argv[++i]);
      std::string item;
      while (std::getline(f, item, ',')) sizes.push_back(std::stoull(item));
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--quick") {
      div = 8;
      rounds = 2;
    } else if (a == "--agreement") {
      agreement = true;
    } else if (a == "--crossover") {
      crossover = true;
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "usage: mpirun -np N %s [--sizes 4096,...] [--rounds R] [--quick] "
          "[--agreement] [--crossover] [--only raw,engine,algorithms,iallreduce,unfused]\n",
          argv[0]);
      return 2;
    }
  }
  try {
    if (agreement) {
      agreement_table(rounds, div);
      return 0;
    }
    if (crossover) {
      crossover_table(sizes, rounds, div);
      return 0;
    }
    CommunicatorOptions options;
    options.timeout = std::chrono::seconds(120);
    Communicator engine = MpiGroup::world(Device::cpu(), options);
    Communicator algorithms =
        MpiGroup::world(Device::cpu(), options, {}, MpiCollectives::Algorithms);
    MpiTransportOptions unfused_options;
    unfused_options.fused_all_reduce_bytes = 0;  // every all_reduce on MPI_Iallreduce
    unfused_options.pairwise_all_reduce_bytes = SIZE_MAX;
    Communicator unfused = MpiGroup::world(Device::cpu(), options, unfused_options);
    const int n = engine.world_size();
    const int r = engine.rank();
    const double bus = 2.0 * (n - 1) / n;
    if (r == 0) {
      std::printf(
          "# all_reduce F32 Sum, %d processes: raw MPI_Allreduce vs ruCCL's MPI engine "
          "vs our algorithms over MPI point-to-point (median us, max over ranks)\n",
          n);
      std::printf("%10s %10s %10s %10s %8s %12s %12s %12s %10s %10s\n", "bytes", "raw_us",
                  "engine_us", "overhead", "ratio", "raw_iallred", "eng_unfused", "algos_p2p_us",
                  "raw_busbw", "eng_busbw");
    }
    for (const std::size_t bytes : sizes) {
      const auto count = static_cast<std::int64_t>(bytes / 4);
      const Tensor in = Tensor::full({count}, r + 1.0, DType::F32);
      Tensor raw_out = Tensor::empty({count}, DType::F32);
      Tensor out;
      const int iters = iters_for(bytes, div);
      std::vector<std::vector<double>> t(5);
      auto run = [&](int which) {
        if (which == 4) {
          t[4].push_back(
              time_op([&] { out = unfused.all_reduce(in, ReduceOperation::Sum); }, iters));
        } else if (which == 3) {
          t[3].push_back(time_op(
              [&] {
                MPI_Request q;
                MPI_Iallreduce(in.data_ptr(), raw_out.data_ptr(), static_cast<int>(count),
                               MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
                wait_polled(&q, 1);
              },
              iters));
        } else if (which == 0) {
          t[0].push_back(time_op(
              [&] {
                MPI_Allreduce(in.data_ptr(), raw_out.data_ptr(), static_cast<int>(count), MPI_FLOAT,
                              MPI_SUM, MPI_COMM_WORLD);
              },
              iters));
        } else if (which == 1) {
          t[1].push_back(
              time_op([&] { out = engine.all_reduce(in, ReduceOperation::Sum); }, iters));
        } else {
          t[2].push_back(
              time_op([&] { out = algorithms.all_reduce(in, ReduceOperation::Sum); }, iters));
        }
      };
      for (int round = 0; round < rounds; ++round) {
        for (int k = 0; k < 5; ++k) {
          const int which = round % 2 == 0 ? k : 4 - k;
          if (only.empty() || only.find(kNames[which]) != std::string::npos) run(which);
        }
      }
      const float want = n * (n + 1) / 2.0f;
      const bool raw_ran = !t[0].empty() || !t[3].empty();
      if ((out.defined() &&
           (out.data<float>()[0] != want || out.data<float>()[count - 1] != want)) ||
          (raw_ran && raw_out.data<float>()[count - 1] != want)) {
        fail(str("all_reduce of ", bytes, " bytes: rank ", r, " got a wrong sum, expected ", want));
      }
      if (r == 0) {
        const double raw = median(t[0]), ours = median(t[1]), algos = median(t[2]);
        std::printf("%10zu %10.1f %10.1f %10.1f %8.3f %12.1f %12.1f %12.1f %10.3f %10.3f\n", bytes,
                    raw, ours, ours - raw, ours / raw, median(t[3]), median(t[4]), algos,
                    bytes / raw / 1e3 * bus, bytes / ours / 1e3 * bus);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
