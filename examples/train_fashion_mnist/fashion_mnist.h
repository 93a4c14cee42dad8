#pragma once
// What train_fashion_mnist adds to the library's classifier trainer (optim/classifier_trainer.h):
// where Debian's dataset-fashion-mnist puts the files and how to say so when one is missing or
// bad, and the two models it trains (an MLP; a small conv net).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/batch_norm.h"
#include "autodiff/nn/conv.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/pool.h"
#include "autodiff/nn/sequential.h"
#include "autodiff/ops/shape.h"
#include "optim/data/idx_dataset.h"

namespace ruccl::examples::fashion_mnist {

/// Where Debian's dataset-fashion-mnist puts the files.
inline const char* const kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

/// Reads `<dir>/<split>-images-idx3-ubyte.gz` and `<dir>/<split>-labels-idx1-ubyte.gz` (split is
/// "train" or "t10k"). optim::DatasetError when a file is missing, corrupt or inconsistent, its
/// message saying how to install the data.
inline optim::LabelledImages read_split(const std::filesystem::path& dir,
                                        const std::string& split) {
  try {
    return optim::read_idx_images(dir / (split + "-images-idx3-ubyte.gz"),
                                  dir / (split + "-labels-idx1-ubyte.gz"), /*classes=*/10);
  } catch (const optim::DatasetError& e) {
    throw optim::DatasetError(str(e.what(),
                                  ".\nInstall Fashion-MNIST with `apt-get install "
                                  "dataset-fashion-mnist` (files in ",
                                  kDefaultDataDir,
                                  "), or pass --data DIR with the four *-idx?-ubyte.gz files"));
  }
}

/// The MLP: Linear + ReLU per hidden size, then Linear to the classes. ParamIds 1, 2, ... in
/// visit order (the same on every rank and every run).
inline std::shared_ptr<nn::Sequential> make_mlp(std::int64_t features,
                                                const std::vector<std::int64_t>& hidden,
                                                std::int64_t classes, std::uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  std::int64_t in = features;
  for (std::int64_t h : hidden) {
    model->push_back(std::make_shared<nn::Linear>(in, h, gen));
    model->push_back(std::make_shared<nn::ReLU>());
    in = h;
  }
  model->push_back(std::make_shared<nn::Linear>(in, classes, gen));
  model->assign_param_ids(1);
  return model;
}

/// The trainer hands models flat rows [n, 784] (optim/classifier_trainer.h); a conv net wants
/// images [n, 1, 28, 28]: dim 1 unflattened to {channels, height, width} (torch.nn.Unflatten).
class ImageView : public nn::Cloneable<ImageView> {
 public:
  ImageView(std::int64_t channels, std::int64_t height, std::int64_t width)
      : sizes_{channels, height, width} {}
  nn::Var forward(const nn::Var& x) override { return autodiff::unflatten(x, 1, sizes_); }

 private:
  std::vector<std::int64_t> sizes_;
};

/// Fashion-MNIST's images: 1 channel of 28 x 28.
inline constexpr std::int64_t kSide = 28;

/// The conv net (`--model cnn`): two blocks of Conv2d 3 x 3 (padding 1, no bias: the BatchNorm's
/// shift replaces it) + BatchNorm2d + ReLU + MaxPool2d 2 (1 -> 32 -> 64 channels, 28 -> 14 -> 7
/// pixels), then Linear 64*7*7 -> 128 + ReLU, Linear 128 -> classes. ParamIds 1, 2, ... in visit
/// order. Each rank's BatchNorm2d normalises over that rank's shard of the batch and keeps its own
/// running statistics (as PyTorch's BatchNorm2d under DDP without SyncBatchNorm).
/// bench/peers/fashion_mnist_torch.py --model cnn is the same net in PyTorch.
inline std::shared_ptr<nn::Sequential> make_cnn(std::int64_t classes, std::uint64_t seed) {
  const MaxPool2dSpec kPool{.kernel = 2, .stride = 2, .padding = 0, .dilation = 1};
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<ImageView>(1, kSide, kSide));
  std::int64_t in = 1;
  for (std::int64_t out : {32, 64}) {
    model->push_back(std::make_shared<nn::Conv2d>(in, out, 3, gen,
                                                  nn::Conv2dOptions{.padding = 1, .bias = false}));
    model->push_back(std::make_shared<nn::BatchNorm2d>(out));
    model->push_back(std::make_shared<nn::ReLU>());
    model->push_back(std::make_shared<nn::MaxPool2d>(kPool));
    in = out;
  }
  model->push_back(std::make_shared<nn::Flatten>());
  const std::int64_t side = kSide / 4;  // two 2 x 2 poolings
  model->push_back(std::make_shared<nn::Linear>(in * side * side, 128, gen));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(128, classes, gen));
  model->assign_param_ids(1);
  return model;
}

}  // namespace ruccl::examples::fashion_mnist
