// The host side of the CUDA index ops' asynchronous bounds check (cuda/backend/index_errors.h):
// a record the device completed is raised in the CPU backend's words, and a device no index op
// ran on costs no CUDA call at a synchronising point.
#include <catch2/catch.hpp>

#include <string>

#include "cuda/backend/index_errors.h"
#include "tensor/core/error.h"

using namespace ruccl;
using namespace ruccl::cuda;

namespace {

IndexErrorRecord record(IndexOpCode op, std::int64_t value, std::int64_t position,
                        std::int64_t bound, std::int64_t dim) {
  IndexErrorRecord r;
  r.state = kRecordComplete;
  r.op = static_cast<int>(op);
  r.value = value;
  r.position = position;
  r.bound = bound;
  r.dim = dim;
  return r;
}

std::string what_of(const IndexErrorRecord& r) {
  try {
    throw_recorded(r);
  } catch (const IndexError& e) {
    return e.what();
  }
  return "no IndexError";
}

}  // namespace

TEST_CASE("a recorded bad index is raised as the CPU backend's IndexError", "[cuda_host][index]") {
  IndexErrorRecord g = record(IndexOpCode::kGather, 9, 5, 5, 1);
  g.index_ndim = 2;
  g.index_sizes[0] = 2;
  g.index_sizes[1] = 5;
  g.of_ndim = 2;
  g.of_sizes[0] = 4;
  g.of_sizes[1] = 5;
  CHECK(what_of(g) ==
        "gather: expected every index in [0, 5) for dim 1 of shape [4, 5], got 9 at position "
        "[1, 0]");
  IndexErrorRecord h = record(IndexOpCode::kOneHot, 7, 4, 6, -1);
  h.index_ndim = 1;
  h.index_sizes[0] = 5;
  h.of_ndim = 2;
  h.of_sizes[0] = 5;
  h.of_sizes[1] = 6;
  CHECK_THAT(what_of(h), Catch::StartsWith("one_hot: expected every index in [0, 6), got 7"));
  CHECK_THAT(what_of(h), Catch::Contains("at position [4]"));
}

TEST_CASE("every index op code has its op's name", "[cuda_host][index]") {
  CHECK(std::string(index_op_name(IndexOpCode::kIndexSelect)) == "index_select");
  CHECK(std::string(index_op_name(IndexOpCode::kGather)) == "gather");
  CHECK(std::string(index_op_name(IndexOpCode::kScatterAdd)) == "scatter_add");
  CHECK(std::string(index_op_name(IndexOpCode::kIndexAdd)) == "index_add");
  CHECK(std::string(index_op_name(IndexOpCode::kOneHot)) == "one_hot");
}

TEST_CASE("a record that is not complete is not raised", "[cuda_host][index]") {
  IndexErrorRecord r = record(IndexOpCode::kGather, 9, 0, 5, 0);
  r.state = kRecordWriting;
  CHECK_THROWS_AS(throw_recorded(r), InternalError);
}

TEST_CASE("a device no index op ran on raises nothing and needs no GPU at a sync point",
          "[cuda_host][index]") {
  CHECK_NOTHROW(raise_index_error(Device::cuda(3)));
  CHECK_NOTHROW(raise_index_error(Device::cpu()));
}
