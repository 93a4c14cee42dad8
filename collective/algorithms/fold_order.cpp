// The canonical reduction order shared by every algorithm (see algorithm.h).
#include <vector>

#include "collective/algorithms/algorithm.h"

namespace ruccl {

void fold_chunk(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                std::size_t chunk, std::size_t length) {
  const std::size_t w = data.size();
  constexpr std::size_t kInline = 16;
  const void* inline_order[kInline];
  std::vector<const void*> heap_order;
  const void** order = inline_order;
  if (w > kInline) {
    heap_order.resize(w);
    order = heap_order.data();
  }
  for (std::size_t k = 0; k < w; ++k) order[k] = data[(chunk + 1 + k) % w];
  kernel.fold(out, std::span<const void* const>(order, w), length);
}

void fold_all_chunks(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                     std::size_t count) {
  const std::size_t w = data.size();
  const std::size_t es = kernel.element_size();
  std::vector<const void*> shifted(w);
  for (std::size_t c = 0; c < w; ++c) {
    const std::size_t begin = chunk_begin(c, count, w);
    const std::size_t length = chunk_size(c, count, w);
    if (length == 0) continue;
    for (std::size_t r = 0; r < w; ++r) {
      shifted[r] = static_cast<const unsigned char*>(data[r]) + begin * es;
    }
    fold_chunk(kernel, static_cast<unsigned char*>(out) + begin * es, shifted, c, length);
  }
}

}  // namespace ruccl
