#include "collective/mpi/mpi_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>

#include "collective/common/hash.h"

namespace ruccl::mpi {

namespace {

struct Orphan {
  MPI_Request request;
  std::shared_ptr<void> keep;
};

struct Runtime {
  std::mutex mutex;
  std::vector<Orphan> orphans;
  std::vector<MPI_Comm> retired;  // retire_communicator
  bool initialized_by_us = false;
};

Runtime& runtime() {
  static Runtime* r = new Runtime();  // never destroyed: the exit handler runs after statics
  return *r;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

/// At exit, when ruCCL initialised MPI: finalise, unless a failed group left requests that can
/// never complete (MPI_Finalize would wait for them forever).
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  std::size_t pending = reap_orphans();
  while (pending > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    pending = reap_orphans();
  }
  if (pending > 0) {
    abort_job(str("ruccl: ", pending,
                  " MPI request(s) of a failed communicator can never complete (a peer "
                  "died, aborted or timed out in the middle of a collective, and MPI cannot "
                  "cancel one): ending the job with MPI_Abort instead of hanging in MPI_Finalize"));
  }
  MPI_Finalize();
}

void put_u16(std::vector<std::uint8_t>& out, std::size_t v) {
  out.push_back(static_cast<std::uint8_t>(v));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
}

}  // namespace

void ensure_initialized() {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          "MPI: expected an MPI library that is not finalised, got one after "
                          "MPI_Finalize (a group cannot be made after the end of MPI)");
  }
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread",
          CollectiveErrorKind::InvalidConfig);
    r.initialized_by_us = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str("MPI: expected thread support MPI_THREAD_MULTIPLE (abort and fail run on any "
            "thread), got ",
            thread_level_name(provided),
            initialized ? " (initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...))"
                        : " from this MPI library"));
  }
}

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return str("MPI error ", code);
  return std::string(text, static_cast<std::size_t>(std::max(0, length)));
}

void check(int code, const char* what, CollectiveErrorKind kind) {
  if (code == MPI_SUCCESS) return;
  throw CollectiveError(kind, str(what, " failed: ", error_string(code)));
}

int tag_upper_bound() {
  static const int bound = [] {
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    return found && value != nullptr ? *static_cast<int*>(value) : 32767;
  }();
  return bound;
}

std::size_t shared_memory_eager_limit() {
  static const std::size_t limit = [] {
    int provided = 0;
    if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return std::size_t{0};
    std::size_t found = 0;
    for (const char* name : {"btl_vader_eager_limit", "btl_sm_eager_limit"}) {
      int index = -1;
      if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) continue;
      char info_name[128];
      int name_len = sizeof info_name;
      int verbosity = 0;
      int bind = 0;
      int scope = 0;
      MPI_Datatype type = MPI_DATATYPE_NULL;
      MPI_T_enum values = MPI_T_ENUM_NULL;
      if (MPI_T_cvar_get_info(index, info_name, &name_len, &verbosity, &type, &values, nullptr,
                              nullptr, &bind, &scope) != MPI_SUCCESS) {
        continue;
      }
      int type_bytes = 0;
      MPI_Type_size(type, &type_bytes);
      MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
      int count = 0;
      if (type_bytes < 1 || type_bytes > 8 ||
          MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) {
        continue;
      }
      std::uint64_t value = 0;  // an unsigned integer of type_bytes (little-endian here)
      unsigned char bytes[16] = {};
      if (count == 1 && MPI_T_cvar_read(handle, bytes) == MPI_SUCCESS) {
        std::memcpy(&value, bytes, static_cast<std::size_t>(type_bytes));
        found = static_cast<std::size_t>(value);
      }
      MPI_T_cvar_handle_free(&handle);
      if (found != 0) break;
    }
    MPI_T_finalize();
    return found;
  }();
  return limit;
}

std::uint64_t node_hash() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return fnv1a64(std::string_view(name, static_cast<std::size_t>(std::max(length, 0))));
}

void orphan_request(MPI_Request request, std::shared_ptr<void> keep) noexcept {
  if (request == MPI_REQUEST_NULL) return;
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  try {
    r.orphans.push_back(Orphan{request, std::move(keep)});
  } catch (...) {
    abort_job("ruccl: out of memory keeping a pending MPI request of a failed communicator");
  }
}

void retire_communicator(MPI_Comm comm) noexcept {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  try {
    r.retired.push_back(comm);
  } catch (...) {
    abort_job("ruccl: out of memory retiring the MPI communicator of a destroyed group");
  }
}

std::size_t reap_orphans() noexcept {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  // Messages still coming to a destroyed group are received into buffers kept here, so that
  // their senders' requests complete (a message above the eager limit completes only once it is
  // received).
  for (MPI_Comm comm : r.retired) {
    for (;;) {
      int found = 0;
      MPI_Message message = MPI_MESSAGE_NULL;
      MPI_Status status;
      if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &found, &message, &status) !=
              MPI_SUCCESS ||
          !found) {
        break;
      }
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      try {
        auto buffer =
            std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(count) + 1);
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Imrecv(buffer->data(), count, MPI_BYTE, &message, &request);
        r.orphans.push_back(Orphan{request, std::move(buffer)});
      } catch (...) {
        abort_job("ruccl: out of memory receiving a message for a destroyed group");
      }
    }
  }
  std::erase_if(r.orphans, [](Orphan& o) {
    int done = 0;
    MPI_Test(&o.request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  return r.orphans.size();
}

void abort_job(const std::string& report) noexcept {
  std::fprintf(stderr, "%s\n", report.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 70);
  std::abort();  // MPI_Abort returned (it may not, on some libraries): end anyway
}

std::vector<std::uint8_t> encode_notice(const CollectiveError& error) {
  std::vector<std::uint8_t> out;
  out.push_back(1);
  out.push_back(static_cast<std::uint8_t>(error.kind()));
  const std::size_t nranks = std::min<std::size_t>(error.ranks().size(), 256);
  put_u16(out, nranks);
  for (std::size_t i = 0; i < nranks; ++i) {
    const auto v = static_cast<std::uint32_t>(error.ranks()[i]);
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
  }
  const std::size_t room = kMaxNoticeBytes - out.size() - 2;
  const std::size_t length = std::min(std::strlen(error.what()), room);
  put_u16(out, length);
  out.insert(out.end(), error.what(), error.what() + length);
  return out;
}

CollectiveError decode_notice(const std::uint8_t* bytes, std::size_t nbytes, int from) {
  auto malformed = [&](const std::string& why) {
    return CollectiveError(CollectiveErrorKind::PeerLost,
                           str("rank ", from, " sent a malformed failure notice (", why, ")"),
                           {from});
  };
  if (nbytes < 6) return malformed(str("expected at least 6 bytes, got ", nbytes));
  if (bytes[0] != 1) return malformed(str("expected version 1, got ", int{bytes[0]}));
  if (bytes[1] > static_cast<std::uint8_t>(CollectiveErrorKind::Unsupported)) {
    return malformed(str("error kind ", int{bytes[1]}, " out of range"));
  }
  const std::size_t nranks = bytes[2] | (std::size_t{bytes[3]} << 8);
  std::size_t at = 4;
  if (nbytes < at + 4 * nranks + 2) {
    return malformed(
        str("expected ", at + 4 * nranks + 2, " bytes for ", nranks, " ranks, got ", nbytes));
  }
  std::vector<int> ranks;
  for (std::size_t i = 0; i < nranks; ++i, at += 4) {
    std::uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= std::uint32_t{bytes[at + b]} << (8 * b);
    ranks.push_back(static_cast<int>(v));
  }
  const std::size_t length = bytes[at] | (std::size_t{bytes[at + 1]} << 8);
  at += 2;
  if (nbytes != at + length) {
    return malformed(str("expected ", at + length, " bytes, got ", nbytes));
  }
  return CollectiveError(static_cast<CollectiveErrorKind>(bytes[1]),
                         std::string(reinterpret_cast<const char*>(bytes + at), length),
                         std::move(ranks));
}

}  // namespace ruccl::mpi
