// The sharded-checkpoint snippets of docs/training.md: a weight [8, 4] saved by 4 ranks (two rows
// each) and read back by 2 ranks (four rows each, from two files each) and whole.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "collective/collective.h"
#include "optim/optim.h"
#include "tensor/tensor.h"
using namespace ruccl;
using namespace ruccl::optim;

int main() {
  const Tensor weight = Tensor::arange(0, 32, 1, DType::F32).reshape({8, 4});
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ruccl_doc_sharded_" + std::to_string(::getpid()));
  const std::uint64_t id = 1;  // the parameter's ParamId
  run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
    const std::int64_t r = comm.rank();
    const Tensor my_rows = weight.narrow(0, 2 * r, 2).contiguous();
    // doc-begin
    // save on W ranks: each passes the shards it holds (a collective)
    ShardedCheckpoint::save(comm, dir,
                            {{.name = "fc.weight",
                              .param_id = id,
                              .global_shape = {8, 4},
                              .box = ShardBox::along({8, 4}, 0, 2 * r, 2),
                              .value = my_rows}});
    // doc-end
  });
  std::atomic<bool> ok{true};
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const std::int64_t r = comm.rank();
    // doc-begin
    // load on W' ranks: each reads the box it now holds, from whichever files hold it
    ShardedCheckpoint ckpt = ShardedCheckpoint::open_on_every_rank(comm, dir);
    Tensor mine = ckpt.read("fc.weight", ShardBox::along({8, 4}, 0, 4 * r, 4));
    std::map<std::string, Tensor> whole = ckpt.consolidate();  // the unsharded tensors
    // doc-end
    const auto same = [](const Tensor& a, const Tensor& b) {
      return a.shape() == b.shape() && a.to_vector<float>() == b.contiguous().to_vector<float>();
    };
    if (!same(mine, weight.narrow(0, 4 * r, 4)) || !same(whole.at("fc.weight"), weight)) {
      std::printf("rank %lld: the shards read back differ from the saved weight\n",
                  static_cast<long long>(r));
      ok = false;
    }
  });
  std::filesystem::remove_all(dir);
  if (!ok) return 1;
  std::printf("OK: sharded_checkpoint\n");
  return 0;
}
