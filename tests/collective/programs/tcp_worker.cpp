// A rank of a multi-process test job (tests/collective/transport/tcp/tcp_process_test.cpp starts
// several with the RUCCL_* variables ruccl-run sets). It joins through Communicator::from_env and
// runs one scenario; on a CollectiveError it prints "error <Kind> <monotonic ns> <message>" and
// exits 3.
//
//   tcp_worker sum COUNT          all_reduce Sum of rank+1 over COUNT floats, checked; "ok"
//   tcp_worker loop BYTES         all_reduce BYTES of floats until an error; "started" after the
//   first tcp_worker mismatch           rank r all_reduces r+1 elements: every rank must see
//   ShapeMismatch
//   tcp_worker mesh               4 ranks as a 2x2 Mesh: an all_reduce along "tp" and an
//                                 all_gather along "dp", checked; "ok rank R"
//   tcp_worker mesh-loop BYTES    4 ranks as a 2x2 Mesh: all_reduce BYTES along "tp" until an
//                                 error; "started" after the first
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "collective/collective.h"

namespace {

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

int run(int argc, char** argv) {
  using namespace ruccl;
  const std::string mode = argc > 1 ? argv[1] : "";
  const long long arg = argc > 2 ? std::atoll(argv[2]) : 0;
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(60);
  Communicator comm = Communicator::from_env(Device::cpu(), options);
  const int w = comm.world_size();
  if (mode == "sum") {
    const Tensor in = Tensor::full(Shape{arg}, comm.rank() + 1.0, DType::F32);
    const std::vector<float> out = comm.all_reduce(in, ReduceOperation::Sum).to_vector<float>();
    for (const float v : out) {
      if (v != static_cast<float>(w * (w + 1) / 2)) {
        std::printf("wrong value %g\n", static_cast<double>(v));
        return 1;
      }
    }
    std::printf("ok rank %d of %d\n", comm.rank(), w);
    return 0;
  }
  if (mode == "loop") {
    const Tensor in = Tensor::ones(Shape{arg / 4}, DType::F32);
    for (long long i = 0;; ++i) {
      comm.all_reduce(in, ReduceOperation::Sum, CallOptions().with_algorithm(Algorithm::Ring));
      if (i == 0) {
        std::printf("started\n");
        std::fflush(stdout);
      }
    }
  }
  if (mode == "mismatch") {
    comm.all_reduce(Tensor::ones(Shape{comm.rank() + 1}, DType::F32));
    return 0;
  }
  if (mode == "mesh" || mode == "mesh-loop") {
    Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});
    const int r = comm.rank();
    if (mode == "mesh-loop") {
      const Tensor in = Tensor::ones(Shape{arg / 4}, DType::F32);
      for (long long i = 0;; ++i) {
        mesh.comm("tp").all_reduce(in);
        if (i == 0) {
          std::printf("started\n");
          std::fflush(stdout);
        }
      }
    }
    const float row = r < 2 ? 1 + 2 : 3 + 4;  // tp groups {0, 1} and {2, 3} of values r + 1
    const std::vector<float> sum =
        mesh.comm("tp").all_reduce(Tensor::full(Shape{5}, r + 1.0, DType::F32)).to_vector<float>();
    const std::vector<float> column =
        mesh.comm("dp").all_gather(Tensor::full(Shape{1}, r, DType::F32)).to_vector<float>();
    if (sum != std::vector<float>(5, row) ||
        column != std::vector<float>{static_cast<float>(r % 2), static_cast<float>(r % 2 + 2)}) {
      std::printf("wrong values on rank %d\n", r);
      return 1;
    }
    std::printf("ok rank %d\n", r);
    return 0;
  }
  std::fprintf(stderr, "tcp_worker: unknown mode '%s'\n", mode.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
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
}
