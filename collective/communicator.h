#pragma once
// Communicator: one rank's endpoint of a group of `world_size` ranks (docs/api.md). Every operation
// returns new tensors and never modifies its inputs. See docs/collectives.md for the semantics,
// the algorithms, the agreement checks, deadlines and errors.
//
//   auto comms = InProcessGroup::create(4);          // one Communicator per rank (thread)
//   // on rank r's thread:
//   Tensor sum = comms[r].all_reduce(t, ReduceOperation::Sum);
//
// Contract: all ranks issue the same collectives in the same order with the same kind, dtype,
// shape, reduce operation, root and CallOptions words. This is checked on every call; a mismatch
// raises CollectiveError on every rank. After any CollectiveError the group is finished: later
// calls on any rank raise CollectiveErrorKind::Aborted.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/reduce_operation.h"
#include "collective/engine/engine_factory.h"
#include "collective/protocol/call_options.h"
#include "collective/trace/call_stats.h"
#include "collective/trace/call_trace.h"
#include "collective/work.h"
#include "tensor/core/tensor.h"

namespace ruccl {

class CommunicatorCore;

/// One rank's endpoint of a group. Cheap to copy: copies refer to the same endpoint. Use one
/// endpoint from one thread at a time.
class Communicator {
 public:
  /// An endpoint over `transport` (the group factories build these: InProcessGroup::create,
  /// TcpGroup, MpiGroup; the CUDA layer's NcclGroup).
  /// Runs collectives with our algorithms over the transport (AlgorithmEngine).
  Communicator(std::unique_ptr<Transport> transport, Device device, CommunicatorOptions options);
  /// The same with the engine `engine` makes over the transport (MPI, ...): the core still
  /// validates, agrees (over the transport) and fails the group; the engine moves the bytes.
  Communicator(std::unique_ptr<Transport> transport, Device device, CommunicatorOptions options,
               const EngineFactory& engine);
  Communicator() = default;
  /// This process's rank of the job the environment describes (ruccl-run, torchrun, Slurm or
  /// OpenMPI variables), over TCP: see TcpGroup::from_env (collective/tcp_group.h). Built with
  /// MPI (RUCCL_WITH_MPI), a process started by mpirun (OMPI_COMM_WORLD_*) or by srun --mpi=pmix
  /// (PMIX_RANK) joins MPI_COMM_WORLD with the MPI engine instead (MpiGroup::world,
  /// collective/mpi_group.h). RUCCL_ENGINE=mpi or tcp chooses explicitly; another
  /// value is InvalidConfig naming it.
  static Communicator from_env(Device device = Device::cpu(), CommunicatorOptions options = {});

  /// This rank, in [0, world_size()).
  int rank() const;
  /// Number of ranks in the group.
  int world_size() const;
  /// The device this rank's tensors live on.
  Device device() const;
  /// The options the group was made with.
  const CommunicatorOptions& options() const;
  /// The name of the engine that runs this group's collectives ("algorithms", "mpi").
  std::string engine_name() const;
  /// Calls, failures, bytes and time of this rank's calls so far, per operation and algorithm
  /// (a copy; docs/observability.md). Always counted. The progress thread counts *_async calls:
  /// read this when none is pending (after their wait()), not while they run.
  CollectiveStats stats() const;
  /// This rank's trace: off by default (then free), `comm.trace().enable()` records every call
  /// and every TraceSpan marked on it; RUCCL_TRACE_FILE turns it on for every communicator.
  TraceRecorder& trace() const;

  /// Every rank gets root's tensor. Non-roots may pass an undefined Tensor() (the result takes
  /// root's shape and dtype) or a tensor of root's shape and dtype.
  Tensor broadcast(const Tensor& t, int root, const CallOptions& call = {});
  /// Broadcast where exactly one rank passes a tensor (the registered API's form): zero senders
  /// raise NoBroadcastSender, several SeveralBroadcastSenders, on every rank.
  Tensor broadcast_from_sender(const std::optional<Tensor>& t, const CallOptions& call = {});
  /// Elementwise reduction over ranks; same shape and dtype as `t` on every rank.
  Tensor all_reduce(const Tensor& t, ReduceOperation op = ReduceOperation::Sum,
                    const CallOptions& call = {});
  /// Like all_reduce, but only `root` gets the result; other ranks get std::nullopt.
  std::optional<Tensor> reduce(const Tensor& t, int root, ReduceOperation op = ReduceOperation::Sum,
                               const CallOptions& call = {});
  /// Concatenation of every rank's `t` along axis 0 in rank order: shape [W*d0, ...]. A 0-d
  /// tensor is treated as shape [1].
  Tensor all_gather(const Tensor& t, const CallOptions& call = {});
  /// Reduces over ranks, then rank r keeps rows [r*d0/W, (r+1)*d0/W) of axis 0. d0 must divide by
  /// W (else InvalidArgument on every rank).
  Tensor reduce_scatter(const Tensor& t, ReduceOperation op = ReduceOperation::Sum,
                        const CallOptions& call = {});
  /// Root gets the axis-0 concatenation in rank order; other ranks get std::nullopt.
  std::optional<Tensor> gather(const Tensor& t, int root, const CallOptions& call = {});
  /// Root's `t` (axis 0 divisible by W) is split in W row blocks; rank r gets block r. Non-roots
  /// may pass an undefined Tensor() or a tensor of root's shape and dtype (its values are unused).
  Tensor scatter(const Tensor& t, int root, const CallOptions& call = {});
  /// Rank r's `t` is split in W row blocks (axis 0 divisible by W); block j goes to rank j. The
  /// result is the blocks received from ranks 0..W-1, concatenated: same shape as `t`.
  Tensor all_to_all(const Tensor& t, const CallOptions& call = {});
  /// Like all_to_all with uneven blocks: `send_counts[j]` rows of `t` (in order) go to rank j;
  /// sum(send_counts) == d0. Trailing dims and dtype must agree on every rank.
  AllToAllVResult all_to_all_v(const Tensor& t, std::span<const std::int64_t> send_counts,
                               const CallOptions& call = {});
  /// Sends `t` to rank `dst` (which calls recv(rank())). Returns when `t`'s bytes may be reused
  /// (Transport::wait_send): in process once `dst` has the data; over a copying transport once
  /// they are on their way (a failure of `dst` before it receives them fails its recv, not this
  /// send).
  void send(const Tensor& t, int dst, const CallOptions& call = {});
  /// Receives the tensor rank `src` sends (any shape and dtype it sends).
  Tensor recv(int src, const CallOptions& call = {});
  /// Returns when every rank has called barrier.
  void barrier(const CallOptions& call = {});
  /// Non-blocking forms (docs/collectives.md, "Asynchronous collectives"): each starts the call
  /// and returns its Work handle at once; Work::result() is what the blocking form returns
  /// (an undefined Tensor where it returns std::nullopt or nothing; all_to_all_v's counts:
  /// Work::recv_counts()). A rank's calls, blocking or not, run in the order it made them, one
  /// at a time, on the communicator's progress thread (started by the first *_async call), with
  /// the same agreement, deadlines (counted from the *_async call) and errors as the blocking
  /// forms. The handle keeps the inputs alive; do not write into them before the call completes.
  /// CallOptions::label must outlive the call (a string literal).
  Work broadcast_async(const Tensor& t, int root, const CallOptions& call = {});
  Work broadcast_from_sender_async(const std::optional<Tensor>& t, const CallOptions& call = {});
  Work all_reduce_async(const Tensor& t, ReduceOperation op = ReduceOperation::Sum,
                        const CallOptions& call = {});
  Work reduce_async(const Tensor& t, int root, ReduceOperation op = ReduceOperation::Sum,
                    const CallOptions& call = {});
  Work all_gather_async(const Tensor& t, const CallOptions& call = {});
  Work reduce_scatter_async(const Tensor& t, ReduceOperation op = ReduceOperation::Sum,
                            const CallOptions& call = {});
  Work gather_async(const Tensor& t, int root, const CallOptions& call = {});
  Work scatter_async(const Tensor& t, int root, const CallOptions& call = {});
  Work all_to_all_async(const Tensor& t, const CallOptions& call = {});
  Work all_to_all_v_async(const Tensor& t, std::span<const std::int64_t> send_counts,
                          const CallOptions& call = {});
  Work send_async(const Tensor& t, int dst, const CallOptions& call = {});
  Work recv_async(int src, const CallOptions& call = {});
  Work barrier_async(const CallOptions& call = {});
  /// Whether this rank's progress thread runs (a rank that made no *_async call has none).
  bool has_progress_thread() const;

  /// Splits this group into groups (MPI_Comm_split's meaning): a collective of this group, every
  /// rank passes a `color` and a `key`. The ranks of one color form one group, ranked by key, ties
  /// by their rank here; a negative color joins no group (std::nullopt). A group is a
  /// Communicator like any other (split of a split works) that reuses this group's links (no new
  /// socket, no store round); it has its own call numbers, agreement and deadlines, and shares
  /// this group's failure: an error or abort in the parent or any of its groups finishes all of
  /// them. A rank's calls on a parent and its groups run in the order the rank makes them
  /// (docs/collectives.md, "Groups"). `name` names the group in error messages ("group tp of
  /// rank(s) [0, 1]: ..."); empty: "split #N color C". Throws like a collective: a mismatch in
  /// `call`'s words, Timeout, Aborted.
  ///
  ///   auto row = comm.split(comm.rank() / 2, comm.rank());   // {0,1} and {2,3} of 4
  std::optional<Communicator> split(int color, int key, const std::string& name = "",
                                    const CallOptions& call = {});

  /// Makes every pending and later call on every rank of the group fail promptly with
  /// CollectiveErrorKind::Aborted carrying `reason`. Safe from any thread; never throws.
  void abort(const std::string& reason);
  /// Makes every pending and later call on every rank fail with `cause` itself (its kind, ranks
  /// and message; over TCP it travels in the Abort frame): for a layer above that found an error
  /// its peers must raise as it is (the multi-node session). Safe from any thread; never throws.
  void abort(const CollectiveError& cause);
  /// Whether an error or abort has finished the group.
  bool finished() const;
  /// The error that finished the group (its first failure, with its own kind: later calls raise
  /// Aborted naming it), or nullopt while the group is not finished.
  std::optional<CollectiveError> failure() const;

 private:
  explicit Communicator(std::shared_ptr<CommunicatorCore> core) : core_(std::move(core)) {}
  std::shared_ptr<CommunicatorCore> core_;
  CommunicatorCore& core() const;
};

}  // namespace ruccl
