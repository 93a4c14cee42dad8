#include "collective/core/communicator_core.h"
#include "collective/algorithms/selection.h"

#include <cstring>

namespace ruccl {

CommunicatorCore::CommunicatorCore(std::unique_ptr<Transport> transport, Device device,
                                   CommunicatorOptions options, const EngineFactory& engine,
                                   GroupOf group)
    : group_(std::move(group)),
      turns_(group_.parent != nullptr ? group_.parent->turns_ : std::make_shared<RankTurns>()),
      transport_(std::move(transport)),
      engine_factory_(engine),
      engine_(engine(*transport_, device, options)),
      rank_(transport_->rank()),
      world_(transport_->world_size()),
      device_(device),
      options_(options),
      p2p_sent_(static_cast<std::size_t>(world_), 0),
      p2p_received_(static_cast<std::size_t>(world_), 0),
      records_(static_cast<std::size_t>(world_)),
      engine_name_(engine_->name()),
      observer_(*transport_, engine_name_, options_) {
  if (options_.require_bit_identical && !engine_->bit_identical()) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("Communicator on ", options_.rank_names.name(rank_),
                              ": expected an engine with bit-identical reductions "
                              "(CommunicatorOptions::require_bit_identical), got the ",
                              engine_->name(), " engine, whose reduction order is its own"));
  }
}

void CommunicatorCore::throw_if_finished(const char* label) const {
  if (!transport_->failed()) return;
  const CollectiveError first = transport_->failure();
  throw CollectiveError(
      CollectiveErrorKind::Aborted,
      str(label, " on ", options_.rank_names.name(rank_),
          ": the communicator is finished after an earlier error: ", first.what()),
      first.ranks());
}

CallScope CommunicatorCore::begin(OpKind kind, const CallOptions& call, Issued issued) {
  const char* label = call.label != nullptr ? call.label : op_kind_name(kind);
  throw_if_finished(label);
  ++seq_;
  CallScope scope{CallRecord{}, label,
                  Deadline::after(call.timeout.value_or(options_.timeout), label, seq_, issued),
                  observer_.start()};
  CallRecord& rec = scope.record;
  rec.seq = seq_;
  rec.kind = kind;
  CallRecord::set_text(rec.label, label);
  CallRecord::set_text(rec.engine, engine_name_.c_str());
  // A fold window is agreed as two more words.
  const bool windowed = call.fold_window.total != 0 || call.fold_window.offset != 0;
  const int num_words = call.num_words + (windowed ? 2 : 0);
  if (num_words > CallOptions::kMaxWords || call.num_words < 0) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected at most ", CallOptions::kMaxWords, " CallOptions words, got ",
               call.num_words, windowed ? " and a fold window (2 words)" : ""));
  } else {
    rec.num_words = num_words;
    for (int w = 0; w < call.num_words; ++w) {
      rec.words[w] = call.words[static_cast<std::size_t>(w)].value;
      CallRecord::set_text(rec.word_names[w], call.words[static_cast<std::size_t>(w)].name);
    }
    if (windowed) {
      rec.words[call.num_words] = call.fold_window.offset;
      CallRecord::set_text(rec.word_names[call.num_words], "fold window offset");
      rec.words[call.num_words + 1] = call.fold_window.total;
      CallRecord::set_text(rec.word_names[call.num_words + 1], "fold window total");
    }
  }
  if (windowed && kind != OpKind::AllReduce && kind != OpKind::Reduce) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a fold window on all_reduce or reduce only, got one on ",
               op_kind_name(kind)));
  }
  if (call.timeout.has_value() && call.timeout->count() <= 0) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a positive timeout, got ", call.timeout->count(), " ms"));
  }
  return scope;
}

void CommunicatorCore::describe_fold_window(CallScope& scope, const CallOptions& call,
                                            std::int64_t numel) {
  const FoldWindow& w = call.fold_window;
  if (w.total == 0 && w.offset == 0) return;
  if (w.offset < 0 || w.total < 0 || w.offset > w.total || numel > w.total - w.offset) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a fold window that holds the tensor's ", numel,
               " elements (0 <= offset, offset + numel <= total), got offset ", w.offset,
               " and total ", w.total));
    return;
  }
  scope.window = w;
}

void CommunicatorCore::reject(CallScope& scope, CollectiveErrorKind kind,
                              const std::string& message) {
  set_local_error(scope.record, kind, str(options_.rank_names.name(rank_), ": ", message));
}

void CommunicatorCore::describe_tensor(CallScope& scope, const Tensor& t, const char* what) {
  CallRecord& rec = scope.record;
  if (!t.defined()) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a defined ", what, " tensor, got an undefined one"));
    return;
  }
  rec.has_tensor = 1;
  rec.dtype = static_cast<std::uint8_t>(t.dtype());
  rec.set_shape(t.shape());
  if (!engine_->supports(rec.kind, t.dtype(), t.device())) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a ", what, " tensor the ", engine_->name(), " engine can run ",
               op_kind_name(rec.kind), " on, got a ", t.dtype(), " tensor on ",
               t.device().to_string()));
  }
  if (t.device() != device_) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected the ", what, " tensor on ", device_.to_string(),
               " (this rank's device), got ", t.device().to_string()));
  }
  if (rec.reduce_op != CallRecord::kNone && is_valid(static_cast<ReduceOperation>(rec.reduce_op))) {
    const auto op = static_cast<ReduceOperation>(rec.reduce_op);
    if (!reduce_operation_supports(op, t.dtype())) {
      reject(
          scope, CollectiveErrorKind::InvalidArgument,
          str("reduce operation ", reduce_operation_name(op), " is not valid for dtype ", t.dtype(),
              op == ReduceOperation::Mean ? " (Mean: floating dtypes only)"
              : t.dtype() == DType::Bool  ? " (Bool tensors cannot be reduced)"
                                          : " (bitwise operations: integer dtypes only)"));
    }
  }
}

void CommunicatorCore::describe_reduce_op(CallScope& scope, ReduceOperation op) {
  scope.record.reduce_op = static_cast<std::uint8_t>(op);
  if (!is_valid(op)) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a ReduceOperation (Sum, Mean, Prod, Min, Max, BitAnd, BitOr, BitXor), got "
               "ReduceOperation(",
               static_cast<int>(op), ")"));
  }
}

void CommunicatorCore::describe_root(CallScope& scope, int root) {
  scope.record.root = root;
  if (root < 0 || root >= world_) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected a root in [0, ", world_, "), got ", root));
  }
}

Algorithm CommunicatorCore::choose_algorithm(CallScope& scope, const CallOptions& call,
                                             Algorithm group_default,
                                             std::optional<std::size_t> bytes) {
  Algorithm a = call.algorithm != Algorithm::Auto ? call.algorithm : group_default;
  if (algorithm_name(a) == nullptr) {
    reject(scope, CollectiveErrorKind::InvalidArgument, invalid_algorithm_message(a));
    scope.record.algorithm = static_cast<std::uint8_t>(a);
    return Algorithm::Direct;  // never runs: agreement raises the rejection on every rank
  }
  if (!algorithm_runs(scope.record.kind, a)) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected an algorithm that runs ", op_kind_name(scope.record.kind), ", got ",
               algorithm_name(a)));
  } else if (!folds_linearly(a) && options_.determinism != Determinism::PerAlgorithm) {
    reject(scope, CollectiveErrorKind::InvalidArgument,
           str("expected Determinism::PerAlgorithm for ", algorithm_name(a),
               " (its tree fold may differ in the last bits from the other algorithms), got "
               "Determinism::AlgorithmIndependent"));
  }
  if (a == Algorithm::Auto && bytes.has_value()) {
    a = auto_algorithm(scope.record.kind, *bytes, transport_->traits().link, options_,
                       transport_->world_size());
  }
  int arity = 0;
  if (a == Algorithm::Tree) {
    arity = call.tree_arity != 0 ? call.tree_arity : options_.tree_arity;
    if (arity < 2) {
      reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected a tree arity >= 2, got ", arity));
    }
  }
  scope.record.algorithm = static_cast<std::uint8_t>(a);
  scope.record.tree_arity = arity;
  return a;
}

void CommunicatorCore::start_agree(CallScope& scope) {
  try {
    transport_->start_agree(scope.record, scope.deadline);
  } catch (...) {
    fail_group_from_current_exception(scope);
    throw;
  }
}

void CommunicatorCore::finish_agree(CallScope& scope) {
  try {
    transport_->finish_agree(scope.record, records_, scope.deadline);
  } catch (...) {
    fail_group_from_current_exception(scope);
    throw;
  }
  if (auto error = check_agreement(records_, options_.rank_names)) {
    if (!group_.label.empty()) {
      *error =
          CollectiveError(error->kind(), str(group_.label, ": ", error->what()), error->ranks());
    }
    transport_->fail(*error);
    throw *error;
  }
}

const std::vector<CallRecord>& CommunicatorCore::records() const { return records_; }

Deadline CommunicatorCore::p2p_deadline(const CallOptions& call, const char* label,
                                        Issued issued) const {
  return Deadline::after(call.timeout.value_or(options_.timeout), label, 0, issued);
}

std::uint64_t CommunicatorCore::next_p2p_tag(int peer, bool sending) {
  auto& counter = sending ? p2p_sent_ : p2p_received_;
  const std::uint64_t k = ++counter[static_cast<std::size_t>(peer)];
  return (std::uint64_t{1} << 63) | (k << 1);
}

void CommunicatorCore::fail_group_from_current_exception(const char* label) noexcept {
  transport_->fail(current_exception_as_collective_error(
      str(label, ": ", options_.rank_names.name(rank_)), rank_));
  // The transport withdrew this rank's sends already if it threw; this covers an exception of the
  // rank's own code, for buffers that outlive the call (the caller's tensors peers read in place).
  transport_->withdraw_sends();
}

void CommunicatorCore::fail_group_from_current_exception(const CallScope& scope) noexcept {
  fail_group_from_current_exception(scope.label);
}

}  // namespace ruccl
