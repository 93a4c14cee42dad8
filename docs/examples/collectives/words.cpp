// CallOptions words of docs/collectives.md: two ranks that disagree on a word fail on both ranks
// (the word is part of the agreed fingerprint); when they agree the all_gather runs.
#include <cstdio>
#include <vector>

#include "collective/collective.h"
using namespace ruccl;

int main() {
  std::vector<int> results(2, 0);
  for (const bool disagree : {false, true}) {
    std::vector<int> ok(2, 0);
    try {
      run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
        const Tensor x = Tensor::ones({2, 3});
        const std::int64_t axis = disagree ? comm.rank() : 1;
        const std::int64_t rg = 1;
        // doc-begin
        comm.all_gather(x, CallOptions()
                               .with_word("axis", axis)
                               .with_word("requires_grad", rg)
                               .with_label("all_gather_dim"));
        // doc-end
        ok[static_cast<std::size_t>(comm.rank())] = 1;
      });
    } catch (const CollectiveError& e) {
      if (!disagree) return 1;
    }
    if (ok != std::vector<int>(2, disagree ? 0 : 1)) return 1;
  }
  std::printf("OK: words\n");
}
