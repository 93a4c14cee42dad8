#include "collective/protocol/call_record.h"

#include <algorithm>

namespace ruccl {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Barrier:
      return "barrier";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::BroadcastFromSender:
      return "broadcast";
    case OpKind::AllReduce:
      return "all_reduce";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::AllGather:
      return "all_gather";
    case OpKind::ReduceScatter:
      return "reduce_scatter";
    case OpKind::Gather:
      return "gather";
    case OpKind::Scatter:
      return "scatter";
    case OpKind::AllToAll:
      return "all_to_all";
    case OpKind::AllToAllV:
      return "all_to_all_v";
  }
  return "unknown";
}

Shape CallRecord::shape() const {
  Shape s;
  for (int d = 0; d < ndim; ++d) s.push_back(dims[d]);
  return s;
}

void CallRecord::set_shape(const Shape& shape) {
  ndim = static_cast<std::int32_t>(shape.size());
  std::fill(std::begin(dims), std::end(dims), 0);
  for (int d = 0; d < ndim; ++d) dims[d] = shape[d];
}

}  // namespace ruccl
