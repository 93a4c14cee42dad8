#pragma once
// Launch shapes of the CUDA kernels: how many blocks a grid-stride loop gets, from the current
// device's multiprocessor count (queried once per device).
#include <cstdint>

namespace ruccl::cuda {

/// Multiprocessors of the current device (cudaDevAttrMultiProcessorCount, cached per device).
int multiprocessor_count();

/// Blocks of `threads` threads that keep every multiprocessor of the current device full (2048
/// resident threads each) twice over: the cap of a grid-stride loop's grid.
std::int64_t max_resident_blocks(int threads);

}  // namespace ruccl::cuda
