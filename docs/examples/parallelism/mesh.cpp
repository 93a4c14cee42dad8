// Groups and meshes of docs/parallelism.md: four ranks (threads) laid out as a 2x2 mesh; each
// rank sums over its "tp" row and averages over its "dp" column, and one more split makes the
// group of the ranks whose tp coordinate is 0. Checks every value it prints about.
#include <cstdio>
#include <vector>

#include "collective/collective.h"
using namespace ruccl;

int main() {
  std::vector<int> ok(4, 0);
  run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
    // doc-begin
    Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});  // rank r: dp = r / 2, tp = r % 2
    const Tensor x = Tensor::full({3}, static_cast<float>(comm.rank()));
    Tensor row = mesh.comm("tp").all_reduce(x);                         // ranks {0,1} or {2,3}
    Tensor col = mesh.comm("dp").all_reduce(x, ReduceOperation::Mean);  // {0,2} or {1,3}
    std::optional<Communicator> leaders =                               // {0, 2}; none on 1, 3
        comm.split(mesh.coordinate("tp") == 0 ? 0 : -1, comm.rank());
    // doc-end
    const int r = comm.rank();
    const float row_sum = r < 2 ? 0 + 1 : 2 + 3;
    const float col_mean = r % 2 == 0 ? (0 + 2) / 2.0f : (1 + 3) / 2.0f;
    bool good = row.to_vector<float>() == std::vector<float>(3, row_sum) &&
                col.to_vector<float>() == std::vector<float>(3, col_mean) &&
                leaders.has_value() == (r % 2 == 0) &&
                mesh.coordinates() == std::vector<int>{r / 2, r % 2};
    if (leaders) {
      const Tensor ranks = leaders->all_gather(Tensor::from_vector<float>({static_cast<float>(r)}));
      good = good && ranks.to_vector<float>() == std::vector<float>{0, 2};
    }
    ok[static_cast<std::size_t>(r)] = good ? 1 : 0;
  });
  if (ok != std::vector<int>(4, 1)) {
    std::printf("FAIL: mesh\n");
    return 1;
  }
  std::printf("OK: mesh\n");
}
