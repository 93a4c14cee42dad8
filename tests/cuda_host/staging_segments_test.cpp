// StagingTransport's overlap rule without a GPU: a send waits exactly for the staged segments its
// bytes fall in (covering_segments), none for bytes outside the staged buffer.
#include <catch2/catch.hpp>

#include "cuda/collective/staging_transport.h"

using ruccl::cuda::covering_segments;
using ruccl::cuda::SegmentRange;

TEST_CASE("a send of staged bytes waits for exactly the segments that hold them", "[staging]") {
  constexpr std::size_t kSeg = 1 << 20;
  constexpr std::size_t kStaged = 5 * kSeg + 123;  // six segments, the last one short
  CHECK(covering_segments(kStaged, kSeg, 0, 1) == SegmentRange{0, 1});
  CHECK(covering_segments(kStaged, kSeg, 0, kSeg) == SegmentRange{0, 1});
  CHECK(covering_segments(kStaged, kSeg, 0, kSeg + 1) == SegmentRange{0, 2});
  CHECK(covering_segments(kStaged, kSeg, kSeg - 1, 2) == SegmentRange{0, 2});
  CHECK(covering_segments(kStaged, kSeg, 3 * kSeg, kSeg) == SegmentRange{3, 4});
  CHECK(covering_segments(kStaged, kSeg, 5 * kSeg, 123) == SegmentRange{5, 6});
  CHECK(covering_segments(kStaged, kSeg, 0, kStaged) == SegmentRange{0, 6});
  // Bytes only partly inside: the part inside counts.
  CHECK(covering_segments(kStaged, kSeg, -10, 20) == SegmentRange{0, 1});
  CHECK(covering_segments(kStaged, kSeg, kStaged - 1, 100) == SegmentRange{5, 6});
  // Nothing staged is touched: no wait.
  CHECK(covering_segments(kStaged, kSeg, 0, 0) == SegmentRange{});
  CHECK(covering_segments(kStaged, kSeg, kStaged, 10) == SegmentRange{});
  CHECK(covering_segments(kStaged, kSeg, -100, 100) == SegmentRange{});
  CHECK(covering_segments(0, kSeg, 0, 10) == SegmentRange{});
}
