// The canonical reduction order shared by every algorithm (see algorithm.h).

#include "collective/algorithms/algorithm.h"
#include "collective/algorithms/rank_vector.h"

namespace ruccl {

void fold_chunk(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                std::size_t chunk, std::size_t length) {
  const std::size_t w = data.size();
  RankVector<const void*> order(w);
  for (std::size_t k = 0; k < w; ++k) order[k] = data[(chunk + 1 + k) % w];
  kernel.fold(out, std::span<const void* const>(order.data(), w), length);
}

void fold_all_chunks(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                     std::size_t count) {
  const std::size_t w = data.size();
  const std::size_t es = kernel.element_size();
  RankVector<const void*> shifted(w);
  for (std::size_t c = 0; c < w; ++c) {
    const std::size_t begin = chunk_begin(c, count, w);
    const std::size_t length = chunk_size(c, count, w);
    if (length == 0) continue;
    for (std::size_t r = 0; r < w; ++r) {
      shifted[r] = static_cast<const unsigned char*>(data[r]) + begin * es;
    }
    fold_chunk(kernel, static_cast<unsigned char*>(out) + begin * es,
               std::span<const void* const>(shifted.data(), w), c, length);
  }
}

}  // namespace ruccl
