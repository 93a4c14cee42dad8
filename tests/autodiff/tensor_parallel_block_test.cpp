// A transformer block (attention + MLP, pre-LayerNorm, residuals) split over a tensor-parallel
// group, with and without sequence parallelism: distributed_gradcheck in float64 (TP = 2 over
// threads, and the tp axis of a 2x2 mesh combined with data parallelism over dp), values and
// every gradient against the one-rank block from the same seed (<= 1e-12 relative), replicated
// gradients bit-identical on every rank; ParallelDropout's streams.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/nn/nn.h"
#include "collective/collective.h"
#include "collective/mesh.h"
#include "collective/run_ranks.h"
#include "tensor/tensor.h"
#include "tests/autodiff/rank_input.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;

namespace {

constexpr std::int64_t kEmbed = 4;
constexpr std::int64_t kHeads = 2;
constexpr std::int64_t kHidden = 8;
constexpr std::uint64_t kSeed = 31;

using test::rank_input;

// The one-rank block: x + attn(ln1(x)), then + fc2(gelu(fc1(ln2(.)))). Inputs [B, T, E].
struct Block {
  nn::LayerNorm ln1{kEmbed, {.dtype = DType::F64}};
  nn::LayerNorm ln2{kEmbed, {.dtype = DType::F64}};
  Generator gen{kSeed};
  nn::MultiheadAttention attn{kEmbed, kHeads, gen, {.batch_first = true, .dtype = DType::F64}};
  nn::Linear fc1{kEmbed, kHidden, gen, {.dtype = DType::F64}};
  nn::Linear fc2{kHidden, kEmbed, gen, {.dtype = DType::F64}};
  Var forward(const Var& x) {
    const Var n = ln1(x);
    const Var y = add(x, attn.forward(n, n, n, {}, true));
    return add(y, fc2(gelu(fc1(ln2(y)))));
  }
};

// The same block over `tp`; with sequence parallelism its input and output are this rank's block
// of the sequence (dim 1).
struct TpBlock {
  TpBlock(Communicator tp, bool sp)
      : ln1(kEmbed, tp, {.dtype = DType::F64}),
        ln2(kEmbed, tp, {.dtype = DType::F64}),
        gen(kSeed),
        attn(kEmbed, kHeads, tp, gen,
             {.batch_first = true, .sequence_parallel = sp, .dtype = DType::F64}),
        fc1(kEmbed, kHidden, tp, gen, {.sequence_parallel = sp, .dtype = DType::F64}),
        fc2(kHidden, kEmbed, tp, gen, {.sequence_parallel = sp, .dtype = DType::F64}),
        sp_(sp) {}
  nn::SequenceParallelLayerNorm ln1, ln2;  // without sp: the weights' copy_to_region is harmless
  Generator gen;
  nn::ParallelMultiheadAttention attn;
  nn::ColumnParallelLinear fc1;
  nn::RowParallelLinear fc2;
  bool sp_;
  Var forward(const Var& x) {
    // Replicated (no sp): ln on the replicated x is a replicated computation, so the plain
    // LayerNorm would do; SequenceParallelLayerNorm is needed under sp and checked both ways.
    const Var n1 = sp_ ? ln1(x) : layer_norm_replicated(ln1, x);
    const Var y = add(x, attn.forward(n1, Tensor(), true));
    const Var n2 = sp_ ? ln2(y) : layer_norm_replicated(ln2, y);
    return add(y, fc2(gelu(fc1(n2))));
  }
  static Var layer_norm_replicated(nn::SequenceParallelLayerNorm& ln, const Var& x) {
    return nn::layer_norm_forward(x, {kEmbed}, ln.weight().var(), ln.bias().var(), 1e-5, "ln");
  }
  // The sharded parameters, by path (what the gradcheck probes).
  static std::vector<std::string> sharded_paths() {
    return {"attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight",
            "fc1.weight",          "fc1.bias",          "fc2.weight"};
  }
  nn::Param param(const std::string& path) {
    if (path.rfind("attn.", 0) == 0) return attn.param(path.substr(5));
    if (path.rfind("fc1.", 0) == 0) return fc1.param(path.substr(4));
    return fc2.param(path.substr(4));
  }
  void set_param(const std::string& path, const nn::Param& p) {
    if (path.rfind("attn.", 0) == 0) return attn.set_param(path.substr(5), p);
    if (path.rfind("fc1.", 0) == 0) return fc1.set_param(path.substr(4), p);
    fc2.set_param(path.substr(4), p);
  }
};

// Rank r's gradcheck inputs: the input (replicated: entered with reduce_from_region; under sp
// this rank's block) and its shards of the sharded parameters, from the block's own init.
std::vector<Var> block_inputs(Communicator& tp, int rank, bool sp) {
  TpBlock block(tp, sp);
  std::vector<Var> in{Var(rank_input({1, sp ? 2 : 4, kEmbed}, rank, 40), true)};
  for (const std::string& path : TpBlock::sharded_paths()) {
    in.emplace_back(block.param(path).value().clone(), true);
  }
  return in;
}

// The gradcheck function: the block with its sharded parameters replaced by the inputs.
Var block_under_check(Communicator& tp, const std::vector<Var>& in, bool sp) {
  TpBlock block(tp, sp);
  const std::vector<std::string> paths = TpBlock::sharded_paths();
  for (std::size_t i = 0; i < paths.size(); ++i) {
    block.set_param(paths[i], nn::Param(static_cast<nn::ParamId>(i + 1), in[i + 1]));
  }
  if (sp) return block.forward(in[0]);  // per-rank in and out
  return dc::copy_to_region(block.forward(dc::reduce_from_region(in[0], tp)), tp);
}

}  // namespace

TEST_CASE("a tensor-parallel transformer block passes distributed_gradcheck at TP = 2",
          "[autodiff][tp]") {
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    std::vector<std::vector<Var>> inputs(2);
    run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
      inputs[static_cast<std::size_t>(comm.rank())] = block_inputs(comm, comm.rank(), sp);
    });
    const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
        [sp](Communicator& comm, const std::vector<Var>& in) {
          return block_under_check(comm, in, sp);
        },
        inputs);
    INFO(report.message);
    REQUIRE(report.ok);
  }
}

TEST_CASE("the block on the tp axis of a 2x2 mesh, averaged over dp, passes distributed_gradcheck",
          "[autodiff][tp]") {
  std::vector<std::vector<Var>> inputs(4);
  run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
    Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});
    inputs[static_cast<std::size_t>(comm.rank())] =
        block_inputs(mesh.comm("tp"), comm.rank(), false);
  });
  const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
      [](Communicator& comm, const std::vector<Var>& in) {
        Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});
        const Var y = block_under_check(mesh.comm("tp"), in, false);
        return dc::all_reduce_mean(y, mesh.comm("dp"));  // data parallel along dp
      },
      inputs);
  INFO(report.message);
  REQUIRE(report.ok);
}

namespace {

struct BlockRun {
  Tensor out;
  Tensor input_grad;
  std::vector<std::pair<std::string, Tensor>> grads;  // gathered to the one-rank shapes
};

// Gathers a shard's gradient back to the one-rank layout of `path`.
Tensor gathered(Communicator& tp, const std::string& path, const Tensor& g) {
  NoGradGuard no_grad;
  if (path == "attn.in_proj_weight" || path == "attn.in_proj_bias") {
    // Rows [q_r; k_r; v_r] on rank r: gather each part, then stack the parts.
    const std::int64_t e = g.size(0) / 3;
    std::vector<Tensor> parts;
    for (std::int64_t part = 0; part < 3; ++part) {
      parts.push_back(dc::all_gather(Var(g.narrow(0, part * e, e).contiguous()), tp).value());
    }
    return cat(parts, 0);
  }
  if (path == "attn.out_proj.weight" || path == "fc2.weight") {
    return dc::all_gather_dim(Var(g), 1, tp).value();
  }
  if (path == "fc1.weight" || path == "fc1.bias") return dc::all_gather(Var(g), tp).value();
  return g;  // replicated
}

}  // namespace

TEST_CASE(
    "the tensor-parallel block equals the one-rank block from the same seed; replicated "
    "gradients are bit-identical on every rank",
    "[autodiff][tp]") {
  const Tensor x = rank_input({2, 4, kEmbed}, 0, 41);
  const Tensor target = rank_input({2, 4, kEmbed}, 0, 42);
  Block ref;
  Var rx(x, true);
  Var ry = ref.forward(rx);
  mse_loss(ry, Var(target)).backward();
  auto ref_grad = [&](const std::string& path) -> Tensor {
    if (path.rfind("attn.", 0) == 0) return ref.attn.param(path.substr(5)).grad();
    if (path.rfind("fc1.", 0) == 0) return ref.fc1.param(path.substr(4)).grad();
    if (path.rfind("fc2.", 0) == 0) return ref.fc2.param(path.substr(4)).grad();
    if (path.rfind("ln1.", 0) == 0) return ref.ln1.param(path.substr(4)).grad();
    return ref.ln2.param(path.substr(4)).grad();
  };
  const std::vector<std::string> paths = {
      "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight", "attn.out_proj.bias",
      "fc1.weight",          "fc1.bias",          "fc2.weight",           "fc2.bias",
      "ln1.weight",          "ln1.bias",          "ln2.weight",           "ln2.bias"};
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    std::vector<BlockRun> runs(2);
    run_ranks(InProcessGroup::create(2), [&](Communicator& tp) {
      TpBlock block(tp, sp);
      const int r = tp.rank();
      // Under sp each rank holds its block of the sequence; the loss is then its block's share
      // (a per-rank loss: the objective is their sum, which is the one-rank loss).
      Var xv(sp ? x.narrow(1, 2 * r, 2).clone() : x, true);
      const Var y = block.forward(xv);
      const Tensor t = sp ? target.narrow(1, 2 * r, 2).clone() : target;
      Var loss = mse_loss(y, Var(t), Reduction::Sum);
      div(loss, static_cast<double>(target.numel())).backward();
      BlockRun& run = runs[static_cast<std::size_t>(r)];
      NoGradGuard no_grad;
      run.out = sp ? dc::all_gather_dim(Var(y.value()), 1, tp).value() : y.value();
      run.input_grad = sp ? dc::all_gather_dim(Var(xv.grad()), 1, tp).value() : xv.grad();
      for (const std::string& path : paths) {
        Tensor g = path.rfind("ln", 0) == 0
                       ? (path[2] == '1' ? block.ln1 : block.ln2).param(path.substr(4)).grad()
                       : block.param(path).grad();
        run.grads.emplace_back(path, gathered(tp, path, g));
      }
    });
    for (std::size_t r = 0; r < 2; ++r) {
      CAPTURE(r);
      CHECK(allclose(runs[r].out, ry.value(), 1e-12, 1e-14));
      CHECK(allclose(runs[r].input_grad, rx.grad(), 1e-12, 1e-14));
      for (const auto& [path, g] : runs[r].grads) {
        CAPTURE(path);
        CHECK(allclose(g, ref_grad(path), 1e-12, 1e-14));
      }
      // The replicated parameters (LayerNorm weights, the row layers' biases): bit for bit.
      for (std::size_t i = 0; i < paths.size(); ++i) {
        if (paths[i] == "attn.out_proj.bias" || paths[i] == "fc2.bias" ||
            paths[i].rfind("ln", 0) == 0) {
          CAPTURE(paths[i]);
          CHECK(equal(runs[r].grads[i].second, runs[0].grads[i].second));
        }
      }
    }
  }
}

TEST_CASE(
    "ParallelDropout draws one mask where replicated, one per rank where sharded, and "
    "resumes exactly",
    "[autodiff][tp]") {
  std::vector<Tensor> rep(2), shard(2), resumed(2), again(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    nn::ParallelDropout a(0.5, comm, nn::RngRegion::Replicated, 11);
    nn::ParallelDropout b(0.5, comm, nn::RngRegion::Sharded, 11);
    const Var ones(Tensor::ones({64}, DType::F64));
    rep[r] = a(ones).value();
    shard[r] = b(ones).value();
    const Generator::State saved = b.generator().state();
    resumed[r] = b(ones).value();
    b.generator().set_state(saved);
    again[r] = b(ones).value();
  });
  CHECK(equal(rep[0], rep[1]));
  CHECK_FALSE(equal(shard[0], shard[1]));
  CHECK(equal(resumed[0], again[0]));
  CHECK(equal(resumed[1], again[1]));
  CHECK_FALSE(equal(resumed[0], shard[0]));  // the stream moved on
  CHECK(nn::tensor_parallel_seed(11, 1, nn::RngRegion::Replicated) == 11);
  CHECK(nn::tensor_parallel_seed(11, 0, nn::RngRegion::Sharded) !=
        nn::tensor_parallel_seed(11, 1, nn::RngRegion::Sharded));
}

TEST_CASE("ParallelMultiheadAttention rejects heads that do not divide by the group size",
          "[autodiff][tp]") {
  std::vector<std::string> errors(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    try {
      nn::ParallelMultiheadAttention(6, 3, comm);
    } catch (const ValueError& e) {
      errors[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  for (const std::string& e : errors) {
    CHECK_THAT(e, Catch::Contains("ParallelMultiheadAttention: expected num_heads divisible by "
                                  "the group size 2, got 3"));
  }
}
