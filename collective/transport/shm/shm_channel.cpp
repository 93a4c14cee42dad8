#include "collective/transport/shm/shm_channel.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "collective/common/collective_error.h"
#include "collective/transport/transport.h"

namespace ruccl {

// ---- the segment's layout
// ------------------------------------------------------------------------ [0, 256) SegmentHeader
// [256, 1280)              RingControl of ring 0 (lower rank -> higher), then of ring 1
// [1280, ...)              SlotHeader[slots] of ring 0, then of ring 1
// page-aligned             ring 0's slots (kPieceBytes each), then ring 1's

struct ShmChannel::RingControl {
  alignas(64) std::atomic<std::uint64_t> tail;  // pieces published (the writer's)
  alignas(64) std::atomic<std::uint64_t> head;  // pieces freed (the reader's)
  alignas(64) std::atomic<std::uint32_t> reader_sleeping;
  alignas(64) std::atomic<std::uint32_t> writer_sleeping;
};

struct ShmChannel::SlotHeader {
  std::uint64_t kind;  // kSlotData or kSlotRecord
  std::uint64_t tag;
  std::uint64_t message_bytes;
  std::uint64_t offset;
  std::uint64_t nbytes;
};

namespace {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "ring counters must be lock-free to be shared between processes");

constexpr std::uint64_t kShmMagic = 0x6d68734c4343'7572ULL;  // "ruCCLshm", little-endian
constexpr std::uint32_t kShmVersion = 2;                     // 2: records through the ring
constexpr std::uint64_t kSlotData = 0;
constexpr std::uint64_t kSlotRecord = 1;
constexpr std::size_t kControlOffset = 256;
constexpr std::size_t kControlBytes = 512;
constexpr std::size_t kHeadersOffset = kControlOffset + 2 * kControlBytes;
constexpr std::size_t kPage = 4096;

struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t slots;
  std::uint64_t slot_bytes;
  std::uint8_t session[16];
  std::int32_t low_rank;
  std::int32_t high_rank;
};
static_assert(sizeof(SegmentHeader) <= kControlOffset);
static_assert(sizeof(ShmChannel::RingControl) <= kControlBytes);

std::uint32_t slot_count(std::size_t ring_bytes) {
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(ring_bytes / kPieceBytes, 2, 1024));
}

std::size_t data_offset(std::uint32_t slots) {
  const std::size_t end = kHeadersOffset + 2 * slots * sizeof(ShmChannel::SlotHeader);
  return (end + kPage - 1) / kPage * kPage;
}

std::size_t segment_bytes(std::uint32_t slots) {
  return data_offset(slots) + 2 * std::size_t{slots} * kPieceBytes;
}

CollectiveError shm_error(const std::string& name, const std::string& what) {
  return CollectiveError(CollectiveErrorKind::InvalidConfig,
                         str("shared-memory segment ", name, ": ", what));
}

std::string errno_text(const char* call) { return str(call, " failed: ", std::strerror(errno)); }

/// Maps `fd` (`bytes` long) shared; closes it either way.
void* map_shared(int fd, std::size_t bytes, const std::string& name) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    errno = mmap_errno;
    throw shm_error(name, errno_text("mmap"));
  }
  return base;
}

}  // namespace

// ---- host identity and the bell
// ------------------------------------------------------------------

std::string shared_memory_host_identity() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!(boot >> boot_id)) return "";
  struct stat net_ns {};
  struct stat mnt_ns {};
  if (::stat("/proc/self/ns/net", &net_ns) != 0 || ::stat("/proc/self/ns/mnt", &mnt_ns) != 0) {
    return "";
  }
  return str(boot_id, "/net:", net_ns.st_ino, "/mnt:", mnt_ns.st_ino, "/uid:", ::geteuid());
}

namespace {

/// The abstract address "\0ruccl-<group>-<rank>"; its length in `length`.
sockaddr_un bell_address(const std::string& group, int rank, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = str("ruccl-", group, "-", rank);
  const std::size_t n = std::min(name.size(), sizeof(address.sun_path) - 1);
  std::memcpy(address.sun_path + 1, name.data(), n);
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return address;
}

}  // namespace

LocalBell::LocalBell(std::string group, int rank) : group_(std::move(group)) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("LocalBell of rank ", rank, ": ", errno_text("socket")));
  }
  socket_ = net::Socket(fd);
  socklen_t length = 0;
  const sockaddr_un address = bell_address(group_, rank, length);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    if (errno == EADDRINUSE) {
      throw ShmNameTaken(CollectiveErrorKind::InvalidConfig,
                         str("LocalBell of rank ", rank,
                             ": its abstract socket name is already bound by another process "
                             "(another group with the same session and store prefix, or someone "
                             "who learnt the names; with RUCCL_JOB_SECRET they derive from the "
                             "secret)"));
    }
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("LocalBell of rank ", rank, ": ", errno_text("bind")));
  }
}

void LocalBell::ring(int peer) noexcept {
  socklen_t length = 0;
  const sockaddr_un address = bell_address(group_, peer, length);
  const char byte = 1;
  (void)::sendto(socket_.fd(), &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&address), length);
}

void LocalBell::drain() noexcept {
  char bytes[64];
  while (::recv(socket_.fd(), bytes, sizeof(bytes), MSG_DONTWAIT) > 0) {
  }
}

// ---- the segment
// ---------------------------------------------------------------------------------

ShmChannel::ShmChannel(void* base, std::size_t bytes, std::uint32_t slots, bool low)
    : base_(base), bytes_(bytes), slots_(slots) {
  auto* at = static_cast<std::uint8_t*>(base);
  Ring rings[2];
  for (int i = 0; i < 2; ++i) {
    rings[i].control = reinterpret_cast<RingControl*>(at + kControlOffset + kControlBytes * i);
    rings[i].headers =
        reinterpret_cast<SlotHeader*>(at + kHeadersOffset + sizeof(SlotHeader) * slots * i);
    rings[i].data = at + data_offset(slots) + std::size_t{slots} * kPieceBytes * i;
  }
  out_ = rings[low ? 0 : 1];
  in_ = rings[low ? 1 : 0];
}

ShmChannel::~ShmChannel() { ::munmap(base_, bytes_); }

std::unique_ptr<ShmChannel> ShmChannel::create(const std::string& name, const SessionId& session,
                                               int rank, int peer, std::size_t ring_bytes) {
  RUCCL_ASSERT(rank < peer);
  const std::uint32_t slots = slot_count(ring_bytes);
  const std::size_t bytes = segment_bytes(slots);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const std::string why = errno_text("shm_open");
    struct stat taken {};
    if (errno == EEXIST && ::stat(str("/dev/shm", name).c_str(), &taken) == 0 &&
        taken.st_uid != ::geteuid()) {
      throw ShmNameTaken(
          CollectiveErrorKind::InvalidConfig,
          str("shared-memory segment ", name, ": the name is taken by uid ", taken.st_uid,
              " (another user of this host who learnt the job's "
              "names; with RUCCL_JOB_SECRET they derive from the secret)"));
    }
    throw shm_error(name, why);
  }
  // Reserve every page now: tmpfs would otherwise fail a full /dev/shm as SIGBUS on first touch.
  if (const int e = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); e != 0) {
    ::close(fd);
    unlink(name);
    throw shm_error(name, str("reserving ", bytes, " bytes failed: ", std::strerror(e)));
  }
  void* base = nullptr;
  try {
    base = map_shared(fd, bytes, name);
  } catch (...) {
    unlink(name);
    throw;
  }
  // The file starts zeroed: counters and flags are 0. The header is checked by the opener, which
  // only opens once the store says the segment is ready.
  auto* header = static_cast<SegmentHeader*>(base);
  header->magic = kShmMagic;
  header->version = kShmVersion;
  header->slots = slots;
  header->slot_bytes = kPieceBytes;
  std::memcpy(header->session, session.data(), session.size());
  header->low_rank = rank;
  header->high_rank = peer;
  return std::unique_ptr<ShmChannel>(new ShmChannel(base, bytes, slots, true));
}

std::unique_ptr<ShmChannel> ShmChannel::open(const std::string& name, const SessionId& session,
                                             int rank, int peer, std::size_t ring_bytes) {
  RUCCL_ASSERT(peer < rank);
  const std::uint32_t slots = slot_count(ring_bytes);
  const std::size_t bytes = segment_bytes(slots);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) throw shm_error(name, errno_text("shm_open"));
  struct stat info {};
  if (::fstat(fd, &info) == 0 && (info.st_uid != ::geteuid() || (info.st_mode & 077) != 0)) {
    ::close(fd);
    throw shm_error(name, str("expected a segment of this user (uid ", ::geteuid(),
                              ") that only it may open, got one of uid ", info.st_uid,
                              (info.st_mode & 077) != 0 ? " open to group or others" : ""));
  }
  if (::fstat(fd, &info) != 0 || static_cast<std::size_t>(info.st_size) != bytes) {
    ::close(fd);
    throw shm_error(name, str("expected ", bytes, " bytes (", slots, " slots of ", kPieceBytes,
                              " per direction), got ", info.st_size));
  }
  void* base = map_shared(fd, bytes, name);
  std::unique_ptr<ShmChannel> channel(new ShmChannel(base, bytes, slots, false));
  const auto* header = static_cast<const SegmentHeader*>(base);
  std::string why;
  if (header->magic != kShmMagic) {
    why = "bad magic";
  } else if (header->version != kShmVersion) {
    why = str("version ", header->version, " (expected ", kShmVersion, ")");
  } else if (header->slots != slots || header->slot_bytes != kPieceBytes) {
    why = str(header->slots, " slots of ", header->slot_bytes, " bytes (expected ", slots, " of ",
              kPieceBytes, ")");
  } else if (std::memcmp(header->session, session.data(), session.size()) != 0) {
    why = "another session's";
  } else if (header->low_rank != peer || header->high_rank != rank) {
    why = str("ranks ", header->low_rank, " and ", header->high_rank, " (expected ", peer, " and ",
              rank, ")");
  }
  if (!why.empty()) throw shm_error(name, why);
  return channel;
}

void ShmChannel::unlink(const std::string& name) noexcept { ::shm_unlink(name.c_str()); }

// ---- the ring
// ------------------------------------------------------------------------------------

void ShmChannel::start_send(std::uint64_t tag, const void* data, std::size_t nbytes) {
  RUCCL_ASSERT(!sending_);
  sending_ = true;
  record_first_ = record_pending_;  // a record queued before this message goes first
  tag_ = tag;
  data_ = static_cast<const std::uint8_t*>(data);
  nbytes_ = nbytes;
  offset_ = 0;
}

void ShmChannel::queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded) {
  RUCCL_ASSERT(!record_pending_ && encoded.size() <= kPieceBytes);
  record_pending_ = true;
  record_first_ = !sending_;
  record_seq_ = seq;
  record_.assign(encoded.begin(), encoded.end());
}

ShmChannel::Published ShmChannel::publish_one() {
  const std::uint64_t tail = out_.control->tail.load(std::memory_order_relaxed);
  if (tail - out_.control->head.load(std::memory_order_acquire) >= slots_) return Published::None;
  const std::size_t slot = tail % slots_;
  std::uint8_t* bytes = out_.data + slot * kPieceBytes;
  Published what = Published::Record;
  if (record_pending_ && (record_first_ || !sending_)) {
    std::memcpy(bytes, record_.data(), record_.size());
    out_.headers[slot] = SlotHeader{kSlotRecord, record_seq_, record_.size(), 0, record_.size()};
    record_pending_ = false;
  } else {
    const std::size_t n = std::min(kPieceBytes, nbytes_ - offset_);
    if (n != 0) std::memcpy(bytes, data_ + offset_, n);
    out_.headers[slot] = SlotHeader{kSlotData, tag_, nbytes_, offset_, n};
    offset_ += n;
    if (offset_ >= nbytes_) sending_ = false;
    what = Published::Data;
  }
  out_.control->tail.store(tail + 1, std::memory_order_seq_cst);
  return what;
}

bool ShmChannel::take_reader_flag() {
  return out_.control->reader_sleeping.load(std::memory_order_seq_cst) != 0 &&
         out_.control->reader_sleeping.exchange(0, std::memory_order_seq_cst) != 0;
}

bool ShmChannel::pump() {
  bool ring = false;
  Published what = Published::None;
  // The reader is woken after each piece of a message still being copied (it may start on the
  // first pieces of a long one) and once at the end, never between a record and the message
  // right behind it.
  while (has_output() && (what = publish_one()) != Published::None) {
    if (what == Published::Data && sending_ && !ring) ring = take_reader_flag();
  }
  return take_reader_flag() || ring;
}

const ShmPiece* ShmChannel::peek() {
  const std::uint64_t head = in_.control->head.load(std::memory_order_relaxed);
  if (in_.control->tail.load(std::memory_order_acquire) == head) return nullptr;
  const std::size_t slot = head % slots_;
  const SlotHeader h = in_.headers[slot];  // read once: the reader checks what it then uses
  const bool record = h.kind != kSlotData;
  piece_ =
      ShmPiece{record, h.tag, h.message_bytes, h.offset, h.nbytes, in_.data + slot * kPieceBytes};
  return &piece_;
}

bool ShmChannel::release() {
  const std::uint64_t head = in_.control->head.load(std::memory_order_relaxed);
  in_.control->head.store(head + 1, std::memory_order_seq_cst);
  return in_.control->writer_sleeping.load(std::memory_order_seq_cst) != 0 &&
         in_.control->writer_sleeping.exchange(0, std::memory_order_seq_cst) != 0;
}

bool ShmChannel::sleep_reading() {
  in_.control->reader_sleeping.store(1, std::memory_order_seq_cst);
  return in_.control->tail.load(std::memory_order_seq_cst) !=
         in_.control->head.load(std::memory_order_relaxed);
}

bool ShmChannel::sleep_writing() {
  out_.control->writer_sleeping.store(1, std::memory_order_seq_cst);
  return out_.control->tail.load(std::memory_order_relaxed) -
             out_.control->head.load(std::memory_order_seq_cst) <
         slots_;
}

void ShmChannel::woke() {
  in_.control->reader_sleeping.store(0, std::memory_order_relaxed);
  out_.control->writer_sleeping.store(0, std::memory_order_relaxed);
}

}  // namespace ruccl
