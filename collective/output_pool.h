#pragma once
// OutputPool: host memory for large collective outputs, reused across calls.
//
// Every collective returns a new tensor. Fresh large blocks from malloc come from mmap and pay a
// page fault per 4 KiB page on first touch -- on this project's virtual machines about 40 us per
// fault, 150 ms for 16 MiB, far more than the collective itself. So outputs of 256 KiB and more
// take their memory from a process-wide cache of blocks: a block returns to the cache when the
// last tensor using it dies, and the next output of the same size reuses it (already mapped).
// The cache keeps at most 512 MiB of idle blocks (the oldest are freed first).
#include "tensor/core/tensor.h"

namespace ruccl {

/// An uninitialised contiguous CPU tensor; its memory comes from the cache when it is large.
Tensor pooled_empty(const Shape& shape, DType dtype);

}  // namespace ruccl
