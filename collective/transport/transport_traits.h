#pragma once
// What a transport is, as far as anything above it needs to know: how bytes reach the peers (the
// link kind) and whether every rank shares this process's address space. Algorithm selection
// (collective/algorithms/selection.h) reads the link kind; a device engine that hands peers
// pointers (cuda/collective/device_engine.cpp) reads the address space. The same on every rank of
// a group.
#include <cstdint>

namespace ruccl {

/// How the bytes of a message reach every peer.
enum class LinkKind : std::uint8_t {
  /// Receivers read the sender's memory in place (threads of one process): no copy.
  InProcess,
  /// Through a kernel or a library that copies (TCP, MPI; the default).
  Copying,
  /// Every pair of ranks through shared memory (processes of one host): a copy is a memcpy.
  SharedMemory,
};

/// "in process (zero copy)", "copying", "copying through shared memory".
inline const char* link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::InProcess:
      return "in process (zero copy)";
    case LinkKind::Copying:
      return "copying";
    case LinkKind::SharedMemory:
      return "copying through shared memory";
  }
  return "?";
}

struct TransportTraits {
  /// What every pair of ranks has: a group whose pairs differ (some through shared memory, some
  /// over TCP) is Copying.
  LinkKind link = LinkKind::Copying;
  /// Whether every rank runs in this process: a pointer of one rank is valid on every other
  /// (whatever the link kind: a copying wrapper over the in-process transport still shares it).
  bool same_address_space = false;
};

}  // namespace ruccl
