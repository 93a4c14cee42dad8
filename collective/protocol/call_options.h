#pragma once
// Options of one collective call, and of a communicator.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collective/common/rank_names.h"
#include "collective/protocol/call_record.h"

namespace ruccl {

/// Which algorithm a collective uses. Auto picks by message size and world size
/// (docs/collectives.md). Every algorithm but HalvingDoubling folds in one canonical order, so they
/// give bit-identical results; HalvingDoubling folds in a tree (Determinism::PerAlgorithm only).
/// RecursiveDoubling: ceil(log2 W) rounds for all_reduce, reduce, broadcast and all_gather;
/// HalvingDoubling: Rabenseifner's all_reduce (and reduce), bandwidth-optimal in 2 log2 W steps.
enum class Algorithm : unsigned char {
  Auto,
  Direct,
  Ring,
  Tree,
  Centralized,
  RecursiveDoubling,
  HalvingDoubling
};

/// What "deterministic" promises for reductions (CommunicatorOptions::determinism). Both modes
/// give bit-identical results on every rank and every run.
enum class Determinism : unsigned char {
  /// Also the same bits whatever the algorithm (the canonical linear fold): Auto never picks an
  /// algorithm with another fold, and asking for one (HalvingDoubling) is InvalidArgument.
  AlgorithmIndependent,
  /// The bits may differ in the last place between algorithms (HalvingDoubling's tree fold), so
  /// Auto may pick the fastest.
  PerAlgorithm
};

/// "auto", "direct", "ring", "tree", "centralized", "recursive_doubling", "halving_doubling";
/// nullptr for a value that is not an Algorithm (such as Algorithm(9)), which every call rejects
/// as InvalidArgument.
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

/// Where the buffer of an all_reduce or reduce sits in a larger reduction whose fold order it
/// follows (CallOptions::with_fold_window): its elements are elements [offset, offset + numel) of
/// a reduction of `total` elements, and each folds over the ranks in the order of its chunk of
/// that reduction (docs/collectives.md, "Reduction order"). Reducing the pieces of a buffer with
/// their windows gives the whole buffer's result bit for bit. total == 0: no window.
struct FoldWindow {
  std::int64_t offset = 0;
  std::int64_t total = 0;
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
  /// Algorithm of this call (all_reduce, reduce, broadcast; all_gather: Direct or
  /// RecursiveDoubling, others ignored there); Auto: the communicator's option.
  /// Every rank must choose the same (checked: ArgumentMismatch).
  Algorithm algorithm = Algorithm::Auto;
  /// Arity of a Tree algorithm for this call; 0: CommunicatorOptions::tree_arity.
  int tree_arity = 0;
  /// The fold window of an all_reduce or reduce (see FoldWindow); none by default.
  FoldWindow fold_window;

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
  /// Folds this all_reduce's or reduce's elements as elements [offset, offset + numel) of a
  /// reduction of `total` elements. Agreed like two words (it takes two of the kMaxWords); honoured
  /// by the algorithms engine on host tensors, ignored by engines with a reduction order of their
  /// own (MPI, NCCL, the CUDA device engine). InvalidArgument for another collective, a negative
  /// offset or a window that does not hold the tensor.
  CallOptions& with_fold_window(std::int64_t offset, std::int64_t total) {
    fold_window = FoldWindow{offset, total};
    return *this;
  }
  /// Sets the label used in error messages.
  CallOptions& with_label(const char* name) {
    label = name;
    return *this;
  }
};

class EnvReader;

/// The deadline every communicator starts with (CommunicatorOptions::timeout and
/// CollectiveConfig::timeout when the user sets none): RUCCL_TIMEOUT_MS (a positive number of
/// milliseconds) when that variable is set, else 300 s. The environment is read once per process,
/// at the first call; a malformed value throws CollectiveError(InvalidConfig)
/// "RUCCL_TIMEOUT_MS: expected a positive number of milliseconds, got "VALUE"" at every call (so
/// at every default-constructed CommunicatorOptions).
std::chrono::milliseconds default_timeout();
/// default_timeout() read from `env` now (uncached; what the first call of default_timeout() does
/// with the process environment).
std::chrono::milliseconds default_timeout_from(const EnvReader& env);

/// Options of a communicator (all ranks of a group must use the same).
struct CommunicatorOptions {
  /// Deadline of every blocking call unless CallOptions::timeout overrides it. Default:
  /// default_timeout() (RUCCL_TIMEOUT_MS, else 300 s).
  std::chrono::milliseconds timeout{default_timeout()};
  /// Algorithm of all_reduce, reduce and broadcast (Auto: by size).
  Algorithm all_reduce_algorithm = Algorithm::Auto;
  Algorithm reduce_algorithm = Algorithm::Auto;
  Algorithm broadcast_algorithm = Algorithm::Auto;
  /// Arity of Algorithm::Tree (>= 2).
  int tree_arity = 2;
  /// Auto on a transport without zero copy (network) uses Ring at or above this many bytes and
  /// Direct below; in process Auto always uses Direct. From world 3 up all_reduce and reduce use
  /// ring_threshold_bytes_from_3 instead (collective/algorithms/selection.h applies them; how the
  /// defaults were measured: docs/performance-history.md).
  std::size_t ring_threshold_bytes = std::size_t{2} << 20;
  std::size_t ring_threshold_bytes_from_3 = std::size_t{4} << 20;
  /// The same thresholds where every pair of ranks exchanges messages through shared memory
  /// (the process transport on one host), where a copy is a memcpy, not a trip through the kernel.
  std::size_t shared_memory_ring_threshold_bytes = std::size_t{16} << 10;
  std::size_t shared_memory_ring_threshold_bytes_from_3 = std::size_t{64} << 10;
  /// Direct all-reduce: at or below this many bytes every rank folds every input (one exchange);
  /// above, a pairwise reduce-scatter then all-gather (two exchanges, less work per rank).
  std::size_t direct_fold_all_bytes = std::size_t{64} << 10;
  /// The ring algorithms (all-reduce, reduce, broadcast) move each chunk in messages of at most
  /// this many bytes, so that a rank sends segment k + 1 while its neighbour reduces segment k
  /// (the reduction order is unchanged: results stay bit-identical). Must be > 0 and a multiple
  /// of kPieceAlign (64), so a segment never splits an element. Over a copying transport the
  /// ring caps it further (collective/algorithms/selection.h).
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
  /// Whether reductions must also be bit-identical across algorithms (the default, the canonical
  /// order) or only on every rank and run (lets Auto pick HalvingDoubling). Every rank of a group
  /// must use the same (a different choice shows up as an algorithm mismatch).
  Determinism determinism = Determinism::AlgorithmIndependent;
};

/// Checks options a group is made with; throws CollectiveError(InvalidConfig) "<who>: expected X,
/// got Y" naming the field (tree_arity < 2, timeout <= 0, an Algorithm that is no enumerator or
/// cannot run the collective it is set for, HalvingDoubling without Determinism::PerAlgorithm, a
/// Determinism that is no enumerator,
/// segment_bytes 0 or not a multiple of 64). Every group factory calls it (InProcessGroup::create,
/// TCP). Rank names and devices are the factory's to check (it knows the world size).
void validate_communicator_options(const CommunicatorOptions& options, const std::string& who);

}  // namespace ruccl
