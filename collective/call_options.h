#pragma once
// Options of one collective call, and of a communicator.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collective/rank_names.h"
#include "collective/transport/call_record.h"

namespace ruccl {

/// Which algorithm a collective uses. Auto picks by message size (docs/collectives.md).
/// Every algorithm gives bit-identical results (one reduction order for all of them).
enum class Algorithm : unsigned char { Auto, Direct, Ring, Tree, Centralized };

/// "auto", "direct", "ring", "tree", "centralized"; nullptr for a value that is not an Algorithm
/// (such as Algorithm(9)), which every call rejects as InvalidArgument.
const char* algorithm_name(Algorithm algorithm);
/// "expected an Algorithm (Auto, ...), got Algorithm(9)": the message for such a value.
std::string invalid_algorithm_message(Algorithm algorithm);

/// One named word that higher layers add to the call's agreement fingerprint, for arguments the
/// collective layer does not know (the axis of all_gather_dim, "input requires grad", ...). Every
/// rank must pass the same words in the same order; a different value raises
/// CollectiveErrorKind::ArgumentMismatch on every rank, naming the word.
struct FingerprintWord {
  const char* name = "";  ///< a string literal (kept by pointer), shown in error messages
  std::int64_t value = 0;
};

/// Per-call options, accepted by every Communicator operation.
///
///   comm.all_gather(t, CallOptions().with_timeout(std::chrono::seconds(5))
///                                   .with_word("axis", 1).with_word("requires_grad", 1));
struct CallOptions {
  static constexpr int kMaxWords = 4;

  /// Overrides the communicator's default deadline (CommunicatorOptions::timeout) for this call.
  std::optional<std::chrono::milliseconds> timeout;
  /// Extra fingerprint words (first `num_words` are used).
  std::array<FingerprintWord, kMaxWords> words{};
  int num_words = 0;
  /// Name used in error messages instead of the collective's own (e.g. "all_gather_dim").
  const char* label = nullptr;
  /// Algorithm of this call (all_reduce, reduce, broadcast); Auto: the communicator's option.
  /// Every rank must choose the same (checked: ArgumentMismatch).
  Algorithm algorithm = Algorithm::Auto;
  /// Arity of a Tree algorithm for this call; 0: CommunicatorOptions::tree_arity.
  int tree_arity = 0;

  /// Sets the deadline of this call.
  CallOptions& with_timeout(std::chrono::milliseconds t) {
    timeout = t;
    return *this;
  }
  /// Adds a fingerprint word; at most kMaxWords (more is an InvalidArgument error at the call).
  CallOptions& with_word(const char* name, std::int64_t value) {
    if (num_words < kMaxWords) words[static_cast<std::size_t>(num_words)] = {name, value};
    ++num_words;
    return *this;
  }
  /// Chooses the algorithm (and tree arity) of this call.
  CallOptions& with_algorithm(Algorithm a, int arity = 0) {
    algorithm = a;
    tree_arity = arity;
    return *this;
  }
  /// Sets the label used in error messages.
  CallOptions& with_label(const char* name) {
    label = name;
    return *this;
  }
};

/// Options of a communicator (all ranks of a group must use the same).
struct CommunicatorOptions {
  /// Deadline of every blocking call unless CallOptions::timeout overrides it.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  /// Algorithm of all_reduce, reduce and broadcast (Auto: by size).
  Algorithm all_reduce_algorithm = Algorithm::Auto;
  Algorithm reduce_algorithm = Algorithm::Auto;
  Algorithm broadcast_algorithm = Algorithm::Auto;
  /// Arity of Algorithm::Tree (>= 2).
  int tree_arity = 2;
  /// Auto on a transport without zero copy (network) uses Ring at or above this many bytes and
  /// Direct below; in process Auto always uses Direct. From world 3 up all_reduce and reduce use
  /// ring_threshold_bytes_from_3 instead. Measured over TCP on 2 cores (docs/performance.md,
  /// "Algorithm::Auto over TCP"): with 2 processes Direct wins up to 1 MiB, Ring from 2 MiB; with
  /// 4 processes Direct up to 2 MiB, Ring from 4 MiB.
  std::size_t ring_threshold_bytes = std::size_t{2} << 20;
  std::size_t ring_threshold_bytes_from_3 = std::size_t{4} << 20;
  /// The same thresholds where every pair of ranks exchanges messages through shared memory
  /// (Transport::shared_memory: the TCP transport on one host), where a copy is a memcpy, not a
  /// trip through the kernel. Measured on 2 cores (docs/performance.md, "Algorithm::Auto
  /// through shared memory"): Ring wins from 16 KiB with 2 processes, from 64 KiB with 4.
  std::size_t shared_memory_ring_threshold_bytes = std::size_t{16} << 10;
  std::size_t shared_memory_ring_threshold_bytes_from_3 = std::size_t{64} << 10;
  /// Direct all-reduce: at or below this many bytes every rank folds every input (one exchange);
  /// above, a pairwise reduce-scatter then all-gather (two exchanges, less work per rank).
  std::size_t direct_fold_all_bytes = std::size_t{64} << 10;
  /// The ring algorithms (all-reduce, reduce, broadcast) move each chunk in messages of at most
  /// this many bytes, so that a rank sends segment k + 1 while its neighbour reduces segment k
  /// (the reduction order is unchanged: results stay bit-identical). Must be > 0 and a multiple
  /// of kPieceAlign (64), so a segment never splits an element. The default is measured
  /// (docs/performance.md, "Ring segments").
  static constexpr std::size_t kDefaultSegmentBytes = std::size_t{4} << 20;
  std::size_t segment_bytes = kDefaultSegmentBytes;
  /// How error messages name the ranks ("rank 2" by default; the registered session API names
  /// its PeerIds). Empty ids, or one per rank.
  RankNames rank_names;
  /// Reductions must give bit-identical results on every rank and every run (the canonical order
  /// of collective/algorithms/algorithm.h). Our algorithms always do; an engine whose native
  /// reductions do not (MPI's order is the implementation's) runs ours instead; a group whose
  /// engine cannot is refused with InvalidConfig.
  bool require_bit_identical = false;
};

/// Checks options a group is made with; throws CollectiveError(InvalidConfig) "<who>: expected X,
/// got Y" naming the field (tree_arity < 2, timeout <= 0, an Algorithm that is no enumerator,
/// segment_bytes 0 or not a multiple of 64). Every group factory calls it (InProcessGroup::create,
/// TCP). Rank names and devices are the factory's to check (it knows the world size).
void validate_communicator_options(const CommunicatorOptions& options, const std::string& who);

/// What Algorithm::Auto means for a collective of `kind` (AllReduce, Reduce or Broadcast) moving
/// `bytes` per rank (all_reduce / reduce: the input in its accumulation dtype; broadcast: root's
/// tensor) over a transport that reads in place (`zero_copy`) or copies. The one place the rule
/// lives: in process always Direct (every rank reads its peers' memory in place, the fewest bytes
/// moved); a copying transport Direct below options.ring_threshold_bytes and Ring at or above
/// (bandwidth-optimal, pipelined in segment_bytes); an all_reduce or reduce of `world` >= 3
/// ranks uses options.ring_threshold_bytes_from_3 instead; a transport whose every pair shares
/// memory (`shared_memory`) the shared_memory_ thresholds. Never returns Auto.
Algorithm auto_algorithm(OpKind kind, std::size_t bytes, bool zero_copy,
                         const CommunicatorOptions& options, int world = 2,
                         bool shared_memory = false);

/// Over a copying transport (TCP) the ring all-reduce and reduce move their chunks in segments of
/// at most this many bytes (one TCP frame): measured over TCP with 3 and 4 processes on 2 cores,
/// 256 KiB segments beat 4 MiB ones by 1.2-1.7x at 16 and 64 MiB (the partial a rank sends on was
/// folded a moment ago and is still in cache); with 2 processes, once the ring ran in segment
/// order and waits marked SO_RCVLOWAT, 1.45-1.74x at 2-64 MiB (session 16; earlier sessions had
/// 2 processes keep 4 MiB) (docs/performance.md, "TCP between processes").
inline constexpr std::size_t kCopyingRingSegmentBytes = std::size_t{256} << 10;
/// The cap instead when every pair of the group shares memory: the fold reads a segment straight
/// out of the ring slot, and a 64 KiB one is still in cache when it is folded and sent on;
/// measured with 3 and 4 processes on 2 cores, 1.01-1.71x faster than 256 KiB at 1-64 MiB
/// (medians of 8-10 alternated runs; 32 KiB no faster; in segment order, ring.cpp, 1.20-1.37x
/// with 4 processes), while 2 processes keep 4 MiB
/// (docs/performance.md, "2026-12-03, session 15").
inline constexpr std::size_t kSharedMemoryRingSegmentBytes = std::size_t{64} << 10;
/// The segment size of a ring all-reduce or reduce: options.segment_bytes, capped over a copying
/// transport at kCopyingRingSegmentBytes, or, from world 3 up, at kSharedMemoryRingSegmentBytes
/// when every pair shares memory (`shared_memory`; 2 ranks keep options.segment_bytes there).
/// Depends only on what every rank of a group shares (its options, its world size, its kind of
/// transport; the transport agrees `shared_memory` through the store), so every rank cuts the
/// same segments.
std::size_t ring_segment_bytes(const CommunicatorOptions& options, int world, bool zero_copy,
                               bool shared_memory);

}  // namespace ruccl
