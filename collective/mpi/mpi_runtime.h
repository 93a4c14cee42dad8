#pragma once
// The process's MPI library as ruCCL uses it: initialisation, the end of the job, the requests a
// failed group leaves behind, and the failure notice every rank of a failing group receives.
//
// MPI cannot cancel a send or a non-blocking collective, and cannot survive a lost rank. A group
// that fails while such a request is pending (a peer died, aborted or timed out in the middle of
// a collective) leaves requests that may never complete, reading or writing buffers that must
// therefore outlive the group: they are kept here (orphan_request), with those buffers, until
// they complete. At the end of the process, if any is still pending, MPI_Finalize could hang
// waiting for them: the process reports them on stderr and ends the job the MPI way, with
// MPI_Abort (docs/collectives.md, "MPI engine": the failure model).
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"

namespace ruccl::mpi {

/// Initialises MPI with MPI_THREAD_MULTIPLE unless the program already did (then MPI_Finalize at
/// exit is the program's, else ruCCL's, after the orphans' check). Throws CollectiveError
/// (InvalidConfig) when MPI was initialised with less than MPI_THREAD_MULTIPLE ("expected X,
/// got Y": fail() and abort() may run on any thread), or when it was already finalised.
void ensure_initialized();

/// "MPI_ERR_TRUNCATE: message truncated", for messages.
std::string error_string(int code);

/// Throws CollectiveError(`kind`) "<what>: <MPI's error string>" when `code` is not MPI_SUCCESS.
void check(int code, const char* what, CollectiveErrorKind kind = CollectiveErrorKind::PeerLost);

/// The largest tag the library accepts (MPI_TAG_UB; the standard promises >= 32767).
int tag_upper_bound();

/// The eager limit of the MPI library's shared-memory transport, from its MPI_T control variable
/// (OpenMPI 4's btl_vader_eager_limit, 5's btl_sm_eager_limit): messages up to it, less the
/// library's headers, go without a rendezvous. 0 when the library reports none (not OpenMPI, or
/// no shared-memory transport in use). Read once; thread-safe.
std::size_t shared_memory_eager_limit();

/// fnv1a64 (common/hash.h) of this process's MPI_Get_processor_name: equal on the ranks of one
/// node.
std::uint64_t node_hash();

/// Keeps `request` (never completed) and `keep` (the buffers it reads or writes) until the
/// request completes. Never throws.
void orphan_request(MPI_Request request, std::shared_ptr<void> keep) noexcept;
/// Marks `comm` as no group's any more: every message that still arrives on it is received into
/// a buffer kept with its request (by reap_orphans), so the peer's send completes (MPI completes
/// a send above its eager limit only once it is received). Never throws.
void retire_communicator(MPI_Comm comm) noexcept;
/// Receives what arrived on the retired communicators, then completes what it can of the
/// orphaned requests; returns how many are still pending.
std::size_t reap_orphans() noexcept;

/// Ends the process the MPI way: prints `report` on stderr and calls MPI_Abort on
/// MPI_COMM_WORLD (every process of the job ends). For a state MPI cannot leave cleanly.
[[noreturn]] void abort_job(const std::string& report) noexcept;

/// The failure notice: the encoded CollectiveError a failing rank sends to every other rank.
/// Layout (little-endian): u8 version (1), u8 kind, u16 number of ranks, i32 ranks[], u16 message
/// length, the message (no NUL). At most kMaxNoticeBytes (the message is truncated to fit).
inline constexpr std::size_t kMaxNoticeBytes = 4096;
std::vector<std::uint8_t> encode_notice(const CollectiveError& error);
/// Decodes a notice of `bytes`; a malformed one becomes PeerLost naming `from` and saying why.
CollectiveError decode_notice(const std::uint8_t* bytes, std::size_t nbytes, int from);

}  // namespace ruccl::mpi
