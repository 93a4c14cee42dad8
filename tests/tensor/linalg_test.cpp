// matmul: torch.matmul's rank rules against PyTorch golden data, operand layouts (transposed,
// strided, broadcast), the threaded and batched paths against a float64 reference, F16/BF16,
// empty dims, and every error.
#include <catch2/catch.hpp>

#include <vector>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/ops/linalg.h"
#include "tensor/random/generator.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_tensors.h"

using namespace ruccl;
using ruccl::testing::golden_case;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

// Naive float64 product of the last two dims (batch dims already equal), as the reference.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const std::int64_t batch = a.numel() / (a.size(-2) * a.size(-1));
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const std::vector<double> av = a.to(DType::F64).to_vector<double>();
  const std::vector<double> bv = b.to(DType::F64).to_vector<double>();
  std::vector<double> out(static_cast<std::size_t>(batch * m * n), 0.0);
  for (std::int64_t p = 0; p < batch; ++p) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t l = 0; l < k; ++l) {
        const double x = av[static_cast<std::size_t>((p * m + i) * k + l)];
        for (std::int64_t j = 0; j < n; ++j) {
          out[static_cast<std::size_t>((p * m + i) * n + j)] +=
              x * bv[static_cast<std::size_t>((p * k + l) * n + j)];
        }
      }
    }
  }
  Shape shape = a.shape();
  shape[shape.size() - 1] = n;
  return Tensor::from_vector(out, shape);
}

// Restores the CPU thread count when a test changes it.
struct ThreadCountGuard {
  int saved = cpu::num_threads();
  ~ThreadCountGuard() { cpu::set_num_threads(saved); }
};

}  // namespace

TEST_CASE("matmul matches PyTorch for every combination of operand ranks", "[tensor]") {
  for (const char* name :
       {"matmul_dot", "matmul_mm", "matmul_mv", "matmul_vm", "matmul_bmm", "matmul_broadcast_batch",
        "matmul_batched_by_matrix", "matmul_matrix_by_batched", "matmul_vector_by_batched",
        "matmul_batched_by_vector", "matmul_large"}) {
    INFO(name);
    const auto& c = golden_case(name);
    // F32 golden results are exact products rounded once; ours accumulate in F32 (K <= 40).
    REQUIRE_THAT(matmul(c.at("a"), c.at("b")), TensorNear(c.at("out"), 1e-5, 1e-5));
  }
  for (const char* name : {"matmul_mm_f64", "matmul_large_f64"}) {
    INFO(name);
    const auto& c = golden_case(name);
    REQUIRE_THAT(matmul(c.at("a"), c.at("b")), TensorNear(c.at("out"), 1e-12, 1e-12));
  }
}

TEST_CASE("matmul gives the same result for transposed, strided and contiguous operands",
          "[tensor]") {
  const auto& c = golden_case("matmul_large");
  const Tensor a = c.at("a");  // [50, 40]
  const Tensor b = c.at("b");  // [40, 37]
  const Tensor expected = matmul(a, b);
  // Column-major views (transposes of contiguous tensors) are read in place.
  const Tensor a_col = a.transpose(0, 1).contiguous().transpose(0, 1);
  const Tensor b_col = b.transpose(0, 1).contiguous().transpose(0, 1);
  REQUIRE_FALSE(a_col.is_contiguous());
  REQUIRE_THAT(matmul(a_col, b), TensorNear(expected, 1e-6, 1e-6));
  REQUIRE_THAT(matmul(a, b_col), TensorNear(expected, 1e-6, 1e-6));
  REQUIRE_THAT(matmul(a_col, b_col), TensorNear(expected, 1e-6, 1e-6));
  // Every other column of a wider tensor: no BLAS layout, copied first.
  Tensor wide = Tensor::zeros({50, 80});
  wide.as_strided({50, 40}, {80, 2}, 0).copy_(a);
  const Tensor a_strided = wide.as_strided({50, 40}, {80, 2}, 0);
  REQUIRE_THAT(matmul(a_strided, b), TensorNear(expected, 1e-6, 1e-6));
  // Rows of a wider matrix: a leading dimension larger than the row, read in place.
  const Tensor rows = wide.narrow(1, 0, 40);
  REQUIRE_THAT(matmul(rows, b),
               TensorNear(reference_matmul(rows.contiguous(), b).to(DType::F32), 1e-5, 1e-5));
}

TEST_CASE("matmul of large products split across threads matches a float64 reference", "[tensor]") {
  ThreadCountGuard guard;
  Generator gen(11);
  // Tall (split by rows) and wide (split by columns), both above the parallel threshold.
  for (const auto& [m, k, n] :
       std::vector<std::array<std::int64_t, 3>>{{200, 150, 130}, {64, 120, 300}}) {
    INFO("m=" << m << " k=" << k << " n=" << n);
    const Tensor a = Tensor::randn({m, k}, gen);
    const Tensor b = Tensor::randn({k, n}, gen);
    const Tensor expected = reference_matmul(a, b).to(DType::F32);
    cpu::set_num_threads(2);
    const Tensor two = matmul(a, b);
    cpu::set_num_threads(1);
    const Tensor one = matmul(a, b);
    // |error| <= k * eps * sum |a b| ~ 150 * 6e-8 * 15: well inside 1e-4.
    REQUIRE_THAT(two, TensorNear(expected, 1e-4, 1e-4));
    REQUIRE_THAT(one, TensorNear(expected, 1e-4, 1e-4));
    const Tensor a64 = a.to(DType::F64);
    const Tensor b64 = b.to(DType::F64);
    cpu::set_num_threads(2);
    REQUIRE_THAT(matmul(a64, b64), TensorNear(reference_matmul(a, b), 1e-12, 1e-12));
  }
}

TEST_CASE("batched matmul handles many small items, shared operands and broadcast batches",
          "[tensor]") {
  ThreadCountGuard guard;
  cpu::set_num_threads(2);
  Generator gen(5);
  // 5000 items of 8x8x8: above the parallel threshold in total, tiny each.
  const Tensor a = Tensor::randn({5000, 8, 8}, gen);
  const Tensor b = Tensor::randn({5000, 8, 8}, gen);
  REQUIRE_THAT(matmul(a, b), TensorNear(reference_matmul(a, b).to(DType::F32), 1e-5, 1e-5));

  // A shared right operand: computed as one tall product.
  const Tensor x = Tensor::randn({6, 50, 40}, gen);
  const Tensor w = Tensor::randn({40, 30}, gen);
  const Tensor shared = reference_matmul(x, w.unsqueeze(0).expand({6, 40, 30}).contiguous());
  REQUIRE_THAT(matmul(x, w), TensorNear(shared.to(DType::F32), 1e-5, 1e-5));
  // A shared left operand, and a transposed shared operand.
  const Tensor left = Tensor::randn({30, 50}, gen);
  const Tensor expected_left =
      reference_matmul(left.unsqueeze(0).expand({6, 30, 50}).contiguous(), x);
  REQUIRE_THAT(matmul(left, x), TensorNear(expected_left.to(DType::F32), 1e-5, 1e-5));
  REQUIRE_THAT(matmul(x, w.transpose(0, 1).contiguous().transpose(0, 1)),
               TensorNear(shared.to(DType::F32), 1e-5, 1e-5));
  // Batch dims that broadcast against each other ([3, 1] with [1, 4]).
  const Tensor p = Tensor::randn({3, 1, 5, 6}, gen);
  const Tensor q = Tensor::randn({1, 4, 6, 2}, gen);
  const Tensor expected_pq =
      reference_matmul(p.expand({3, 4, 5, 6}).contiguous(), q.expand({3, 4, 6, 2}).contiguous());
  REQUIRE_THAT(matmul(p, q), TensorNear(expected_pq.to(DType::F32), 1e-5, 1e-5));
}

TEST_CASE("matmul of F16 and BF16 computes in F32 and rounds once", "[tensor]") {
  const auto& c = golden_case("matmul_bmm");
  for (DType dtype : {DType::F16, DType::BF16}) {
    INFO(dtype);
    const Tensor a = c.at("a").to(dtype);
    const Tensor b = c.at("b").to(dtype);
    const Tensor expected = matmul(a.to(DType::F32), b.to(DType::F32)).to(dtype);
    REQUIRE_THAT(matmul(a, b), TensorEqual(expected));
    // A broadcast half operand stays exact too.
    const Tensor shared = b.select(0, 0);
    REQUIRE_THAT(matmul(a, shared),
                 TensorEqual(matmul(a.to(DType::F32), shared.to(DType::F32)).to(dtype)));
  }
}

TEST_CASE("matmul with empty dims gives empty or zero results", "[tensor]") {
  REQUIRE(matmul(Tensor::ones({0, 3}), Tensor::ones({3, 4})).shape() == Shape{0, 4});
  REQUIRE(matmul(Tensor::ones({2, 3}), Tensor::ones({3, 0})).shape() == Shape{2, 0});
  REQUIRE_THAT(matmul(Tensor::ones({2, 0}), Tensor::ones({0, 3})),
               TensorEqual(Tensor::zeros({2, 3})));
  REQUIRE_THAT(matmul(Tensor::ones({0}), Tensor::ones({0})), TensorEqual(Tensor::scalar(0.0)));
  REQUIRE(matmul(Tensor::ones({0, 2, 3}), Tensor::ones({3, 4})).shape() == Shape{0, 2, 4});
  REQUIRE_THAT(matmul(Tensor::ones({2, 3}, DType::F64), Tensor::ones({3}, DType::F64)),
               TensorEqual(Tensor::full({2}, 3.0, DType::F64)));
}

TEST_CASE("matmul rejects mismatched shapes, scalars and non-floating dtypes", "[tensor]") {
  REQUIRE_THROWS_MATCHES(
      matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})), ShapeError,
      Catch::Message("matmul: expected a.shape[-1] == b.shape[-2], got [2, 3] and [4, 5]"));
  REQUIRE_THROWS_MATCHES(
      matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({2, 4, 5})), ShapeError,
      Catch::Message("matmul: expected a.shape[-1] == b.shape[-2], got [2, 2, 3] and [2, 4, 5]"));
  REQUIRE_THROWS_MATCHES(matmul(Tensor::zeros({3}), Tensor::zeros({4})), ShapeError,
                         Catch::Message("matmul: expected a.shape[0] == b.shape[0] for a dot "
                                        "product, got [3] and [4]"));
  REQUIRE_THROWS_MATCHES(
      matmul(Tensor::zeros({2, 3}), Tensor::zeros({4})), ShapeError,
      Catch::Message("matmul: expected a.shape[-1] == b.shape[0], got [2, 3] and [4]"));
  // Batch dims that do not broadcast.
  REQUIRE_THROWS_AS(matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 4})), ShapeError);
  REQUIRE_THROWS_MATCHES(
      matmul(Tensor::scalar(1.0), Tensor::zeros({2})), ShapeError,
      Catch::Message("matmul: expected tensors with at least 1 dim, got [] and [2]"));
  REQUIRE_THROWS_MATCHES(
      matmul(Tensor::zeros({2, 2}, DType::I64), Tensor::zeros({2, 2}, DType::I64)), DTypeError,
      Catch::Message("matmul: expected a floating dtype, got I64"));
  REQUIRE_THROWS_MATCHES(matmul(Tensor::zeros({2, 2}), Tensor::zeros({2, 2}, DType::F64)),
                         DTypeError,
                         Catch::Message("matmul: expected equal dtypes, got F32 and F64"));
  REQUIRE_THROWS_AS(matmul(Tensor(), Tensor::zeros({2})), ValueError);
}

TEST_CASE("matmul_out writes the product into an existing tensor", "[tensor]") {
  const auto& c = golden_case("matmul_bmm");  // [2, 3, 4] x [2, 4, 5]
  const Tensor expected = matmul(c.at("a"), c.at("b"));
  Tensor out = Tensor::full({2, 3, 5}, 9.0);
  const auto storage = out.storage();
  matmul_out(c.at("a"), c.at("b"), out);
  REQUIRE(out.storage() == storage);
  REQUIRE_THAT(out, TensorEqual(expected));
  // A non-contiguous output, and an output that is also an input.
  Tensor base = Tensor::zeros({2, 5, 3});
  Tensor transposed = base.transpose(1, 2);
  matmul_out(c.at("a"), c.at("b"), transposed);
  REQUIRE_THAT(base.transpose(1, 2), TensorEqual(expected));
  Tensor square = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  matmul_out(square, square, square);
  REQUIRE_THAT(square, TensorEqual(Tensor::from_vector<float>({7, 10, 15, 22}, {2, 2})));
  REQUIRE_THROWS_MATCHES(matmul_out(c.at("a"), c.at("b"), square), ShapeError,
                         Catch::Message("matmul_out: expected an output of shape [2, 3, 5] for "
                                        "[2, 3, 4] and [2, 4, 5], got [2, 2]"));
  Tensor wrong_dtype = Tensor::zeros({2, 3, 5}, DType::F64);
  REQUIRE_THROWS_AS(matmul_out(c.at("a"), c.at("b"), wrong_dtype), DTypeError);
}

TEST_CASE("the CPU thread count can be set and is validated", "[tensor]") {
  ThreadCountGuard guard;
  REQUIRE(cpu::num_threads() >= 1);
  cpu::set_num_threads(3);
  REQUIRE(cpu::num_threads() == 3);
  REQUIRE_THROWS_MATCHES(cpu::set_num_threads(0), ValueError,
                         Catch::Message("cpu::set_num_threads: expected at least 1 thread, got 0"));
  REQUIRE(cpu::num_threads() == 3);
}
