// Runs docs/autodiff.md's nn example (extracted into nn_doc_example.cpp by tests/CMakeLists.txt
// and linked into this binary): the model it writes must build, clone, convert and train.
#include <catch2/catch.hpp>

#include <cmath>

// Defined by the docs example (global namespace).
double nn_doc_example();

TEST_CASE("the nn example of docs/autodiff.md runs and is reproducible", "[autodiff]") {
  const double loss = nn_doc_example();
  // Four classes from small random logits: cross-entropy near ln 4 = 1.39.
  CHECK(std::isfinite(loss));
  CHECK(loss > 0.5);
  CHECK(loss < 3.0);
  CHECK(nn_doc_example() == loss);  // manual_seed(0) rebuilds the same model, bit for bit
}
