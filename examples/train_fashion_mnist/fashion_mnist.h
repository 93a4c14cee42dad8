#pragma once
// What train_fashion_mnist adds to the library's classifier trainer (optim/classifier_trainer.h):
// where Debian's dataset-fashion-mnist puts the files and how to say so when one is missing or
// bad, and the MLP it trains.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/sequential.h"
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

}  // namespace ruccl::examples::fashion_mnist
