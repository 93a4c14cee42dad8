// Parity of the fused optimizer updates (CUDA against the CPU backend over several steps, every
// option), and the execution model: streams, events, synchronize and copy_bytes.
#include "tests/cuda/parity_support.h"

using namespace ruccl;
using namespace ruccl::parity;

namespace {

struct State {
  Tensor p, g, a, b;  // param, grad, and one or two state tensors
};

State make_state(DType dt, Device device, std::uint64_t seed) {
  const Shape shape{1000, 37};
  State s{randn(shape, dt, seed), randn(shape, dt, seed + 1), randn(shape, dt, seed + 2).mul(0.1),
          abs(randn(shape, dt, seed + 3)).mul(0.01)};
  s.p = s.p.to(device);
  s.g = s.g.to(device);
  s.a = s.a.to(device);
  s.b = s.b.to(device);
  return s;
}

void require_same_state(const State& cpu, const State& gpu, const std::string& what, double tol) {
  require_match(cpu.p, gpu.p, what + " param", tol);
  require_match(cpu.a, gpu.a, what + " state 1", tol);
  require_match(cpu.b, gpu.b, what + " state 2", tol);
}

}  // namespace

TEST_CASE("fused SGD steps match the CPU backend for every option", "[cuda][parity][optim]") {
  require_gpu();
  Backend& cpu = backend_for(Device::cpu());
  Backend& gpu = backend_for(kGpu);
  for (DType dt : {DType::F32, DType::F64}) {
    REQUIRE(gpu.supports(Op::SgdUpdate, dt));
    for (const SgdStep& base :
         {SgdStep{0.1, 0.0, 0.0, 0.0, false, false}, SgdStep{0.05, 0.9, 0.0, 1e-2, false, true},
          SgdStep{0.05, 0.9, 0.1, 0.0, true, true}}) {
      State c = make_state(dt, Device::cpu(), 5);
      State g = make_state(dt, kGpu, 5);
      SgdStep step = base;
      for (int k = 0; k < 5; ++k) {
        cpu.sgd_update(c.p, c.g, c.a, step);
        gpu.sgd_update(g.p, g.g, g.a, step);
        step.first_step = false;
      }
      require_same_state(c, g,
                         str("sgd ", dt, " momentum ", base.momentum, " nesterov ", base.nesterov),
                         dt == DType::F64 ? 1e-13 : 1e-6);
    }
  }
  CHECK_FALSE(gpu.supports(Op::SgdUpdate, DType::F16));
}

TEST_CASE("fused Adam and AdamW steps match the CPU backend", "[cuda][parity][optim]") {
  require_gpu();
  Backend& cpu = backend_for(Device::cpu());
  Backend& gpu = backend_for(kGpu);
  for (DType dt : {DType::F32, DType::F64}) {
    for (const bool decoupled : {false, true}) {
      for (const double wd : {0.0, 0.01}) {
        State c = make_state(dt, Device::cpu(), 9);
        State g = make_state(dt, kGpu, 9);
        AdamStep step{1e-3, 0.9, 0.999, 1e-8, wd, decoupled, 1};
        for (; step.step <= 5; ++step.step) {
          cpu.adam_update(c.p, c.g, c.a, c.b, step);
          gpu.adam_update(g.p, g.g, g.a, g.b, step);
        }
        require_same_state(c, g, str(decoupled ? "adamw " : "adam ", dt, " wd ", wd),
                           dt == DType::F64 ? 1e-12 : 1e-5);
      }
    }
  }
}

TEST_CASE("work on a created stream is ordered by events and seen after synchronize",
          "[cuda][streams]") {
  require_gpu();
  Backend& gpu = backend_for(kGpu);
  const Stream original = gpu.current_stream(kGpu);
  const Stream side = gpu.create_stream(kGpu);
  REQUIRE(side.device == kGpu);
  REQUIRE_FALSE(side == original);
  const Tensor x = randn({1 << 22}, DType::F32, 3).to(kGpu);
  Tensor y;
  {
    // y = 2x + 1 on the side stream, after x's upload on the original stream.
    gpu.record_event(original)->block(side);
    gpu.set_current_stream(side);
    y = add(mul(x, 2.0), 1.0);
    auto done = gpu.record_event(side);
    gpu.set_current_stream(original);
    done->block(original);
    done->synchronize();
    CHECK(done->ready());
  }
  gpu.synchronize(kGpu);
  require_match(add(mul(x.to(Device::cpu()), 2.0), 1.0), y, "side-stream result", 0.0);
  REQUIRE(gpu.current_stream(kGpu) == original);
}

TEST_CASE("copy_bytes copies within a device and to a peer", "[cuda][streams]") {
  require_gpu();
  Backend& gpu = backend_for(kGpu);
  const Tensor x = Tensor::arange(0, 1000, 1, DType::I64).to(kGpu);
  Tensor y = Tensor::zeros({1000}, DType::I64, kGpu);
  gpu.copy_bytes(*x.storage(), 8 * 10, *y.storage(), 8 * 20, 8 * 100);
  const auto v = y.to(Device::cpu()).to_vector<std::int64_t>();
  CHECK(v[19] == 0);
  CHECK(v[20] == 10);
  CHECK(v[119] == 109);
  CHECK(v[120] == 0);
  if (cuda::device_count() < 2) {
    WARN("one GPU: the peer copy of copy_bytes is not exercised");
    return;
  }
  const Tensor on_peer = x.to(Device::cuda(1));
  REQUIRE(on_peer.device() == Device::cuda(1));
  CHECK(on_peer.to(Device::cpu()).to_vector<std::int64_t>() ==
        x.to(Device::cpu()).to_vector<std::int64_t>());
}
