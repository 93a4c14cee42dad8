// Temporary: lets the public headers link while the implementation lands.
#include "collective/communicator.h"
#include "collective/in_process_group.h"
#include "collective/session/session.h"

namespace ruccl {
namespace {
[[noreturn]] void todo(const char* what) {
  throw CollectiveError(CollectiveErrorKind::Unsupported, str(what, ": not implemented yet"));
}
}  // namespace
Communicator::Communicator(std::unique_ptr<Transport>, Device, CommunicatorOptions) { todo("Communicator"); }
int Communicator::rank() const { todo("rank"); }
int Communicator::world_size() const { todo("world_size"); }
Device Communicator::device() const { todo("device"); }
const CommunicatorOptions& Communicator::options() const { todo("options"); }
Tensor Communicator::broadcast(const Tensor&, int, const CallOptions&) { todo("broadcast"); }
Tensor Communicator::broadcast_from_sender(const std::optional<Tensor>&, const CallOptions&) { todo("broadcast"); }
Tensor Communicator::all_reduce(const Tensor&, ReduceOperation, const CallOptions&) { todo("all_reduce"); }
std::optional<Tensor> Communicator::reduce(const Tensor&, int, ReduceOperation, const CallOptions&) { todo("reduce"); }
Tensor Communicator::all_gather(const Tensor&, const CallOptions&) { todo("all_gather"); }
Tensor Communicator::reduce_scatter(const Tensor&, ReduceOperation, const CallOptions&) { todo("reduce_scatter"); }
std::optional<Tensor> Communicator::gather(const Tensor&, int, const CallOptions&) { todo("gather"); }
Tensor Communicator::scatter(const Tensor&, int, const CallOptions&) { todo("scatter"); }
Tensor Communicator::all_to_all(const Tensor&, const CallOptions&) { todo("all_to_all"); }
AllToAllVResult Communicator::all_to_all_v(const Tensor&, std::span<const std::int64_t>, const CallOptions&) { todo("all_to_all_v"); }
void Communicator::send(const Tensor&, int, const CallOptions&) { todo("send"); }
Tensor Communicator::recv(int, const CallOptions&) { todo("recv"); }
void Communicator::barrier(const CallOptions&) { todo("barrier"); }
void Communicator::abort(const std::string&) {}
bool Communicator::finished() const { return false; }
std::vector<Communicator> InProcessGroup::create(int, std::vector<Device>, CommunicatorOptions) { todo("InProcessGroup::create"); }
void register_peer(PeerId, Device, const CollectiveConfig&) { todo("register_peer"); }
Tensor all_reduce(PeerId, const Tensor&, ReduceOperation) { todo("all_reduce"); }
Tensor broadcast(PeerId, const std::optional<Tensor>&) { todo("broadcast"); }
std::optional<Tensor> reduce(PeerId, const Tensor&, ReduceOperation, PeerId) { todo("reduce"); }
void finish_collective(PeerId) { todo("finish_collective"); }
void reset_collective() {}
}  // namespace ruccl
