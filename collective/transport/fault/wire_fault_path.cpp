#include "collective/transport/fault/wire_fault_path.h"

#include <signal.h>
#include <sys/socket.h>

#include <thread>

namespace ruccl {

void WireFaults::kill() {
  if (kill_) {
    kill_();
    return;
  }
  ::raise(SIGKILL);
}

void WireFaults::start_call(std::uint64_t k, const FaultRule& rule) {
  if (k < next_call_) return;  // another path of this rank ran it
  next_call_ = k + 1;
  if (rule.action == FaultAction::Delay) std::this_thread::sleep_for(rule.delay);
  if (rule.action == FaultAction::KillRank) kill();
}

void WireFaultPath::cut() noexcept { ::shutdown(inner_->tcp_link().fd(), SHUT_RDWR); }

void WireFaultPath::queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded) {
  const std::uint64_t k = calls_++;
  if (const FaultRule* rule = faults_->plan().for_call(k)) {
    faults_->start_call(k, *rule);
    if (rule->action == FaultAction::Cut && (rule->peer < 0 || rule->peer == inner_->peer())) {
      cut();
    }
  }
  inner_->queue_record(seq, encoded);
}

PathStep WireFaultPath::post_send(std::uint64_t tag, const void* data, std::size_t nbytes) {
  WireFault fault;
  const std::uint64_t k = messages_++;
  fault.drop = dropping_;
  if (const FaultRule* rule = faults_->plan().for_message(inner_->peer(), k)) {
    switch (rule->action) {
      case FaultAction::Delay:
        std::this_thread::sleep_for(rule->delay);
        break;
      case FaultAction::Drop:
        dropping_ = true;
        fault.drop = true;
        break;
      case FaultAction::Duplicate:
        fault.duplicate = true;
        break;
      case FaultAction::Corrupt:
        fault.corrupt = true;  // a byte changed on the wire, after the CRC and MAC
        fault.corrupt_offset = rule->byte_offset;
        fault.corrupt_mask = rule->xor_mask;
        break;
      case FaultAction::Cut:
        cut();
        break;
      case FaultAction::KillRank:
        faults_->kill();
        break;
    }
  }
  return inner_->post_send(tag, data, nbytes, fault);
}

}  // namespace ruccl
