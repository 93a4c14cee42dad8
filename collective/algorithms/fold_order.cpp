// The canonical reduction order shared by every algorithm (see algorithm.h).

#include <algorithm>

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

void fold_elements(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                   const ChunkLayout& layout, std::size_t first, std::size_t n) {
  const std::size_t w = data.size();
  const std::size_t es = kernel.element_size();
  const std::size_t end = first + n;
  RankVector<const void*> shifted(w);
  for (std::size_t c = 0; c < w; ++c) {
    const std::size_t lo = std::max(first, layout.begin(c));
    const std::size_t hi = std::min(end, layout.begin(c) + layout.size(c));
    if (lo >= hi) continue;
    const std::size_t skip = (lo - first) * es;
    for (std::size_t r = 0; r < w; ++r) {
      shifted[r] = static_cast<const unsigned char*>(data[r]) + skip;
    }
    fold_chunk(kernel, static_cast<unsigned char*>(out) + skip,
               std::span<const void* const>(shifted.data(), w), c, hi - lo);
  }
}

void fold_elements(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                   std::size_t count, std::size_t first, std::size_t n) {
  fold_elements(kernel, out, data, ChunkLayout(count, data.size()), first, n);
}

void fold_all_chunks(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                     std::size_t count) {
  fold_elements(kernel, out, data, count, 0, count);
}

}  // namespace ruccl
