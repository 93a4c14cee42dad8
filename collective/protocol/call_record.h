#pragma once
// CallRecord: what every rank publishes at the start of each collective (the agreement
// fingerprint plus an optional local error). Plain bytes, so a network transport can ship it.
#include <cstddef>
#include <cstdint>

#include "tensor/core/shape.h"

namespace ruccl {

/// The collectives, as they appear in fingerprints and error messages.
enum class OpKind : std::uint8_t {
  Barrier,
  Broadcast,
  BroadcastFromSender,
  AllReduce,
  Reduce,
  AllGather,
  ReduceScatter,
  Gather,
  Scatter,
  AllToAll,
  AllToAllV
};

/// "all_reduce", ...
const char* op_kind_name(OpKind kind);

/// The fingerprint of one collective call on one rank, and the rank's local error (if its own
/// arguments were invalid). Fixed size, trivially copyable.
struct CallRecord {
  static constexpr int kMaxWords = 4;
  static constexpr std::uint8_t kNone = 0xFF;
  static constexpr int kMessageBytes = 200;
  static constexpr int kLabelBytes = 48;     ///< the call's label, truncated
  static constexpr int kWordNameBytes = 24;  ///< a FingerprintWord's name, truncated
  static constexpr int kEngineBytes = 24;    ///< the engine's name, truncated

  std::uint64_t seq = 0;  ///< the call's position in this group's collective sequence
  OpKind kind = OpKind::Barrier;
  std::uint8_t dtype = kNone;      ///< DType, or kNone when this rank passes no tensor
  std::uint8_t reduce_op = kNone;  ///< ReduceOperation, or kNone
  std::uint8_t has_tensor = 0;     ///< broadcast/scatter: whether this rank passed a tensor
  std::int32_t root = -1;          ///< root rank, or -1
  std::int32_t ndim = -1;          ///< -1: no shape to agree on
  std::int64_t dims[Shape::kMaxDims] = {};
  std::uint8_t algorithm = 0;   ///< the resolved Algorithm (agreed: ranks must match)
  std::int32_t tree_arity = 0;  ///< the resolved tree arity (0 unless Tree)
  std::int32_t num_words = 0;   ///< CallOptions words
  std::int64_t words[kMaxWords] = {};
  char word_names[kMaxWords][kWordNameBytes] = {};  ///< NUL-terminated, for messages
  char label[kLabelBytes] = {};  ///< the call's label (CallOptions::label or the op's name)
  /// The engine that runs the call on this rank (CollectiveEngine::name(): "algorithms", "mpi",
  /// "algorithms on cuda", "nccl"): ranks on different engines can never exchange a message.
  char engine[kEngineBytes] = {};
  std::uint8_t error_kind = kNone;  ///< CollectiveErrorKind of this rank's local error, or kNone
  char error_message[kMessageBytes] = {};

  /// Copies `text` into a fixed field (truncated, NUL-terminated).
  template <std::size_t N>
  static void set_text(char (&field)[N], const char* text) {
    std::size_t i = 0;
    for (; text != nullptr && text[i] != '\0' && i + 1 < N; ++i) field[i] = text[i];
    field[i] = '\0';
  }

  /// The shape recorded by set_shape (ndim >= 0).
  Shape shape() const;
  void set_shape(const Shape& shape);
};

}  // namespace ruccl
