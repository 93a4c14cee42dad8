// Communicator: what a rank's calls did (statistics and trace: collective/trace/).
#include "collective/communicator.h"
#include "collective/core/communicator_core.h"

namespace ruccl {

CollectiveStats Communicator::stats() const { return core().observer().stats(); }

TraceRecorder& Communicator::trace() const { return core().observer().trace(); }

}  // namespace ruccl
