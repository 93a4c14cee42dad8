#include "optim/checkpoint/caller_state.h"

namespace ruccl::optim {

const char* caller_value_type(const CallerValue& value) {
  static constexpr const char* kNames[] = {"int64", "double", "string", "tensor",
                                           "generator state"};
  static_assert(std::size(kNames) == std::variant_size_v<CallerValue>);
  return kNames[value.index()];
}

void CallerState::set(const std::string& name, const Tensor& value) {
  RUCCL_CHECK(value.defined(), ValueError, "CallerState::set: '", name,
              "': expected a defined tensor, got an undefined one");
  put(name, TensorBlob::from_tensor(value));
}

void CallerState::put(const std::string& name, CallerValue value) {
  RUCCL_CHECK(!name.empty(), ValueError, "CallerState::set: expected a non-empty name");
  values.insert_or_assign(name, std::move(value));
}

const CallerValue& CallerState::find(const std::string& name, std::size_t index,
                                     const char* type) const {
  const auto it = values.find(name);
  if (it == values.end()) {
    std::string names;
    for (const auto& [key, v] : values) names += str(names.empty() ? "" : ", ", "'", key, "'");
    throw ValueError(str("CallerState::get<", type, ">: no value named '", name, "' (",
                         names.empty() ? std::string("the record holds no named values")
                                       : str("the record holds ", names),
                         ")"));
  }
  RUCCL_CHECK(it->second.index() == index, ValueError, "CallerState::get<", type, ">: '", name,
              "' holds type ", caller_value_type(it->second), ", not ", type);
  return it->second;
}

}  // namespace ruccl::optim
