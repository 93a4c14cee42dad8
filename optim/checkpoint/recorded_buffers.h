#pragma once
// The module buffers of a TrainingRecord (BatchNorm's running statistics, masks: Module::
// named_buffers): captured by path, checked against the model before a restore changes anything.
#include <string>
#include <utility>
#include <vector>

#include "autodiff/nn/module.h"
#include "optim/checkpoint/tensor_blob.h"

namespace ruccl::optim {

/// One module buffer as recorded: its dotted path (Module::named_buffers) and value.
struct RecordedBuffer {
  std::string path;
  TensorBlob value;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(path, value);
  }
};

/// Every buffer of `model`, in named_buffers() order.
std::vector<RecordedBuffer> capture_buffers(const nn::Module& model);

/// validate()s every recorded buffer's blob; CheckpointError naming the buffer otherwise.
void validate_buffers(const std::vector<RecordedBuffer>& buffers);

/// The values restore() gives `model`'s buffers, each on its buffer's device, after checking that
/// the model has exactly the recorded buffer paths, with the same shapes and dtypes.
/// CheckpointError otherwise, starting with `at` and naming the buffer (a record written before
/// the model had buffers holds none: it restores only a model without any).
std::vector<std::pair<std::string, Tensor>> buffers_to_restore(
    const std::vector<RecordedBuffer>& recorded, const nn::Module& model, const std::string& at);

}  // namespace ruccl::optim
