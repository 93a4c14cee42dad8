// ruccl-gpu
// docs/cuda.md, "Streams": a pooled stream made current for a scope, then without one. Runs only
// where a GPU is (CTest label gpu).
#include <cstdio>

#include "cuda/core/stream.h"

int main() {
  const cudaStream_t before = ruccl::cuda::current_stream(0);
  // doc-begin
  cudaStream_t side = ruccl::cuda::new_stream(0);  // a pooled non-blocking stream of cuda:0
  {
    ruccl::cuda::StreamGuard guard(0, side);  // ops on cuda:0 now queue on `side`
    // ...
  }                                          // the previous current stream is back
  ruccl::cuda::set_current_stream(0, side);  // the same without a scope
  cudaStream_t now = ruccl::cuda::current_stream(0);
  // doc-end
  if (now != side || side == before) {
    std::printf("FAIL: streams: the current stream is not the pooled one\n");
    return 1;
  }
  ruccl::cuda::set_current_stream(0, before);
  std::printf("OK: streams\n");
  return 0;
}
