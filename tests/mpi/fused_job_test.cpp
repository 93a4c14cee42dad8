// The MPI engine's fused all_reduce (at most MpiTransportOptions::fused_all_reduce_bytes: every
// rank's record with its data behind it, one MPI message per peer, then a local fold in the
// canonical order), as every process of the job sees it: our algorithms' bits on every rank, the
// size boundary, every mismatch kind found before any data is read, a Timeout naming the calls
// each rank reached, an abort waking the ranks that wait in it, and its order among sends and
// other collectives on the same group.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "collective/run_ranks.h"
#include "tensor/tensor.h"
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing::mpi_job;
using Kind = CollectiveErrorKind;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kLimit = MpiTransportOptions::kDefaultFusedAllReduceBytes;

/// A group of the job over the MPI engine whose fused all_reduces go up to `limit` bytes (record
/// and data in messages of at most `eager` bytes: MpiTransportOptions::eager_message_bytes).
Communicator group(std::size_t limit = kLimit, std::chrono::milliseconds timeout = 20s,
                   std::size_t eager = 0) {
  CommunicatorOptions options;
  options.timeout = timeout;
  MpiTransportOptions transport;
  transport.fused_all_reduce_bytes = limit;
  transport.eager_message_bytes = eager;
  return MpiGroup::world(Device::cpu(), options, transport);
}

/// Rank r's input: values with many significant bits, so the order of a sum shows.
Tensor noisy_input(int rank, std::int64_t n, DType dtype) {
  Generator gen(777 + static_cast<std::uint64_t>(rank));
  const Tensor x = Tensor::randn({n}, gen, DType::F32) * 1000.0;
  return dtype == DType::I32 || dtype == DType::I64 ? x.to(dtype) : x.to(dtype).contiguous();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 ||
          std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0);
}

/// The canonical bits: the same inputs reduced by W threads of this process (our algorithms).
Tensor reference(int world, int rank, std::int64_t n, DType dtype, ReduceOperation op) {
  std::vector<Tensor> out(static_cast<std::size_t>(world));
  run_ranks(InProcessGroup::create(world), [&](Communicator& c) {
    out[static_cast<std::size_t>(c.rank())] = c.all_reduce(noisy_input(c.rank(), n, dtype), op);
  });
  return out[static_cast<std::size_t>(rank)];
}

/// Runs `call` on a fresh group and requires `kind` on this rank (or Aborted naming `kind`'s
/// cause when `others_may_abort` and this rank only learns of it from a notice), then Aborted
/// from the next call: the group is finished on every rank.
template <typename Call>
CollectiveError provoke(Call call, Kind kind, bool others_may_abort = false) {
  Communicator comm = group(kLimit, 10s);
  const std::optional<CollectiveError> e = error_of([&] { call(comm); });
  REQUIRE(e.has_value());
  INFO(e->what());
  if (others_may_abort) {
    REQUIRE((e->kind() == kind || e->kind() == Kind::Aborted));
  } else {
    REQUIRE(e->kind() == kind);
  }
  const CollectiveError after = require_error(Kind::Aborted, [&] { comm.barrier(); });
  REQUIRE(contains(after.what(), "finished after an earlier error"));
  return *e;
}

}  // namespace

TEST_CASE("a fused MPI all_reduce gives our algorithms' bits on every process", "[mpi]") {
  Communicator comm = group();
  const int w = comm.world_size();
  const int r = comm.rank();
  const auto max_f32 = static_cast<std::int64_t>(kLimit / 4);
  struct Case {
    DType dtype;
    std::int64_t n;
    ReduceOperation op;
  };
  // F16 is fused by its F32 accumulation bytes; Mean divides once, at the end, like ours.
  const Case cases[] = {
      {DType::F32, 1, ReduceOperation::Sum},       {DType::F32, 7, ReduceOperation::Sum},
      {DType::F32, 1000, ReduceOperation::Mean},   {DType::F32, max_f32 - 1, ReduceOperation::Sum},
      {DType::F32, max_f32, ReduceOperation::Sum}, {DType::F64, max_f32 / 2, ReduceOperation::Sum},
      {DType::F64, 333, ReduceOperation::Max},     {DType::I32, 1001, ReduceOperation::Sum},
      {DType::I64, 64, ReduceOperation::Prod},     {DType::F16, max_f32, ReduceOperation::Sum},
      {DType::BF16, 100, ReduceOperation::Mean},   {DType::F32, 0, ReduceOperation::Sum}};
  for (const Case& c : cases) {
    INFO(c.n << " elements of " << c.dtype << ", " << reduce_operation_name(c.op));
    const Tensor got = comm.all_reduce(noisy_input(r, c.n, c.dtype), c.op);
    REQUIRE(same_bits(got, reference(w, r, c.n, c.dtype, c.op)));
    REQUIRE(same_bits(comm.broadcast(got, w - 1), got));  // the same bits on every process
  }
}

TEST_CASE("processes that send a fused all_reduce as one message or as two agree on its bits",
          "[mpi]") {
  // Rank r sends its record and data in pieces of 50 bytes (the record itself in two), as one
  // message always (SIZE_MAX) or as the default says (here: pieces of OpenMPI's shared-memory
  // eager limit less its headers, 4032 bytes), by r % 3: every receiver reassembles each
  // sender's form, at sizes on both sides of 4032 and of twice it (a record is about 80 bytes,
  // its data 16-byte aligned behind it).
  const std::size_t eagers[] = {50, SIZE_MAX, 0};
  const int r = job_rank();
  Communicator comm = group(kLimit, 20s, eagers[r % 3]);
  const int w = comm.world_size();
  for (const std::int64_t n :
       {1, 2, 980, 985, 990, 995, 1000, 1005, 1024, 1990, 2000, 4000, 8192}) {
    INFO(n << " F32 elements, eager limit " << eagers[r % 3]);
    const Tensor got = comm.all_reduce(noisy_input(r, n, DType::F32));
    REQUIRE(same_bits(got, reference(w, r, n, DType::F32, ReduceOperation::Sum)));
  }
  // Behind the split messages, the next calls of every kind still find their own messages.
  comm.send(Tensor::full({3}, r + 0.5), (r + 1) % w);
  REQUIRE(comm.recv((r + w - 1) % w).to_vector<float>() ==
          std::vector<float>(3, static_cast<float>((r + w - 1) % w) + 0.5f));
  const CollectiveError e = require_error(
      Kind::ShapeMismatch, [&] { comm.all_reduce(Tensor::full({r == w - 1 ? 1001 : 1000}, 1.0)); });
  REQUIRE(contains(e.what(), str("has [1001]")));
}

TEST_CASE("the shared-memory eager limit is read from OpenMPI's control variable", "[mpi]") {
  // This job's processes share one node, so OpenMPI opened its shared-memory BTL (vader).
  const char* set = std::getenv("OMPI_MCA_btl_vader_eager_limit");
  const std::size_t expected = set != nullptr ? std::strtoull(set, nullptr, 10) : 4096;
  REQUIRE(mpi::shared_memory_eager_limit() == expected);
  REQUIRE(mpi::node_hash() != 0);
}

TEST_CASE("one element over MpiTransportOptions::fused_all_reduce_bytes runs on MPI", "[mpi]") {
  // The last rank fuses 4 bytes less than the others: where exactly one side fuses, the records
  // agree but the messages do not, and every rank fails with PeerLost; elsewhere both sides take
  // the same path and the call succeeds. So the boundary is seen exactly, at two limits.
  for (const std::size_t limit : {std::size_t{1024}, kLimit}) {
    const auto at = static_cast<std::int64_t>(limit / 4);
    for (const std::int64_t n : {at - 2, at - 1, at, at + 1}) {
      INFO("limit " << limit << " bytes, " << n << " F32 elements");
      const int last = job_size() - 1;
      Communicator comm = group(job_rank() == last ? limit - 4 : limit);
      const Tensor x = Tensor::full({n}, 1.0, DType::F32);
      if (n == at) {
        const std::optional<CollectiveError> e = error_of([&] { comm.all_reduce(x); });
        REQUIRE(e.has_value());
        INFO(e->what());
        REQUIRE((e->kind() == Kind::PeerLost || e->kind() == Kind::Aborted));
        REQUIRE(contains(e->what(), "bytes of data behind its agreed record"));
      } else {
        const Tensor sum = comm.all_reduce(x);
        REQUIRE(sum.to_vector<float>() ==
                std::vector<float>(static_cast<std::size_t>(n), static_cast<float>(last + 1)));
      }
    }
  }
}

TEST_CASE("every mismatch of a fused MPI all_reduce is found before its data is read", "[mpi]") {
  const int last = job_size() - 1;
  SECTION("shapes, both fused") {
    const CollectiveError e =
        provoke([](Communicator& c) { c.all_reduce(Tensor::ones({c.rank() == 0 ? 3 : 5})); },
                Kind::ShapeMismatch);
    REQUIRE(contains(e.what(), "rank 0 has [3], rank 1 has [5]"));
  }
  SECTION("shapes, one fused and one on MPI") {
    const auto big = static_cast<std::int64_t>(kLimit) + 1;
    const CollectiveError e =
        provoke([&](Communicator& c) { c.all_reduce(Tensor::ones({c.rank() == last ? big : 4})); },
                Kind::ShapeMismatch);
    REQUIRE(contains(e.what(), str("has [", big, "]")));
  }
  SECTION("dtypes") {
    provoke(
        [](Communicator& c) {
          c.all_reduce(Tensor::ones({8}, c.rank() == 0 ? DType::F32 : DType::F64));
        },
        Kind::DTypeMismatch);
  }
  SECTION("reduce operations") {
    provoke(
        [&](Communicator& c) {
          c.all_reduce(Tensor::ones({8}),
                       c.rank() == last ? ReduceOperation::Max : ReduceOperation::Sum);
        },
        Kind::ReduceOperationMismatch);
  }
  SECTION("another collective") {
    const CollectiveError e = provoke(
        [](Communicator& c) {
          if (c.rank() == 1)
            c.all_gather(Tensor::ones({8}));
          else
            c.all_reduce(Tensor::ones({8}));
        },
        Kind::CollectiveKindMismatch);
    REQUIRE(contains(e.what(), "rank 1 has called all_gather"));
  }
  SECTION("a recv facing it") {
    // Rank 0 receives where rank 1's record (with its data) comes: "can never match". The
    // others learn of it in their all_reduce from rank 0's notice.
    provoke(
        [](Communicator& c) {
          if (c.rank() == 0)
            c.recv(1);
          else
            c.all_reduce(Tensor::ones({256}));
        },
        Kind::CollectiveKindMismatch, true);
  }
  SECTION("a send facing it") {
    // Rank 1 meets rank 0's message where a record belongs. Rank 0's send returns (its message
    // is copied), so its error comes from the barrier after it.
    Communicator comm = group(kLimit, 10s);
    if (comm.rank() == 0) {
      const std::optional<CollectiveError> e = error_of([&] { comm.send(Tensor::ones({64}), 1); });
      if (e) REQUIRE(e->kind() == Kind::CollectiveKindMismatch);
    } else {
      const std::optional<CollectiveError> e =
          error_of([&] { comm.all_reduce(Tensor::ones({64})); });
      REQUIRE(e.has_value());
      INFO(e->what());
      if (comm.rank() == 1) REQUIRE(e->kind() == Kind::CollectiveKindMismatch);
      REQUIRE(
          (contains(e->what(), "can never match") || contains(e->what(), "has called barrier")));
    }
    const std::optional<CollectiveError> e = error_of([&] { comm.barrier(); });
    REQUIRE(e.has_value());
    REQUIRE((e->kind() == Kind::Aborted || e->kind() == Kind::CollectiveKindMismatch));
  }
}

TEST_CASE("a fused MPI all_reduce that times out names the missing rank and its last call",
          "[mpi]") {
  Communicator comm = group(kLimit, 10s);
  const int late = comm.world_size() - 1;
  comm.barrier();  // call #1 on every rank
  if (comm.rank() == late) {
    std::this_thread::sleep_for(400ms);  // arrives after the others gave up
    const CollectiveError e =
        require_error(Kind::Aborted, [&] { comm.all_reduce(Tensor::ones({1024})); });
    REQUIRE(contains(e.what(), "timed out"));
    return;
  }
  const CollectiveError e = require_error(Kind::Timeout, [&] {
    comm.all_reduce(Tensor::ones({1024}), ReduceOperation::Sum, CallOptions().with_timeout(100ms));
  });
  INFO(e.what());
  REQUIRE(e.ranks() == std::vector<int>{late});
  REQUIRE(contains(e.what(), "all_reduce (call #2)"));
  REQUIRE(contains(e.what(), str("calls reached: rank(s) [")));
  REQUIRE(contains(e.what(),
                   str("rank(s) [", late, "] at #1 (missing from #2: rank(s) [", late, "])")));
}

TEST_CASE("an MPI abort wakes the processes waiting in a fused all_reduce", "[mpi]") {
  Communicator comm = group(kLimit, 20s);
  const int aborter = 0;
  using Clock = std::chrono::steady_clock;
  comm.barrier();
  const auto start = Clock::now();
  if (comm.rank() == aborter) {
    std::this_thread::sleep_for(150ms);
    comm.abort("stop the fused call");
  }
  const CollectiveError e =
      require_error(Kind::Aborted, [&] { comm.all_reduce(Tensor::ones({2048})); });
  REQUIRE(contains(e.what(), "stop the fused call"));
  if (comm.rank() != aborter) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    INFO("woke after " << waited.count() << " ms (the abort came at 150 ms)");
    REQUIRE(waited < 250ms);
  }
}

TEST_CASE("fused MPI all_reduces keep their order among sends and other collectives", "[mpi]") {
  Communicator comm = group();
  const int w = comm.world_size();
  const int r = comm.rank();
  const auto big = static_cast<std::int64_t>(kLimit);  // 4 * kLimit bytes: on MPI
  for (int round = 0; round < 3; ++round) {
    // A message to a peer is received before the next collective with it (both come in order).
    comm.send(Tensor::full({5}, 100.0 * r + round), (r + 1) % w);
    const Tensor got = comm.recv((r + w - 1) % w);
    const Tensor small = comm.all_reduce(Tensor::full({17}, r + 1.0));
    const Tensor large = comm.all_reduce(Tensor::full({big}, r + 1.0));
    const Tensor root = comm.broadcast(Tensor::full({3}, 7.0 + r), round % w);
    const float want = w * (w + 1) / 2.0f;
    REQUIRE(small.to_vector<float>() == std::vector<float>(17, want));
    REQUIRE(got.to_vector<float>() ==
            std::vector<float>(5, static_cast<float>(100.0 * ((r + w - 1) % w) + round)));
    REQUIRE(large.to_vector<float>() == std::vector<float>(static_cast<std::size_t>(big), want));
    REQUIRE(root.to_vector<float>() == std::vector<float>(3, 7.0f + round % w));
  }
}

TEST_CASE("a larger MPI all_reduce on up to four processes is pairwise, with our bits", "[mpi]") {
  Communicator comm = group();
  const int w = comm.world_size();
  const int r = comm.rank();
  const auto above = static_cast<std::int64_t>(kLimit / 4) + 1;  // the first pairwise size
  struct Case {
    DType dtype;
    std::int64_t n;
    ReduceOperation op;
  };
  // Chunk boundaries: sizes that W divides, and W * k + 1 .. W * k + W - 1 (uneven chunks).
  const Case cases[] = {{DType::F32, above, ReduceOperation::Sum},
                        {DType::F32, 12 * 4096, ReduceOperation::Sum},
                        {DType::F32, 12 * 4096 + 1, ReduceOperation::Mean},
                        {DType::F32, 12 * 4096 + 2, ReduceOperation::Sum},
                        {DType::F32, 12 * 4096 + 3, ReduceOperation::Min},
                        {DType::F64, 300001, ReduceOperation::Sum},
                        {DType::I32, above + 5, ReduceOperation::BitXor},
                        {DType::I64, above, ReduceOperation::Sum}};
  for (const Case& c : cases) {
    INFO(c.n << " elements of " << c.dtype << ", " << reduce_operation_name(c.op));
    const Tensor got = comm.all_reduce(noisy_input(r, c.n, c.dtype), c.op);
    if (w <= MpiTransportOptions::kPairwiseMaxWorld) {
      REQUIRE(same_bits(got, reference(w, r, c.n, c.dtype, c.op)));
    }
    REQUIRE(same_bits(comm.broadcast(got, 0), got));
  }
}

TEST_CASE("with pairwise_all_reduce_bytes at SIZE_MAX a larger all_reduce runs on MPI", "[mpi]") {
  CommunicatorOptions options;
  options.timeout = 20s;
  MpiTransportOptions transport;
  transport.pairwise_all_reduce_bytes = SIZE_MAX;
  Communicator comm = MpiGroup::world(Device::cpu(), options, transport);
  const int w = comm.world_size();
  const auto n = static_cast<std::int64_t>(kLimit);  // 4 * kLimit bytes
  const Tensor x = Tensor::arange(0, static_cast<double>(n), 1, DType::I64) + comm.rank();
  const std::vector<std::int64_t> got = comm.all_reduce(x).to_vector<std::int64_t>();
  for (std::int64_t i = 0; i < n; i += 997) {
    REQUIRE(got[static_cast<std::size_t>(i)] == w * i + w * (w - 1) / 2);
  }
  const Tensor mean =
      comm.all_reduce(Tensor::full({n}, comm.rank() * 2.0, DType::F64), ReduceOperation::Mean);
  REQUIRE(mean.to_vector<double>() == std::vector<double>(static_cast<std::size_t>(n), w - 1.0));
}

TEST_CASE("MPI ranks whose pairwise_all_reduce_bytes differ cannot make a group", "[mpi]") {
  CommunicatorOptions options;
  options.timeout = 20s;
  MpiTransportOptions transport;
  const int last = job_size() - 1;
  if (job_rank() == last) transport.pairwise_all_reduce_bytes = 1 << 20;
  const CollectiveError e = require_error(
      Kind::InvalidConfig, [&] { MpiGroup::world(Device::cpu(), options, transport); });
  REQUIRE(e.ranks() == std::vector<int>{last});
  REQUIRE(contains(e.what(), str("got 0 on rank 0 and 1048576 on rank ", last)));
}
