#include "optim/checkpoint/recorded_buffers.h"

#include <map>
#include <set>

#include "optim/checkpoint/checkpoint_error.h"

namespace ruccl::optim {

std::vector<RecordedBuffer> capture_buffers(const nn::Module& model) {
  std::vector<RecordedBuffer> out;
  for (const auto& [path, b] : model.named_buffers()) {
    out.push_back({path, TensorBlob::from_tensor(b)});
  }
  return out;
}

void validate_buffers(const std::vector<RecordedBuffer>& buffers) {
  for (const RecordedBuffer& b : buffers) {
    try {
      b.value.validate();
    } catch (const CheckpointError& e) {
      throw CheckpointError(str("buffer '", b.path.substr(0, 256), "': ", e.what()));
    }
  }
}

std::vector<std::pair<std::string, Tensor>> buffers_to_restore(
    const std::vector<RecordedBuffer>& recorded, const nn::Module& model, const std::string& at) {
  std::map<std::string, const RecordedBuffer*> by_path;
  for (const RecordedBuffer& b : recorded) by_path.emplace(b.path, &b);
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<std::string> live;
  for (const auto& [path, b] : model.named_buffers()) {
    const auto it = by_path.find(path);
    RUCCL_CHECK(it != by_path.end(), CheckpointError, at, "the model's buffer '", path,
                "' is not in the record (",
                recorded.empty() ? "the record holds no buffers: it was saved from a model "
                                   "without any, or before records held them"
                                 : "the saved model did not have it",
                ")");
    const TensorBlob& blob = it->second->value;
    RUCCL_CHECK(blob.shape_value() == b.shape(), CheckpointError, at, "buffer '", path,
                "': expected shape ", b.shape(), ", the record has ", blob.shape_value());
    RUCCL_CHECK(blob.dtype_value() == b.dtype(), CheckpointError, at, "buffer '", path,
                "': expected dtype ", b.dtype(), ", the record has ", blob.dtype_value());
    live.insert(path);
    out.emplace_back(path, blob.to_tensor(b.device()));
  }
  for (const RecordedBuffer& b : recorded) {
    RUCCL_CHECK(live.count(b.path) != 0, CheckpointError, at, "the record's buffer '", b.path,
                "' is not in the model");
  }
  return out;
}

}  // namespace ruccl::optim
