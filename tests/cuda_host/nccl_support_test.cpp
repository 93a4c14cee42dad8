// Host-side checks of the NCCL engine's pieces that need no GPU: the dtype/op mapping, the result
// code mapping, the unique id's encoding and its travel through a Store, and the refusals of
// NcclGroup and RUCCL_ENGINE=nccl.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "collective/store/in_memory_store.h"
#include "collective/tcp_group.h"
#include "cuda/collective/device_engine.h"
#include "cuda/collective/nccl_group.h"
#include "cuda/collective/nccl_support.h"
#include "cuda/core/device.h"

using namespace ruccl;
using namespace ruccl::cuda;

TEST_CASE("NCCL reduces every float and integer dtype but Bool, Mean as ncclAvg on floats only",
          "[nccl]") {
  CHECK(*nccl_dtype(DType::F32) == ncclFloat32);
  CHECK(*nccl_dtype(DType::BF16) == ncclBfloat16);
  CHECK(*nccl_dtype(DType::F16) == ncclFloat16);
  CHECK(*nccl_dtype(DType::I64) == ncclInt64);
  CHECK_FALSE(nccl_dtype(DType::Bool).has_value());
  CHECK(*nccl_op(ReduceOperation::Mean, DType::F32) == ncclAvg);
  CHECK(*nccl_op(ReduceOperation::Mean, DType::BF16) == ncclAvg);
  CHECK_FALSE(nccl_op(ReduceOperation::Mean, DType::I32).has_value());
  CHECK(*nccl_op(ReduceOperation::Max, DType::I32) == ncclMax);
  CHECK(*nccl_op(ReduceOperation::Prod, DType::F64) == ncclProd);
  for (ReduceOperation op :
       {ReduceOperation::BitAnd, ReduceOperation::BitOr, ReduceOperation::BitXor}) {
    CHECK_FALSE(nccl_op(op, DType::I64).has_value());
    CHECK_FALSE(nccl_runs(OpKind::AllReduce, DType::I64, op));
  }
  CHECK_FALSE(nccl_runs(OpKind::ReduceScatter, DType::Bool, ReduceOperation::Sum));
  // Data movement is bytes: any dtype, the op is irrelevant.
  CHECK(nccl_runs(OpKind::AllGather, DType::Bool, ReduceOperation::BitXor));
  CHECK(nccl_runs(OpKind::Broadcast, DType::Bool, ReduceOperation::Sum));
}

TEST_CASE("NCCL result codes map onto PeerLost, InvalidArgument and Aborted", "[nccl]") {
  CHECK(nccl_error_kind(ncclRemoteError) == CollectiveErrorKind::PeerLost);
  CHECK(nccl_error_kind(ncclSystemError) == CollectiveErrorKind::PeerLost);
  CHECK(nccl_error_kind(ncclInvalidArgument) == CollectiveErrorKind::InvalidArgument);
  CHECK(nccl_error_kind(ncclInvalidUsage) == CollectiveErrorKind::InvalidArgument);
  CHECK(nccl_error_kind(ncclUnhandledCudaError) == CollectiveErrorKind::Aborted);
  CHECK(nccl_error_kind(ncclInternalError) == CollectiveErrorKind::Aborted);
  const CollectiveError e =
      nccl_collective_error(ncclRemoteError, "ncclAllReduce of all_reduce (call 3)", "peer 1 gone");
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  const std::string what = e.what();
  INFO(what);
  CHECK(what.find("ncclAllReduce of all_reduce (call 3)") != std::string::npos);
  CHECK(what.find("ncclRemoteError") != std::string::npos);
  CHECK(what.find("peer 1 gone") != std::string::npos);
  CHECK(what.find("aborted") != std::string::npos);
}

TEST_CASE("an NCCL unique id survives its hex encoding and bad text is refused", "[nccl]") {
  ncclUniqueId id;
  for (std::size_t i = 0; i < sizeof id.internal; ++i) {
    id.internal[i] = static_cast<char>((i * 37 + 11) & 0xFF);
  }
  const std::string text = encode_unique_id(id);
  CHECK(text.size() == 2 * sizeof id.internal);
  const ncclUniqueId back = decode_unique_id(text);
  CHECK(std::equal(std::begin(id.internal), std::end(id.internal), std::begin(back.internal)));
  std::string upper = text;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const ncclUniqueId back_upper = decode_unique_id(upper);
  CHECK(
      std::equal(std::begin(id.internal), std::end(id.internal), std::begin(back_upper.internal)));
  auto kind_of = [](const std::string& bad) {
    try {
      (void)decode_unique_id(bad);
    } catch (const CollectiveError& e) {
      return e.kind();
    }
    return CollectiveErrorKind::Unsupported;  // not thrown
  };
  CHECK(kind_of(text.substr(1)) == CollectiveErrorKind::InvalidConfig);
  CHECK(kind_of(text + "0") == CollectiveErrorKind::InvalidConfig);
  std::string bad_digit = text;
  bad_digit[5] = 'g';
  CHECK(kind_of(bad_digit) == CollectiveErrorKind::InvalidConfig);
  CHECK_THROWS_WITH(decode_unique_id("xyz"), Catch::Contains("hex digits, got 3 characters"));
}

namespace {

int made = 0;
ncclUniqueId fake_id() {
  ncclUniqueId id{};
  ++made;
  for (std::size_t i = 0; i < sizeof id.internal; ++i) {
    id.internal[i] = static_cast<char>(made * 16 + static_cast<int>(i % 16));
  }
  return id;
}

}  // namespace

TEST_CASE("rank 0's unique id reaches every rank through the Store, a fresh one per group",
          "[nccl]") {
  made = 0;
  InMemoryStore store;
  constexpr int kRanks = 3;
  for (int group = 1; group <= 2; ++group) {
    std::vector<std::string> seen(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        const ncclUniqueId id = exchange_unique_id(
            store, r, Deadline::after(std::chrono::seconds(10), "test"), &fake_id);
        seen[static_cast<std::size_t>(r)] = encode_unique_id(id);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(made == group);  // only rank 0 makes one, once per group
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 1);
    CHECK(seen[0] ==
          store.get_string(unique_id_key(group), Deadline::after(std::chrono::seconds(1), "test")));
  }
}

TEST_CASE("a rank whose rank 0 never publishes the unique id times out naming the key", "[nccl]") {
  InMemoryStore store;
  CHECK_THROWS_WITH(exchange_unique_id(
                        store, 1, Deadline::after(std::chrono::milliseconds(50), "test"), &fake_id),
                    Catch::Contains(unique_id_key(1)));
}

TEST_CASE("NcclGroup refuses a CPU device, no devices and an absent GPU", "[nccl]") {
  auto store = std::make_shared<InMemoryStore>();
  try {
    (void)NcclGroup::connect(store, 0, 1, random_session_id(), Device::cpu());
    FAIL("NcclGroup::connect accepted a CPU device");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK_THAT(e.what(), Catch::Contains("expected a CUDA device") && Catch::Contains("cpu"));
  }
  CHECK_THROWS_WITH(NcclGroup::create({}), Catch::Contains("expected at least one device"));
  if (!cuda_available()) {
    // This machine has no GPU: the refusal names why (the driver's answer), never a crash.
    CHECK_THROWS_AS(NcclGroup::create({Device::cuda(0)}), DeviceError);
    CHECK_THROWS_WITH(NcclGroup::connect(store, 0, 1, random_session_id(), Device::cuda(0)),
                      Catch::Contains("expected a CUDA device, got none"));
  }
}

TEST_CASE("RUCCL_ENGINE=nccl is refused until the CUDA layer registers it, then chosen", "[nccl]") {
  const char* before = std::getenv("RUCCL_ENGINE");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("RUCCL_ENGINE", "nccl", 1);
  register_env_engine("nccl", {});  // as if not installed
  CHECK_THROWS_WITH(mpi_engine_from_env(),
                    Catch::Contains("got \"nccl\"") && Catch::Contains("-DRUCCL_WITH_CUDA=ON"));
  install_collectives();
  CHECK_FALSE(mpi_engine_from_env());  // nccl: neither MPI nor an error
  ::setenv("RUCCL_ENGINE", "nccl2", 1);
  CHECK_THROWS_AS(mpi_engine_from_env(), CollectiveError);
  if (before != nullptr) {
    ::setenv("RUCCL_ENGINE", saved.c_str(), 1);
  } else {
    ::unsetenv("RUCCL_ENGINE");
  }
}
