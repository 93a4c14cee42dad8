#pragma once
// A table-driven checker for every Communicator operation: each OpCase knows how to call the
// operation and what every rank must get back, in closed form, for any dtype, reduce operation,
// world size, element count and memory layout of the input. run_and_check() runs a list of calls
// on one group (one thread per rank, over the transport a GroupFactory makes:
// tests/collective/group_factories.h) and asserts, on the main thread, every rank's results and
// that every input is left unchanged.
//
//   std::vector<Call> calls = {{Op::AllGather, DType::BF16, ReduceOperation::Sum, 257}};
//   run_and_check(InProcess::make, 4, calls);
//
// Input values are integers chosen so every result is exact in every dtype (BF16 holds integers
// up to 256 exactly, F16 up to 2048): see moved_value() and reduce_value().
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "collective/collective.h"
#include "tensor/core/tensor.h"

#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

namespace ruccl::testing::coverage {

/// How an input tensor is laid out in memory (its values are the same in every layout).
enum class Layout { Contiguous, Transposed, Narrowed };

/// Every operation of the table.
enum class Op {
  Broadcast,
  BroadcastFromSender,
  AllReduce,
  Reduce,
  AllGather,
  Gather,
  Scatter,
  ReduceScatter,
  AllToAll,
  AllToAllV,
  SendRecv
};

/// One collective call of a table run. Rank r's input has `rows` rows (W * rows for the ops that
/// split axis 0: scatter, reduce_scatter, all_to_all, all_to_all_v) of `cols` elements, or shape
/// [rows] when cols == 0.
struct Call {
  Op op;
  DType dtype;
  ReduceOperation reduce_op = ReduceOperation::Sum;
  std::int64_t rows = 1;
  std::int64_t cols = 0;
  Layout layout = Layout::Contiguous;
  int root = 0;
  /// The per-call algorithm (CallOptions::with_algorithm) of all_reduce, reduce, broadcast and
  /// all_gather; Auto: the communicator's option.
  Algorithm algorithm = Algorithm::Auto;
};

/// "all_gather", "reduce_scatter", ...
inline const char* op_name(Op op) {
  constexpr const char* kNames[] = {
      "broadcast", "broadcast_from_sender", "all_reduce", "reduce",       "all_gather", "gather",
      "scatter",   "reduce_scatter",        "all_to_all", "all_to_all_v", "send/recv"};
  return kNames[static_cast<int>(op)];
}

inline const std::vector<Op> kAllOpsTable = {
    Op::Broadcast, Op::BroadcastFromSender, Op::AllReduce, Op::Reduce,    Op::AllGather, Op::Gather,
    Op::Scatter,   Op::ReduceScatter,       Op::AllToAll,  Op::AllToAllV, Op::SendRecv};

inline bool reduces(Op op) {
  return op == Op::AllReduce || op == Op::Reduce || op == Op::ReduceScatter;
}
inline bool splits_axis0(Op op) {
  return op == Op::Scatter || op == Op::ReduceScatter || op == Op::AllToAll || op == Op::AllToAllV;
}

/// Rank r's element f for the data-movement ops: exact in `dtype`, varying with rank and position.
/// I32/I64 use their high bits (an I64 value is above 2^53, so a detour through double shows).
inline std::int64_t moved_value(DType dtype, int r, std::int64_t f) {
  switch (dtype) {
    case DType::I64: {
      const std::int64_t v = (std::int64_t{r + 1} << 54) + 2 * f + 1;
      return f % 3 == 0 ? -v : v;
    }
    case DType::I32: {
      const std::int64_t v = (std::int64_t{r + 1} << 24) + 2 * f + 1;
      return f % 3 == 0 ? -v : v;
    }
    case DType::F64:
      return (std::int64_t{r + 1} << 40) + 3 * f - 7;
    case DType::F32:
      return (f * 7 + r * 1031) % 16777213 - 8388606;  // |v| < 2^24
    case DType::F16:
      return (f * 7 + r * 31) % 2039 - 1019;  // |v| < 2^11
    default:
      return (f * 7 + r * 31) % 241 - 120;  // BF16: |v| < 2^8
  }
}

/// Rank r's element f for reducing with `op` over `world` ranks. Every partial result of every
/// reduction order is an integer that `dtype` (and F32, the accumulation type of F16/BF16) holds
/// exactly: Sum/Min/Max of values in [-5, 5] (I32/I64 scaled into their high bits), Mean of values
/// whose offsets cancel (the mean is an integer), Prod of +-1 and +-2 (|product| <= 2^8), bitwise
/// ops on values with bits up to 2^30 (I32) or 2^61 (I64), and negative ones.
inline std::int64_t reduce_value(DType dtype, ReduceOperation op, int world, int r,
                                 std::int64_t f) {
  const std::int64_t small = (f * 5 + r * 3) % 11 - 5;
  const bool i64 = dtype == DType::I64;
  const bool i32 = dtype == DType::I32;
  switch (op) {
    case ReduceOperation::Sum:
      return i64   ? small * (std::int64_t{1} << 54) + r + 1
             : i32 ? small * (std::int64_t{1} << 24) + r + 1
                   : small;
    case ReduceOperation::Mean:
      return (f * 5) % 11 - 5 + 2 * r - (world - 1);  // the offsets 2r - (W-1) sum to 0
    case ReduceOperation::Prod: {
      constexpr std::int64_t kFactors[] = {1, -1, 2, -2};
      return kFactors[(f + 2 * r) % 4];
    }
    case ReduceOperation::Min:
    case ReduceOperation::Max:
      return i64 ? small * (std::int64_t{1} << 40) + r : i32 ? small * (1 << 20) + r : small;
    default: {  // BitAnd, BitOr, BitXor: integers only
      const int bits = i64 ? 62 : 31;
      const std::int64_t v = (std::int64_t{1} << ((f * 3 + r * 7) % bits)) | ((f ^ r) & 7);
      return (f + r) % 5 == 0 ? ~v : v;
    }
  }
}

/// `op` applied to a and b (Mean folds as Sum; call_values() divides once).
inline std::int64_t combine(ReduceOperation op, std::int64_t a, std::int64_t b) {
  switch (op) {
    case ReduceOperation::Sum:
    case ReduceOperation::Mean:
      return a + b;
    case ReduceOperation::Prod:
      return a * b;
    case ReduceOperation::Min:
      return std::min(a, b);
    case ReduceOperation::Max:
      return std::max(a, b);
    case ReduceOperation::BitAnd:
      return a & b;
    case ReduceOperation::BitOr:
      return a | b;
    case ReduceOperation::BitXor:
      return a ^ b;
  }
  return 0;
}

/// Rank r's `n` input values of `c` in a group of `world` (row-major order).
inline std::vector<std::int64_t> input_values(const Call& c, int world, int r, std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t f = 0; f < n; ++f) {
    v[static_cast<std::size_t>(f)] = reduces(c.op) ? reduce_value(c.dtype, c.reduce_op, world, r, f)
                                                   : moved_value(c.dtype, r, f);
  }
  return v;
}

/// Every rank's input values of `c` (element r is rank r's), and their reduction when c.op reduces.
struct CallValues {
  std::vector<std::vector<std::int64_t>> inputs;
  std::vector<std::int64_t> reduced;  ///< exact; Mean divides exactly (see reduce_value)
};

/// The values of call `c` on a group of `world`: computed once, shared by every rank's check.
inline CallValues call_values(const Call& c, int world, std::int64_t n) {
  CallValues v;
  for (int r = 0; r < world; ++r) v.inputs.push_back(input_values(c, world, r, n));
  if (!reduces(c.op)) return v;
  v.reduced = v.inputs[0];
  for (int r = 1; r < world; ++r) {
    const std::vector<std::int64_t>& x = v.inputs[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < x.size(); ++i)
      v.reduced[i] = combine(c.reduce_op, v.reduced[i], x[i]);
  }
  if (c.reduce_op == ReduceOperation::Mean) {
    for (std::int64_t& a : v.reduced) a /= world;  // exact by construction of reduce_value
  }
  return v;
}

/// A contiguous tensor of `dtype` holding the integers `v` (exactly: see the file comment),
/// written in one pass (this runs on million-element tensors under the sanitizers too).
inline Tensor tensor_of_ints(const std::vector<std::int64_t>& v, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = t.data<T>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        out[i] = T(static_cast<float>(v[i]));  // |v| < 2^24: exact in float
      } else if constexpr (std::is_same_v<T, bool>) {
        out[i] = v[i] != 0;
      } else {
        out[i] = static_cast<T>(v[i]);
      }
    }
  });
  return t;
}

/// The logical shape of every rank's input of `c`.
inline Shape input_shape(const Call& c, int world) {
  const std::int64_t d0 = splits_axis0(c.op) ? c.rows * world : c.rows;
  return c.cols == 0 ? Shape{d0} : Shape{d0, c.cols};
}

/// `v` (row-major values of a [a, b] tensor, or of [a] when shape is 1-D) laid out as `layout`:
/// Transposed is the transpose of a contiguous [b, a] tensor, Narrowed the middle b columns of a
/// contiguous [a, b + 2] tensor. Both are non-contiguous views when a > 1 and b > 1.
inline Tensor laid_out(const std::vector<std::int64_t>& v, const Shape& shape, DType dtype,
                       Layout layout) {
  if (layout == Layout::Contiguous) return tensor_of_ints(v, shape, dtype);
  // Runs on rank threads: no Catch2 assertion here (the harness rethrows on the main thread).
  if (shape.size() != 2) throw std::invalid_argument("laid_out: a 2-d shape is needed");
  const std::int64_t a = shape[0];
  const std::int64_t b = shape[1];
  if (layout == Layout::Transposed) {
    std::vector<std::int64_t> base(v.size());
    for (std::int64_t i = 0; i < a; ++i) {
      for (std::int64_t j = 0; j < b; ++j)
        base[static_cast<std::size_t>(j * a + i)] = v[static_cast<std::size_t>(i * b + j)];
    }
    return tensor_of_ints(base, Shape{b, a}, dtype).transpose(0, 1);
  }
  std::vector<std::int64_t> base(static_cast<std::size_t>(a * (b + 2)), 99);  // 99: padding
  for (std::int64_t i = 0; i < a; ++i) {
    for (std::int64_t j = 0; j < b; ++j)
      base[static_cast<std::size_t>(i * (b + 2) + j + 1)] = v[static_cast<std::size_t>(i * b + j)];
  }
  return tensor_of_ints(base, Shape{a, b + 2}, dtype).narrow(1, 1, b);
}

/// all_to_all_v: rows rank r sends to rank j. Nothing to itself, twice `rows` to the next rank.
inline std::int64_t v_count(int world, std::int64_t rows, int r, int j) {
  if (world == 1) return rows;
  if (j == r) return 0;
  return j == (r + 1) % world ? 2 * rows : rows;
}

/// Rank r's outputs of one call (std::nullopt where the rank gets nothing).
using Outputs = std::vector<std::optional<Tensor>>;

/// Calls c.op on `comm` with this rank's input `in`.
inline Outputs run_call(Communicator& comm, const Call& c, const Tensor& in) {
  const int r = comm.rank();
  const int world = comm.world_size();
  const CallOptions o = CallOptions().with_algorithm(c.algorithm);
  switch (c.op) {
    case Op::Broadcast:
      return {comm.broadcast(in, c.root, o)};
    case Op::BroadcastFromSender:
      return {
          comm.broadcast_from_sender(r == c.root ? std::optional<Tensor>(in) : std::nullopt, o)};
    case Op::AllReduce:
      return {comm.all_reduce(in, c.reduce_op, o)};
    case Op::Reduce:
      return {comm.reduce(in, c.root, c.reduce_op, o)};
    case Op::AllGather:
      return {comm.all_gather(in, o)};
    case Op::Gather:
      return {comm.gather(in, c.root)};
    case Op::Scatter:
      return {comm.scatter(in, c.root)};
    case Op::ReduceScatter:
      return {comm.reduce_scatter(in, c.reduce_op)};
    case Op::AllToAll:
      return {comm.all_to_all(in)};
    case Op::AllToAllV: {
      std::vector<std::int64_t> counts;
      for (int j = 0; j < world; ++j) counts.push_back(v_count(world, c.rows, r, j));
      AllToAllVResult res = comm.all_to_all_v(in, counts);
      return {res.output, Tensor::from_vector<std::int64_t>(res.recv_counts)};
    }
    case Op::SendRecv: {
      if (world == 1) return {};
      // A ring: rank r sends to r + 1 and receives from r - 1; even ranks send first.
      const int next = (r + 1) % world;
      const int prev = (r + world - 1) % world;
      Tensor got;
      if (r % 2 == 0) {
        comm.send(in, next);
        got = comm.recv(prev);
      } else {
        got = comm.recv(prev);
        comm.send(in, next);
      }
      return {got};
    }
  }
  return {};
}

/// How run_and_check issues its calls: one blocking call after another, or every call started
/// with its *_async form (all in flight), then waited for in reverse order.
enum class Mode { Blocking, Async };

/// Starts c.op on `comm` with its *_async form (send/recv: two handles, in run_call's order).
inline std::vector<Work> start_call(Communicator& comm, const Call& c, const Tensor& in) {
  const int r = comm.rank();
  const int world = comm.world_size();
  const CallOptions o = CallOptions().with_algorithm(c.algorithm);
  switch (c.op) {
    case Op::Broadcast:
      return {comm.broadcast_async(in, c.root, o)};
    case Op::BroadcastFromSender:
      return {comm.broadcast_from_sender_async(
          r == c.root ? std::optional<Tensor>(in) : std::nullopt, o)};
    case Op::AllReduce:
      return {comm.all_reduce_async(in, c.reduce_op, o)};
    case Op::Reduce:
      return {comm.reduce_async(in, c.root, c.reduce_op, o)};
    case Op::AllGather:
      return {comm.all_gather_async(in, o)};
    case Op::Gather:
      return {comm.gather_async(in, c.root)};
    case Op::Scatter:
      return {comm.scatter_async(in, c.root)};
    case Op::ReduceScatter:
      return {comm.reduce_scatter_async(in, c.reduce_op)};
    case Op::AllToAll:
      return {comm.all_to_all_async(in)};
    case Op::AllToAllV: {
      std::vector<std::int64_t> counts;
      for (int j = 0; j < world; ++j) counts.push_back(v_count(world, c.rows, r, j));
      return {comm.all_to_all_v_async(in, counts)};  // the handle copies the counts
    }
    case Op::SendRecv: {
      if (world == 1) return {};
      const int next = (r + 1) % world;
      const int prev = (r + world - 1) % world;
      if (r % 2 == 0) {
        Work sent = comm.send_async(in, next);
        return {sent, comm.recv_async(prev)};
      }
      Work got = comm.recv_async(prev);
      return {comm.send_async(in, next), got};  // [send, recv] either way
    }
  }
  return {};
}

/// The outputs of a call started with start_call (waits for its handles): what run_call returns.
inline Outputs finish_call(const Call& c, const std::vector<Work>& works) {
  if (works.empty()) return {};
  auto optional_of = [](const Tensor& t) {
    return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
  };
  switch (c.op) {
    case Op::Reduce:
    case Op::Gather:
      return {optional_of(works[0].result())};
    case Op::AllToAllV:
      return {works[0].result(), Tensor::from_vector<std::int64_t>(works[0].recv_counts())};
    case Op::SendRecv:
      works[0].wait();
      return {works[1].result()};
    default:
      return {works[0].result()};
  }
}

/// What rank r must get from call `c` in a group of `world` whose values are `values`.
inline Outputs expected_outputs(const Call& c, int world, int r, const CallValues& values) {
  const Shape shape = input_shape(c, world);
  const std::int64_t row = c.cols == 0 ? 1 : c.cols;  // elements per row
  auto in = [&](int q) -> const std::vector<std::int64_t>& {
    return values.inputs[static_cast<std::size_t>(q)];
  };
  auto with_rows = [&](std::int64_t d0) { return c.cols == 0 ? Shape{d0} : Shape{d0, c.cols}; };
  auto slice = [](const std::vector<std::int64_t>& v, std::int64_t begin, std::int64_t length) {
    return std::vector<std::int64_t>(v.begin() + begin, v.begin() + begin + length);
  };
  auto make = [&](const std::vector<std::int64_t>& v, const Shape& s) -> std::optional<Tensor> {
    return tensor_of_ints(v, s, c.dtype);
  };
  const std::int64_t block = c.rows * row;  // elements of one rank's block (splitting ops)
  switch (c.op) {
    case Op::Broadcast:
    case Op::BroadcastFromSender:
      return {make(in(c.root), shape)};
    case Op::AllReduce:
      return {make(values.reduced, shape)};
    case Op::Reduce:
      if (r != c.root) return {std::nullopt};
      return {make(values.reduced, shape)};
    case Op::AllGather:
    case Op::Gather: {
      if (c.op == Op::Gather && r != c.root) return {std::nullopt};
      std::vector<std::int64_t> all;
      for (int q = 0; q < world; ++q) {
        const std::vector<std::int64_t>& v = in(q);
        all.insert(all.end(), v.begin(), v.end());
      }
      return {make(all, with_rows(shape[0] * world))};
    }
    case Op::Scatter:
      return {make(slice(in(c.root), r * block, block), with_rows(c.rows))};
    case Op::ReduceScatter:
      return {make(slice(values.reduced, r * block, block), with_rows(c.rows))};
    case Op::AllToAll: {
      std::vector<std::int64_t> all;
      for (int q = 0; q < world; ++q) {
        const std::vector<std::int64_t> v = slice(in(q), r * block, block);
        all.insert(all.end(), v.begin(), v.end());
      }
      return {make(all, shape)};
    }
    case Op::AllToAllV: {
      std::vector<std::int64_t> all;
      std::vector<std::int64_t> counts;
      for (int q = 0; q < world; ++q) {
        std::int64_t offset = 0;  // rows rank q sends to ranks before r
        for (int j = 0; j < r; ++j) offset += v_count(world, c.rows, q, j);
        counts.push_back(v_count(world, c.rows, q, r));
        const std::vector<std::int64_t> v = slice(in(q), offset * row, counts.back() * row);
        all.insert(all.end(), v.begin(), v.end());
      }
      std::int64_t total = 0;
      for (std::int64_t k : counts) total += k;
      return {make(all, with_rows(total)), Tensor::from_vector<std::int64_t>(counts)};
    }
    case Op::SendRecv:
      if (world == 1) return {};
      return {make(in((r + world - 1) % world), shape)};
  }
  return {};
}

/// "all_gather BF16 Sum rows 3 cols 0 Transposed root 1": names a call in failure messages.
inline std::string describe(const Call& c) {
  static const char* kLayouts[] = {"contiguous", "transposed", "narrowed"};
  std::string s = std::string(op_name(c.op)) + " " + std::string(dtype_name(c.dtype));
  if (reduces(c.op)) s += " " + std::string(reduce_operation_name(c.reduce_op));
  s += ", rows " + std::to_string(c.rows) + ", cols " + std::to_string(c.cols) + ", " +
       kLayouts[static_cast<int>(c.layout)] + ", root " + std::to_string(c.root);
  if (c.algorithm != Algorithm::Auto) s += ", " + std::string(algorithm_name(c.algorithm));
  return s;
}

/// REQUIRE_THAT(actual, TensorEqual(expected)), with a fast path for large results: contiguous
/// tensors of the same dtype and shape whose bytes are equal pass without the elementwise
/// comparison (which converts both to F64 vectors).
inline void require_equal(const Tensor& actual, const Tensor& expected) {
  const bool same_bytes =
      actual.defined() && actual.is_contiguous() && expected.is_contiguous() &&
      actual.dtype() == expected.dtype() && actual.shape() == expected.shape() &&
      (actual.nbytes() == 0 ||
       std::memcmp(actual.data_ptr(), expected.data_ptr(), actual.nbytes()) == 0);
  if (!same_bytes) REQUIRE_THAT(actual, TensorEqual(expected));
}

/// One call's outcome on one rank: its outputs and its input as it is after the call.
struct CallResult {
  Outputs outputs;
  Tensor input;
};

/// Runs `calls` in order (`mode`: blocking, or all started asynchronously and then waited for
/// last to first) on a group of `world` ranks made by `make` (one thread each), then checks
/// on the main thread every rank's outputs against expected_outputs and every input against its
/// values before the call (a non-contiguous layout is also checked to really be non-contiguous).
inline void run_and_check(const GroupFactory& make, int world, const std::vector<Call>& calls,
                          CommunicatorOptions options = {}, Mode mode = Mode::Blocking) {
  auto out = run_group_with(
      make, world,
      [&](Communicator& comm) {
        std::vector<CallResult> results(calls.size());
        std::vector<std::vector<Work>> works(calls.size());
        for (std::size_t k = 0; k < calls.size(); ++k) {
          const Call& c = calls[k];
          const Shape shape = input_shape(c, world);
          const Tensor in = laid_out(input_values(c, world, comm.rank(), shape.numel()), shape,
                                     c.dtype, c.layout);
          results[k].input = in;
          if (mode == Mode::Blocking) {
            results[k].outputs = run_call(comm, c, in);
          } else {
            works[k] = start_call(comm, c, in);
          }
        }
        // Out of order: the last call started is waited for first.
        for (std::size_t k = calls.size(); mode == Mode::Async && k-- > 0;) {
          results[k].outputs = finish_call(calls[k], works[k]);
        }
        return results;
      },
      options);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const Call& c = calls[k];
    INFO("world " << world << ", call " << k << ": " << describe(c));
    const Shape shape = input_shape(c, world);
    const CallValues values = call_values(c, world, shape.numel());
    Outputs shared;  // the expected outputs when they are the same on every rank
    const bool same_everywhere = c.op == Op::Broadcast || c.op == Op::BroadcastFromSender ||
                                 c.op == Op::AllReduce || c.op == Op::AllGather;
    for (int r = 0; r < world; ++r) {
      INFO("rank " << r);
      const std::vector<CallResult>& got = out[static_cast<std::size_t>(r)].value();
      REQUIRE(got.size() == calls.size());
      if (!same_everywhere || r == 0) shared = expected_outputs(c, world, r, values);
      const Outputs& expected = shared;
      REQUIRE(got[k].outputs.size() == expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO("output " << i);
        REQUIRE(got[k].outputs[i].has_value() == expected[i].has_value());
        if (expected[i]) require_equal(*got[k].outputs[i], *expected[i]);
      }
      REQUIRE(got[k].input.is_contiguous() == (c.layout == Layout::Contiguous));
      // The input is unchanged.
      require_equal(got[k].input,
                    tensor_of_ints(values.inputs[static_cast<std::size_t>(r)], shape, c.dtype));
    }
  }
}

}  // namespace ruccl::testing::coverage
