// Tensor-parallel layers (autodiff/nn/parallel_linear.h, vocab_parallel.h): distributed_gradcheck
// in float64 of each layer's forward (replicated inputs enter with reduce_from_region, replicated
// outputs leave with copy_to_region: tests/autodiff/region_ops_test.cpp), values and gradients
// against the one-rank layer built from the same seed (<= 1e-12 relative in F64), replicated
// gradients bit-identical on every rank, and errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/nn/nn.h"
#include "collective/collective.h"
#include "collective/run_ranks.h"
#include "tensor/tensor.h"
#include "tests/autodiff/rank_input.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;

namespace {

using test::rank_input;

Var leaf(const Shape& shape, int rank, std::uint64_t seed) {
  return Var(rank_input(shape, rank, seed), true);
}

void require_gradcheck(const dc::DistributedGradcheckFn& fn,
                       const std::vector<std::vector<Var>>& inputs) {
  const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(fn, inputs);
  INFO(report.message);
  REQUIRE(report.ok);
}

// |a - b| <= 1e-12 |b| elementwise (plus 1e-15 for values that cancel to about zero).
bool close12(const Tensor& a, const Tensor& b) { return allclose(a, b, 1e-12, 1e-15); }

}  // namespace

TEST_CASE("column_parallel_linear passes distributed_gradcheck with and without gather_output",
          "[autodiff][tp]") {
  for (bool gather : {false, true}) {
    CAPTURE(gather);
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < 2; ++r) {
      inputs.push_back({leaf({3, 4}, r, 1), leaf({3, 4}, r, 2), leaf({3}, r, 3)});
    }
    require_gradcheck(
        [gather](Communicator& comm, const std::vector<Var>& in) {
          const Var x = dc::reduce_from_region(in[0], comm);  // replicated
          const Var y =
              nn::column_parallel_linear(x, in[1], in[2], comm, {.gather_output = gather});
          return gather ? dc::copy_to_region(y, comm) : y;
        },
        inputs);
  }
}

TEST_CASE("row_parallel_linear passes distributed_gradcheck with a parallel or replicated input",
          "[autodiff][tp]") {
  for (bool parallel_in : {true, false}) {
    CAPTURE(parallel_in);
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < 2; ++r) {
      inputs.push_back({leaf({3, parallel_in ? 2 : 4}, r, 4), leaf({3, 2}, r, 5), leaf({3}, r, 6)});
    }
    require_gradcheck(
        [parallel_in](Communicator& comm, const std::vector<Var>& in) {
          const Var x = parallel_in ? in[0] : dc::reduce_from_region(in[0], comm);
          const Var b = dc::reduce_from_region(in[2], comm);  // the replicated bias
          const Var y =
              nn::row_parallel_linear(x, in[1], b, comm, {.input_is_parallel = parallel_in});
          return dc::copy_to_region(y, comm);
        },
        inputs);
  }
}

TEST_CASE("sequence-parallel column and row linear pass distributed_gradcheck", "[autodiff][tp]") {
  // Column: the input is this rank's block of the sequence [2, T / W, 4], gathered; row: the
  // output is left as this rank's block of the sequence, the replicated bias entering it.
  std::vector<std::vector<Var>> inputs;
  for (int r = 0; r < 2; ++r) {
    inputs.push_back({leaf({2, 2, 4}, r, 7), leaf({3, 4}, r, 8), leaf({3}, r, 9),
                      leaf({4, 3}, r, 10), leaf({4}, r, 11)});
  }
  require_gradcheck(
      [](Communicator& comm, const std::vector<Var>& in) {
        const Var h = tanh(nn::column_parallel_linear(
            in[0], in[1], in[2], comm, {.sequence_parallel = true, .sequence_dim = 1}));
        const Var b = dc::reduce_from_region(in[4], comm);
        return nn::row_parallel_linear(h, in[3], b, comm,
                                       {.sequence_parallel = true, .sequence_dim = 1});
      },
      inputs);
}

TEST_CASE("vocab_parallel_embedding and vocab_parallel_cross_entropy pass distributed_gradcheck",
          "[autodiff][tp]") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    const std::int64_t local = 6 / world;
    const Tensor ids = Tensor::from_vector<std::int64_t>({0, 5, 3, 3, 1, 4}, {2, 3});
    const Tensor targets = Tensor::from_vector<std::int64_t>({2, 5, 0, -100, 3, 1}, {6});
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < world; ++r) {
      inputs.push_back({leaf({local, 2}, r, 12), leaf({6, local}, r, 13)});
    }
    require_gradcheck(
        [&](Communicator& comm, const std::vector<Var>& in) {
          const Var e = nn::vocab_parallel_embedding(ids, in[0], comm);  // replicated [2, 3, 2]
          const Var l = nn::vocab_parallel_cross_entropy(in[1], targets, comm);  // replicated
          return dc::copy_to_region(add(mul(sum(mul(e, e)), 0.1), l), comm);
        },
        inputs);
  }
}

namespace {

// What one rank (or the one-rank reference) leaves after forward and backward.
struct LayerRun {
  Tensor out;
  std::vector<Tensor> grads;  // in the order the test lists them
  Tensor input_grad;
};

}  // namespace

TEST_CASE(
    "ColumnParallelLinear + RowParallelLinear equal the one-rank Linear pair from the same "
    "seed, replicated gradients bit-identical",
    "[autodiff][tp]") {
  const Tensor x = rank_input({5, 4}, 0, 20);
  const Tensor t = rank_input({5, 3}, 0, 21);
  auto one_rank = [&] {
    Generator gen(7);
    nn::Linear fc1(4, 8, gen, {.dtype = DType::F64});
    nn::Linear fc2(8, 3, gen, {.dtype = DType::F64});
    Var xv(x, true);
    Var y = fc2(tanh(fc1(xv)));
    mse_loss(y, Var(t)).backward();
    return LayerRun{
        y.value(),
        {fc1.weight().grad(), fc1.bias().grad(), fc2.weight().grad(), fc2.bias().grad()},
        xv.grad()};
  };
  const LayerRun ref = one_rank();
  for (int world : {1, 2, 4}) {
    CAPTURE(world);
    std::vector<LayerRun> runs(static_cast<std::size_t>(world));
    std::vector<Tensor> w1(runs.size()), w2(runs.size());
    run_ranks(InProcessGroup::create(world), [&](Communicator& comm) {
      Generator gen(7);
      nn::ColumnParallelLinear fc1(4, 8, comm, gen, {.dtype = DType::F64});
      nn::RowParallelLinear fc2(8, 3, comm, gen, {.dtype = DType::F64});
      Var xv(x, true);
      Var y = fc2(tanh(fc1(xv)));
      mse_loss(y, Var(t)).backward();  // the replicated loss, counted once
      NoGradGuard no_grad;
      const auto r = static_cast<std::size_t>(comm.rank());
      runs[r] = {y.value(),
                 {dc::all_gather(Var(fc1.weight().grad()), comm).value(),
                  dc::all_gather(Var(fc1.bias().grad()), comm).value(),
                  dc::all_gather_dim(Var(fc2.weight().grad()), 1, comm).value(), fc2.bias().grad()},
                 xv.grad()};
      w1[r] = dc::all_gather(Var(fc1.weight().value()), comm).value();
      w2[r] = dc::all_gather_dim(Var(fc2.weight().value()), 1, comm).value();
    });
    Generator gen(7);
    nn::Linear fc1(4, 8, gen, {.dtype = DType::F64});
    nn::Linear fc2(8, 3, gen, {.dtype = DType::F64});
    for (std::size_t r = 0; r < runs.size(); ++r) {
      CAPTURE(r);
      CHECK(equal(w1[r], fc1.weight().value()));  // the shards concatenate to the one-rank init
      CHECK(equal(w2[r], fc2.weight().value()));
      CHECK(close12(runs[r].out, ref.out));
      CHECK(close12(runs[r].input_grad, ref.input_grad));
      for (std::size_t i = 0; i < ref.grads.size(); ++i) {
        CAPTURE(i);
        CHECK(close12(runs[r].grads[i], ref.grads[i]));
      }
      // Replicated: the input's and the row bias's gradients, and the output, bit for bit.
      CHECK(equal(runs[r].out, runs[0].out));
      CHECK(equal(runs[r].input_grad, runs[0].input_grad));
      CHECK(equal(runs[r].grads[3], runs[0].grads[3]));
    }
  }
}

TEST_CASE(
    "VocabParallelEmbedding + a column-parallel head + vocab_parallel_cross_entropy equal "
    "the one-rank Embedding, Linear and cross_entropy",
    "[autodiff][tp]") {
  const Tensor ids = Tensor::from_vector<std::int64_t>({0, 7, 3, 3, 5, 6}, {2, 3});
  const Tensor targets = Tensor::from_vector<std::int64_t>({1, 2, 7, 4, -100, 0}, {2, 3});
  Generator gen(9);
  nn::Embedding emb(8, 4, gen, {.dtype = DType::F64});
  nn::Linear head(4, 8, gen, {.dtype = DType::F64});
  Var ref_loss = cross_entropy(reshape(head(emb(ids)), Shape{6, 8}), targets.reshape(Shape{6}));
  ref_loss.backward();
  for (int world : {2, 4}) {
    CAPTURE(world);
    std::vector<double> loss(static_cast<std::size_t>(world));
    std::vector<Tensor> emb_grad(loss.size()), head_grad(loss.size()), emb_w(loss.size());
    run_ranks(InProcessGroup::create(world), [&](Communicator& comm) {
      Generator g(9);
      nn::VocabParallelEmbedding pemb(8, 4, comm, g, {.dtype = DType::F64});
      nn::ColumnParallelLinear phead(4, 8, comm, g, {.dtype = DType::F64});
      Var l = nn::vocab_parallel_cross_entropy(phead(pemb(ids)), targets, comm);
      l.backward();
      NoGradGuard no_grad;
      const auto r = static_cast<std::size_t>(comm.rank());
      loss[r] = l.value().item<double>();
      emb_grad[r] = dc::all_gather(Var(pemb.weight().grad()), comm).value();
      emb_w[r] = dc::all_gather(Var(pemb.weight().value()), comm).value();
      head_grad[r] = dc::all_gather(Var(phead.weight().grad()), comm).value();
    });
    for (std::size_t r = 0; r < loss.size(); ++r) {
      CAPTURE(r);
      CHECK(loss[r] == Approx(ref_loss.value().item<double>()).epsilon(1e-12));
      CHECK(loss[r] == loss[0]);
      CHECK(equal(emb_w[r], emb.weight().value()));
      CHECK(close12(emb_grad[r], emb.weight().grad()));
      CHECK(close12(head_grad[r], head.weight().grad()));
    }
  }
}

TEST_CASE("tensor-parallel layers reject bad sizes and inputs, naming expected and got",
          "[autodiff][tp]") {
  std::vector<std::vector<std::string>> errors(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    auto& out = errors[static_cast<std::size_t>(comm.rank())];
    auto expect = [&](auto&& fn) {
      try {
        fn();
        out.push_back("no error");
      } catch (const Error& e) {
        out.push_back(e.what());
      }
    };
    expect([&] { nn::ColumnParallelLinear(4, 5, comm); });
    expect([&] { nn::RowParallelLinear(3, 4, comm); });
    expect([&] { nn::VocabParallelEmbedding(7, 4, comm); });
    nn::ColumnParallelLinear fc(4, 6, comm);
    expect([&] { fc(Var(Tensor::zeros({2, 5}))); });
    nn::RowParallelLinear row(6, 2, comm);
    expect([&] { row(Var(Tensor::zeros({2, 6}))); });  // input_is_parallel: expects 6 / 2
    nn::VocabParallelEmbedding emb(8, 4, comm);
    expect([&] { emb(Tensor::from_vector<std::int64_t>({1, 8}, {2})); });
    expect([&] {
      nn::vocab_parallel_cross_entropy(Var(Tensor::zeros({3, 4})),
                                       Tensor::from_vector<std::int64_t>({0, 1}, {2}), comm);
    });
  });
  for (const auto& e : errors) {
    REQUIRE(e.size() == 7);
    CHECK_THAT(e[0], Catch::Contains("ColumnParallelLinear: expected out_features divisible by "
                                     "the group size 2, got 5"));
    CHECK_THAT(e[1], Catch::Contains("RowParallelLinear: expected in_features divisible by the "
                                     "group size 2, got 3"));
    CHECK_THAT(e[2], Catch::Contains("VocabParallelEmbedding: expected num_embeddings divisible "
                                     "by the group size 2, got 7"));
    CHECK_THAT(e[3], Catch::Contains("ColumnParallelLinear: expected an input whose last dim is "
                                     "4, got [2, 5]"));
    CHECK_THAT(e[4], Catch::Contains("RowParallelLinear: expected an input whose last dim is 3, "
                                     "got [2, 6]"));
    CHECK_THAT(e[5], Catch::Contains("VocabParallelEmbedding: expected indices in [0, 8), got one "
                                     "in [1, 8]"));
    CHECK_THAT(e[6], Catch::Contains("vocab_parallel_cross_entropy: expected targets of the "
                                     "logits' shape without the class dim, [3], got [2]"));
  }
}

TEST_CASE("a sequence-parallel VocabParallelEmbedding passes distributed_gradcheck",
          "[autodiff][tp]") {
  const Tensor ids = Tensor::from_vector<std::int64_t>({0, 5, 3, 3, 1, 4, 2, 2}, {2, 4});
  std::vector<std::vector<Var>> inputs;
  for (int r = 0; r < 2; ++r) inputs.push_back({leaf({3, 2}, r, 14)});
  require_gradcheck(
      [&](Communicator& comm, const std::vector<Var>& in) {
        // Output: this rank's block of the sequence [2, 4 / 2, 2], a per-rank value.
        return nn::vocab_parallel_embedding(ids, in[0], comm,
                                            {.sequence_parallel = true, .sequence_dim = 1});
      },
      inputs);
}

TEST_CASE(
    "vocab_parallel_cross_entropy is stable in F32 and equals cross_entropy on the whole "
    "logits",
    "[autodiff][tp]") {
  // Logits around 1e4: exp would overflow F32 without the all-reduced maxima.
  Generator gen(3);
  const Tensor logits = add(mul(Tensor::randn({5, 8}, gen), 10.0), 1e4);
  const Tensor targets = Tensor::from_vector<std::int64_t>({7, 0, 3, 3, 6}, {5});
  Var whole(logits, true);
  Var ref = cross_entropy(whole, targets, Reduction::Sum);
  ref.backward();
  std::vector<double> loss(2);
  std::vector<Tensor> grad(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    Var shard(logits.narrow(1, 4 * comm.rank(), 4).clone(), true);
    Var l = nn::vocab_parallel_cross_entropy(shard, targets, comm, {.reduction = Reduction::Sum});
    l.backward();
    loss[r] = l.value().item<double>();
    grad[r] = shard.grad();
  });
  for (std::size_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    REQUIRE(std::isfinite(loss[r]));
    // F32: the shifted logits are exact (|z - max| < 2^7 from values near 1e4 with 2^-10 steps);
    // the sums of five rows' exponentials round at ~1e-7 relative each.
    CHECK(loss[r] == Approx(ref.value().item<double>()).epsilon(1e-5));
    CHECK(
        allclose(grad[r], whole.grad().narrow(1, 4 * static_cast<std::int64_t>(r), 4), 1e-5, 1e-6));
  }
}

TEST_CASE("ParallelMultiheadAttention in [T, B, E] with a Bool mask equals MultiheadAttention",
          "[autodiff][tp]") {
  const Tensor x = rank_input({3, 2, 4}, 0, 50);  // [T, B, E]
  const Tensor mask = Tensor::from_vector<bool>(
      {false, true, true, false, false, true, false, false, false}, {3, 3});  // true: masked
  Generator gen(12);
  nn::MultiheadAttention ref(4, 2, gen, {.dtype = DType::F64});
  Var rx(x, true);
  Var ry = ref.forward(rx, rx, rx, mask);
  sum(mul(ry, ry)).backward();
  std::vector<Tensor> out(2), dx(2), dw(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    Generator g(12);
    nn::ParallelMultiheadAttention attn(4, 2, comm, g, {.dtype = DType::F64});
    Var xv(x, true);
    Var y = attn.forward(xv, mask);
    sum(mul(y, y)).backward();
    const auto r = static_cast<std::size_t>(comm.rank());
    out[r] = y.value();
    dx[r] = xv.grad();
    NoGradGuard no_grad;
    dw[r] = dc::all_gather_dim(Var(attn.out_proj()->weight().grad()), 1, comm).value();
  });
  for (std::size_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(close12(out[r], ry.value()));
    CHECK(close12(dx[r], rx.grad()));
    CHECK(close12(dw[r], ref.out_proj()->weight().grad()));
  }
}

TEST_CASE(
    "sequence-parallel ParallelMultiheadAttention in [T, B, E] equals MultiheadAttention "
    "block by block",
    "[autodiff][tp]") {
  const Tensor x = rank_input({4, 2, 4}, 0, 51);  // [T, B, E]
  Generator gen(13);
  nn::MultiheadAttention ref(4, 2, gen, {.dtype = DType::F64});
  Var rx(x, true);
  Var ry = ref.forward(rx, rx, rx, {}, true);
  sum(mul(ry, ry)).backward();
  std::vector<Tensor> out(2), dx(2), dbias(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    Generator g(13);
    nn::ParallelMultiheadAttention attn(4, 2, comm, g,
                                        {.sequence_parallel = true, .dtype = DType::F64});
    const int r = comm.rank();
    Var xv(x.narrow(0, 2 * r, 2).clone(), true);  // this rank's block of T
    Var y = attn.forward(xv, Tensor(), true);     // [T / 2, B, E]
    sum(mul(y, y)).backward();                    // per-rank losses: their sum is the one-rank
    NoGradGuard no_grad;
    const auto ru = static_cast<std::size_t>(r);
    out[ru] = dc::all_gather(Var(y.value()), comm).value();
    dx[ru] = dc::all_gather(Var(xv.grad()), comm).value();
    dbias[ru] = attn.out_proj()->bias().grad();
  });
  for (std::size_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(close12(out[r], ry.value()));
    CHECK(close12(dx[r], rx.grad()));
    CHECK(close12(dbias[r], ref.out_proj()->bias().grad()));
    CHECK(equal(dbias[r], dbias[0]));  // replicated, entered through copy_to_region
  }
}
