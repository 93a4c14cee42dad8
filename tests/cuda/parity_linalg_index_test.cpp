// Parity of matmul (cuBLAS) and the index ops: the golden cases of the CPU suite
// (tests/data/tensor_linalg_index.txt) run on the GPU, more dtypes and layouts against the CPU,
// and the bounds errors raised with the CPU's words.
#include "tests/cuda/parity_support.h"
#include "tests/tensor/golden_tensors.h"

using namespace ruccl;
using namespace ruccl::parity;
using Catch::Matchers::Contains;

TEST_CASE("every golden matmul case gives the golden result on the GPU", "[cuda][parity]") {
  require_gpu();
  int cases = 0;
  for (const auto& [name, c] : testing::linalg_index_golden()) {
    if (name.rfind("matmul_", 0) != 0) continue;
    ++cases;
    const Tensor out = matmul(c.at("a").to(kGpu), c.at("b").to(kGpu));
    require_match(c.at("out"), out, "golden " + name,
                  c.at("out").dtype() == DType::F64 ? 1e-12 : 1e-5);
  }
  REQUIRE(cases >= 10);
}

TEST_CASE("matmul matches the CPU in F32, F64, F16 and BF16 with transposed and broadcast operands",
          "[cuda][parity]") {
  require_gpu();
  for (DType dt : dtypes_for(Op::Matmul)) {
    const Tensor a = randn({3, 65, 130}, dt, 101);
    const Tensor b = randn({3, 130, 47}, dt, 102);
    const double tol = dt == DType::F64 ? 1e-12 : dt == DType::F32 ? 1e-5 : 2e-2;
    const std::string name = str("matmul ", dt);
    check_op(
        name, {a, b}, [](auto& in) { return matmul(in[0], in[1]); }, tol);
    check_op(
        name + " a^T", {a, b},
        [](auto& in) { return matmul(in[0].transpose(1, 2).contiguous().transpose(1, 2), in[1]); },
        tol);
    check_op(
        name + " b^T", {a, b},
        [](auto& in) { return matmul(in[0], in[1].transpose(1, 2).contiguous().transpose(1, 2)); },
        tol);
    check_op(
        name + " broadcast matrix", {a, b},
        [](auto& in) { return matmul(in[0], in[1].select(0, 1)); }, tol);
    check_op(
        name + " strided rows", {a, b},
        [](auto& in) { return matmul(in[0].narrow(2, 0, 64), in[1].narrow(1, 1, 64)); }, tol);
    check_op(
        name + " vector", {a, b},
        [](auto& in) { return matmul(in[0].select(0, 0), in[1].select(0, 0).select(1, 3)); }, tol);
  }
}

TEST_CASE("TF32 is off by default and used only when asked", "[cuda][parity]") {
  require_gpu();
  REQUIRE_FALSE(cuda::allow_tf32());
  // Products of values with 23 significant bits: exact in F32 FMA, off by ~1e-3 relative in TF32.
  std::vector<float> av(64 * 64), bv(64 * 64);
  for (std::size_t i = 0; i < av.size(); ++i) {
    av[i] = 1.0f + static_cast<float>(i % 97) * 1.1920929e-7f * 4097.0f;
    bv[i] = 1.0f - static_cast<float>(i % 89) * 1.1920929e-7f * 3001.0f;
  }
  const Tensor a = Tensor::from_vector(av, {64, 64});
  const Tensor b = Tensor::from_vector(bv, {64, 64});
  const Tensor cpu = matmul(a, b);
  require_match(cpu, matmul(a.to(kGpu), b.to(kGpu)), "F32 matmul without TF32", 1e-6);
  cuda::set_allow_tf32(true);
  const Tensor tf32 = matmul(a.to(kGpu), b.to(kGpu)).to(Device::cpu());
  cuda::set_allow_tf32(false);
  const double err = max(abs(sub(tf32.to(DType::F64), cpu.to(DType::F64)))).item<double>();
  INFO("largest TF32 error " << err);
  CHECK(err > 1e-4);  // TF32 really ran (10-bit mantissa products)
  CHECK(err < 1.0);
}

TEST_CASE("every golden index case gives the golden result on the GPU", "[cuda][parity]") {
  require_gpu();
  int cases = 0;
  for (const auto& [name, c] : testing::linalg_index_golden()) {
    const auto gpu = [&c = c](const char* key) { return c.at(key).to(kGpu); };
    const std::int64_t dim = name.back() == '0' ? 0 : name.back() == '1' ? 1 : 2;
    Tensor out;
    if (name.rfind("gather_", 0) == 0) {
      out = gather(gpu("x"), dim, gpu("index"));
    } else if (name.rfind("index_select_", 0) == 0) {
      out = index_select(gpu("x"), dim, gpu("index"));
    } else if (name.rfind("index_add_", 0) == 0) {
      out = index_add(gpu("x"), dim, gpu("index"), gpu("src"));
    } else if (name.rfind("scatter_add_", 0) == 0) {
      out = scatter_add(gpu("x"), dim, gpu("index"), gpu("src"));
    } else if (name == "one_hot") {
      out = one_hot(gpu("indices"), c.at("out").size(-1));
    } else {
      continue;
    }
    ++cases;
    require_match(c.at("out"), out, "golden " + name, 1e-6);
  }
  REQUIRE(cases >= 9);
}

TEST_CASE("index ops match the CPU for every dtype and index dtype, repeated indices included",
          "[cuda][parity]") {
  require_gpu();
  for (DType dt : dtypes_for(Op::Gather)) {
    for (DType it : {DType::I32, DType::I64}) {
      const Tensor x = randn({50, 30, 4}, DType::F64, 111).mul(10.0).to(dt);
      const Tensor idx = randint({64}, 0, 30, it, 112);  // repeats: 64 picks of 30
      const Tensor gidx = randint({50, 12, 4}, 0, 30, it, 113);
      const Tensor src = randn({50, 64, 4}, DType::F64, 114).mul(10.0).to(dt);
      const Tensor gsrc = randn({50, 12, 4}, DType::F64, 115).mul(10.0).to(dt);
      const std::string name = str(dt, " with ", it, " indices");
      check_op("index_select " + name, {x, idx},
               [](auto& in) { return index_select(in[0], 1, in[1]); });
      check_op("gather " + name, {x, gidx}, [](auto& in) { return gather(in[0], 1, in[1]); });
      check_op("index_add " + name, {x, idx, src},
               [](auto& in) { return index_add(in[0], 1, in[1], in[2]); });
      check_op("scatter_add " + name, {x, gidx, gsrc},
               [](auto& in) { return scatter_add(in[0], 1, in[1], in[2]); });
      check_op("index_select of a transposed view " + name, {x, idx},
               [](auto& in) { return index_select(in[0].transpose(0, 1), 0, in[1]); });
    }
  }
  const Tensor labels = randint({7, 9}, 0, 11, DType::I64, 116);
  check_op("one_hot", {labels}, [](auto& in) { return one_hot(in[0], 11); });
}

TEST_CASE("an out-of-range index raises the CPU's IndexError on the GPU", "[cuda][parity]") {
  require_gpu();
  const Tensor x = Tensor::zeros({4, 5}, DType::F32, kGpu);
  const Tensor bad = Tensor::from_vector<std::int64_t>({0, 2, 5, 1, 7}).to(kGpu);
  const Tensor neg = Tensor::from_vector<std::int64_t>({0, -1}).to(kGpu);
  REQUIRE_THROWS_AS(index_select(x, 1, bad), IndexError);
  REQUIRE_THROWS_WITH(index_select(x, 1, bad),
                      Contains("index_select: expected every index in [0, 5) for dim 1 of shape "
                               "[4, 5], got 5 at position [2]"));
  REQUIRE_THROWS_WITH(index_select(x, 0, neg), Contains("got -1 at position [1]"));
  const Tensor g =
      Tensor::from_vector<std::int64_t>({0, 1, 2, 3, 4, 9, 0, 0, 0, 0}, {2, 5}).to(kGpu);
  REQUIRE_THROWS_WITH(gather(x, 1, g), Contains("got 9 at position [1, 0]"));
  REQUIRE_THROWS_WITH(scatter_add(x, 1, g, Tensor::ones({2, 5}, DType::F32, kGpu)),
                      Contains("scatter_add: expected every index in [0, 5)"));
  REQUIRE_THROWS_WITH(index_add(x, 1, bad, Tensor::ones({4, 5}, DType::F32, kGpu)),
                      Contains("got 5 at position [2]"));
  REQUIRE_THROWS_WITH(one_hot(bad, 6), Contains("one_hot: expected every index in [0, 6), got 7"));
  // The CPU frontend says the same for the same inputs.
  REQUIRE_THROWS_WITH(index_select(x.to(Device::cpu()), 1, bad.to(Device::cpu())),
                      Contains("got 5 at position [2]"));
}
