#pragma once
// CommunicatorCore: the state behind a Communicator handle (transport, engine, options, call
// counter) and the one code path every collective goes through: describe the call, agree, hand it
// to the engine (collective/engine/collective_engine.h), and turn any failure into a group-wide
// CollectiveError.
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "collective/algorithms/algorithm.h"
#include "collective/core/progress_thread.h"
#include "collective/core/rank_turns.h"
#include "collective/core/work_state.h"
#include "collective/engine/collective_engine.h"
#include "collective/protocol/agreement.h"
#include "collective/protocol/call_options.h"
#include "collective/trace/call_observer.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// One collective call in progress on this rank.
struct CallScope {
  CallRecord record;
  const char* label;
  Deadline deadline;
  std::int64_t start_ns = 0;  ///< CallObserver::start() when the call began
  FoldWindow window{};        ///< CallOptions::fold_window, once describe_fold_window checked it
};

class CommunicatorCore;

/// What a group split from a parent (Communicator::split) keeps of it.
struct GroupOf {
  /// The parent's core: kept alive (a view's messages travel on its transport); its turns are
  /// shared (core/rank_turns.h).
  std::shared_ptr<CommunicatorCore> parent;
  /// "group tp of rank(s) [0, 1]": prefixed to the group's agreement errors.
  std::string label;
};

class CommunicatorCore {
 public:
  /// `engine` makes the group's engine over `transport` (make_algorithm_engine by default).
  /// `group`: the parent of a group made by split (empty for a group a factory made).
  CommunicatorCore(std::unique_ptr<Transport> transport, Device device, CommunicatorOptions options,
                   const EngineFactory& engine, GroupOf group = {});

  Transport& transport() { return *transport_; }
  CollectiveEngine& engine() { return *engine_; }
  /// Statistics, trace and RUCCL_DEBUG log of this rank's calls.
  CallObserver& observer() { return observer_; }
  int rank() const { return rank_; }
  int world_size() const { return world_; }
  Device device() const { return device_; }
  const CommunicatorOptions& options() const { return options_; }
  /// The factory that made this group's engine (a split group's default).
  const EngineFactory& engine_factory() const { return engine_factory_; }
  /// The parent of a split group (null otherwise) and the group's label ("" otherwise).
  const std::shared_ptr<CommunicatorCore>& parent() const { return group_.parent; }
  const std::string& group_label() const { return group_.label; }
  /// The turns of this rank's calls, shared with the parent and every group of the family.
  RankTurns& turns() { return *turns_; }
  /// Counts this group's splits (1, 2, ...): every rank makes them in the same order.
  std::uint64_t next_split() { return ++splits_; }

  /// When the caller issued a call: its deadline counts from here (an asynchronous call may wait
  /// in the progress thread's queue first).
  using Issued = Deadline::Clock::time_point;

  /// Starts collective `kind` issued at `issued`: throws Aborted when the group is already
  /// finished; fills the record's seq, kind and words (an invalid word count becomes a local
  /// error).
  CallScope begin(OpKind kind, const CallOptions& call, Issued issued = Deadline::Clock::now());
  /// Checks the call's fold window against the tensor's `numel` (all_reduce and reduce; begin()
  /// rejects one on any other collective) and hands it to the engine.
  void describe_fold_window(CallScope& scope, const CallOptions& call, std::int64_t numel);

  /// The one path of every call, blocking or not: `body(issued)` runs the call (begin, describe,
  /// execute) and returns its result. start() queues it on the progress thread behind every call
  /// this rank started before and returns its state at once; `inputs` stay alive in the state.
  template <typename Body>
  std::shared_ptr<WorkState> start(std::vector<Tensor> inputs, const CallOptions& call,
                                   const char* default_label, Body body) {
    const Issued issued = Deadline::Clock::now();
    const std::uint32_t ticket = turns_->take();  // program order, across this rank's groups
    try {
      auto state = std::make_shared<WorkState>();
      state->deadline =
          Deadline::after(call.timeout.value_or(options_.timeout),
                          call.label != nullptr ? call.label : default_label, 0, issued);
      state->fail_group = [this](const CollectiveError& error) { transport_->fail(error); };
      state->inputs = std::move(inputs);
      std::function<void()> enter = engine_->caller_context();
      progress_.submit([state, issued, turns = turns_, ticket, enter = std::move(enter),
                        body = std::move(body)]() mutable noexcept {
        std::exception_ptr error;
        {
          const RankTurn turn(*turns, ticket);
          try {
            if (enter) enter();
            state->store(body(issued));
          } catch (...) {
            error = std::current_exception();
          }
        }
        state->complete(std::move(error));
      });
      return state;
    } catch (...) {
      // Nothing was queued (no memory, no progress thread): the ticket is still served in its
      // turn, or every later call of this rank would wait for it forever.
      { const RankTurn turn(*turns_, ticket); }
      throw;
    }
  }
  /// The blocking form: start, then wait. With nothing queued, the call runs on the caller's
  /// thread (no hand-off: the blocking path costs what it did before there were handles);
  /// behind queued calls it goes through the progress thread, keeping program order.
  template <typename Body>
  auto run(const CallOptions& call, const char* default_label, Body&& body) {
    if (progress_.idle()) {
      const Issued issued = Deadline::Clock::now();
      const RankTurn turn(*turns_, turns_->take());
      return body(issued);
    }
    using Result = decltype(body(Deadline::Clock::now()));
    const std::shared_ptr<WorkState> state =
        start({}, call, default_label, [&body](Issued issued) { return body(issued); });
    try {
      state->wait();
    } catch (...) {
      // The queued body refers to the caller's arguments: never return before it has run (the
      // group is failed by now, so it ends promptly).
      state->wait_until_completed();
      throw;
    }
    return take<Result>(*state);
  }
  /// The progress thread (threads per rank: docs/collectives.md).
  const ProgressThread& progress() const { return progress_; }
  /// Records a local error of this rank's arguments (the first one wins).
  void reject(CallScope& scope, CollectiveErrorKind kind, const std::string& message);
  /// Validates a tensor argument (defined, on this rank's device, dtype allowed); records it in
  /// the scope (dtype, shape, has_tensor). `reducing`: also check the op is valid for the dtype.
  void describe_tensor(CallScope& scope, const Tensor& t, const char* what);
  /// Checks a root rank argument and records it.
  void describe_root(CallScope& scope, int root);
  /// Checks that `op` is a ReduceOperation and records it (call before describe_tensor, which
  /// checks it against the dtype).
  void describe_reduce_op(CallScope& scope, ReduceOperation op);
  /// Resolves the call's algorithm (CallOptions, then `group_default`, then Auto by size and
  /// transport: auto_algorithm) and records it for agreement. Returns it; the arity is in
  /// scope.record. `bytes` nullopt (a broadcast, whose size only root knows before agreement):
  /// Auto stays Auto in the record and the engine resolves it from root's record.
  Algorithm choose_algorithm(CallScope& scope, const CallOptions& call, Algorithm group_default,
                             std::optional<std::size_t> bytes);
  /// Publishes the record, waits for every rank's and checks agreement; throws on mismatch (on
  /// every rank) or on a local error of any rank.
  void agree(CallScope& scope) {
    start_agree(scope);
    finish_agree(scope);
  }
  /// agree() in two halves (Transport::start_agree / finish_agree): an engine may post its first
  /// sends in between (CollectiveEngine::sends_with_agreement).
  void start_agree(CallScope& scope);
  void finish_agree(CallScope& scope);
  /// Every rank's record of the last agreed call (index = rank).
  const std::vector<CallRecord>& records() const;

  /// The one path of every collective: agrees on the call, then returns body(call) with the
  /// agreed EngineCall (body calls the engine). When the engine sends with the agreement and this
  /// rank's arguments are valid, the agreement is only started and the engine completes it
  /// (EngineCall::agreed) after its first sends, or execute does after body. Any exception fails
  /// the group and, before it propagates, waits until no peer reads a buffer this rank lent
  /// (Transport::withdraw_sends).
  template <typename Body>
  auto execute(CallScope& scope, Body&& body) {
    try {
      auto result = execute_agreed(scope, body);
      observer_.finish(scope.record, records_, scope.start_ns, true);
      return result;
    } catch (...) {
      observer_.warn_current_exception();
      observer_.finish(scope.record, {}, scope.start_ns, false);
      throw;
    }
  }

  /// Point-to-point deadline and tag bookkeeping.
  Deadline p2p_deadline(const CallOptions& call, const char* label,
                        Issued issued = Deadline::Clock::now()) const;
  std::uint64_t next_p2p_tag(int peer, bool sending);

  /// Throws Aborted "the communicator is finished" when the group has failed.
  void throw_if_finished(const char* label) const;
  /// Fails the group with the exception in flight, then withdraws this rank's sends (so the
  /// caller may release its buffers). Call from this rank's own thread, inside a catch block.
  void fail_group_from_current_exception(const CallScope& scope) noexcept;
  void fail_group_from_current_exception(const char* label) noexcept;

 private:
  template <typename Result>
  static Result take(WorkState& state) {
    if constexpr (std::is_same_v<Result, std::optional<Tensor>>) {
      return state.result.defined() ? std::optional<Tensor>(state.result) : std::nullopt;
    } else if constexpr (std::is_same_v<Result, AllToAllVResult>) {
      return AllToAllVResult{state.result, state.recv_counts};
    } else if constexpr (std::is_same_v<Result, Tensor>) {
      return state.result;
    } else {
      return Result{};
    }
  }

  template <typename Body>
  auto execute_agreed(CallScope& scope, Body&& body) {
    const bool early = scope.record.error_kind == CallRecord::kNone && world_ > 1 &&
                       transport_->carries_sends_with_agreement() &&
                       engine_->sends_with_agreement(
                           scope.record.kind, static_cast<Algorithm>(scope.record.algorithm));
    if (!early) {
      agree(scope);
      return run_engine(scope, nullptr, body);
    }
    start_agree(scope);
    bool agreed = false;
    auto finish = [&] {
      if (agreed) return;
      agreed = true;
      finish_agree(scope);
    };
    const FunctionRef<void()> pending(finish);
    return run_engine(scope, &pending, [&](const EngineCall& call) {
      auto result = body(call);
      finish();
      return result;
    });
  }

  template <typename Body>
  auto run_engine(CallScope& scope, const FunctionRef<void()>* pending, Body&& body) {
    try {
      const EngineCall call{scope.record, records_, scope.label,
                            AlgorithmContext{*transport_, scope.record.seq << 16, scope.deadline,
                                             pending, scope.window}};
      return body(call);
    } catch (...) {
      fail_group_from_current_exception(scope);
      throw;
    }
  }

  GroupOf group_;  // first: a parent outlives its group's transport, a view of the parent's
  std::shared_ptr<RankTurns> turns_;
  std::unique_ptr<Transport> transport_;
  EngineFactory engine_factory_;
  std::unique_ptr<CollectiveEngine> engine_;
  int rank_;
  int world_;
  Device device_;
  CommunicatorOptions options_;
  std::uint64_t seq_ = 0;
  std::uint64_t splits_ = 0;
  std::vector<std::uint64_t> p2p_sent_;
  std::vector<std::uint64_t> p2p_received_;
  std::vector<CallRecord> records_;
  std::string engine_name_;  // engine_->name(), written into every record
  CallObserver observer_;
  // Last: destroyed first, so its queued calls run out while everything they use is alive.
  ProgressThread progress_;
};

}  // namespace ruccl
