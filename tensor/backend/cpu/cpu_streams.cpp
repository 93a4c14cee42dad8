// CpuBackend: the execution model's CPU side. The CPU has one stream per device, handle 0, and
// every call has finished when it returns, so synchronizing is free and every event is ready.
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/error.h"

namespace ruccl::cpu {

namespace {

/// Recorded on the CPU's stream: the work before it is already done.
class CpuEvent final : public Event {
 public:
  void synchronize() override {}
  bool ready() const override { return true; }
  void block(const Stream& stream) override {
    RUCCL_CHECK(stream.device.is_cpu(), DeviceError,
                "Event::block: expected a stream of the CPU, got one of ", stream.device,
                " (a CPU event orders only CPU work)");
  }
};

void check_cpu_stream(const Stream& stream, const char* op) {
  RUCCL_CHECK(stream.device.is_cpu(), DeviceError, op, ": expected a CPU stream, got one of ",
              stream.device);
  RUCCL_CHECK(stream.handle == 0, ValueError, op,
              ": expected the CPU's only stream (handle 0), got handle ", stream.handle);
}

}  // namespace

Stream CpuBackend::current_stream(Device device) { return Stream{device, 0}; }

void CpuBackend::set_current_stream(const Stream& stream) {
  check_cpu_stream(stream, "set_current_stream");
}

Stream CpuBackend::create_stream(Device device) { return Stream{device, 0}; }

void CpuBackend::synchronize(Device /*device*/) {}

std::unique_ptr<Event> CpuBackend::record_event(const Stream& stream) {
  check_cpu_stream(stream, "record_event");
  return std::make_unique<CpuEvent>();
}

}  // namespace ruccl::cpu
