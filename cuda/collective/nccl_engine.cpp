// NcclEngine (nccl_engine.h).
#include "cuda/collective/nccl_engine.h"

#include <chrono>
#include <numeric>
#include <thread>

#include "cuda/collective/device_streams.h"
#include "cuda/collective/nccl_support.h"
#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"

namespace ruccl::cuda {

namespace {

Shape gathered_shape(const Shape& shape, int world) {
  Shape out = shape.empty() ? Shape{1} : shape;
  out[0] = out[0] * world;
  return out;
}

}  // namespace

ncclResult_t NcclEngine::grouped(const std::vector<Transfer>& moves) {
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  for (const Transfer& m : moves) {
    if (m.nbytes == 0 || r != ncclSuccess) continue;  // an empty block moves nothing
    r = m.send ? ncclSend(m.data, m.nbytes, ncclUint8, m.peer, comm_->get(), stream_)
               : ncclRecv(m.data, m.nbytes, ncclUint8, m.peer, comm_->get(), stream_);
  }
  const ncclResult_t ended = ncclGroupEnd();
  return r != ncclSuccess ? r : ended;
}

NcclEngine::NcclEngine(Transport& control, Device device, const CommunicatorOptions& options,
                       std::shared_ptr<NcclComm> comm)
    : control_(control),
      device_(device),
      options_(options),
      comm_(std::move(comm)),
      fallback_(control, device, options) {
  DeviceGuard guard(device_.index);
  RUCCL_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
}

EngineFactory NcclEngine::split_engine(int color, int key) {
  std::shared_ptr<NcclComm> group =
      comm_->split(color, key, Deadline::after(options_.timeout, "split"), &control_);
  if (group == nullptr) return {};
  return [group](Transport& control, Device device, const CommunicatorOptions& options) {
    return std::make_unique<NcclEngine>(control, device, options, group);
  };
}

NcclEngine::~NcclEngine() {
  if (done_ != nullptr) (void)cudaEventDestroy(done_);
}

bool NcclEngine::supports(OpKind, DType, Device device) const { return device.is_cuda(); }

bool NcclEngine::native_reduction(DType dtype, ReduceOperation op) const {
  return !options_.require_bit_identical && nccl_op(op, dtype).has_value();
}

void NcclEngine::fail(ncclResult_t result, const EngineCall& call, const char* what) {
  const std::string detail = ncclGetLastError(comm_->get());
  comm_->abort();
  throw nccl_collective_error(
      result, str(what, " of ", call.label, " (call ", call.record.seq, ")"), detail);
}

template <typename Enqueue>
void NcclEngine::run(const EngineCall& call, const char* what, Enqueue&& enqueue) {
  call.agreed();
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the calling thread's current stream, read every call
  if (comm_->aborted()) {
    throw CollectiveError(CollectiveErrorKind::Aborted,
                          str(call.label,
                              ": the NCCL communicator was aborted by an earlier "
                              "failure"));
  }
  const ncclResult_t issued = enqueue();
  if (issued != ncclSuccess && issued != ncclInProgress) fail(issued, call, what);
  if (issued == ncclInProgress) {
    const ncclResult_t state = comm_->settle(what, call.deadline(), &control_);
    if (state != ncclSuccess) fail(state, call, what);
  }
  RUCCL_CUDA_CHECK(cudaEventRecord(done_, stream_));
  // The watchdog of this call: the stream, NCCL's asynchronous error, the control channel and
  // the deadline, polled until the collective completed.
  const auto started = Deadline::Clock::now();
  for (;;) {
    const cudaError_t status = cudaEventQuery(done_);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      comm_->abort();
      RUCCL_CUDA_CHECK(status);
    }
    ncclResult_t async = ncclSuccess;
    const ncclResult_t got = ncclCommGetAsyncError(comm_->get(), &async);
    if (got != ncclSuccess) fail(got, call, "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress) fail(async, call, what);
    if (control_.failed()) {
      comm_->abort();
      throw control_.failure();
    }
    const auto now = Deadline::Clock::now();
    if (call.deadline().expired(now)) {
      comm_->abort();
      throw CollectiveError(
          CollectiveErrorKind::Timeout,
          str(call.label, " (call ", call.record.seq, "): ", what, " did not complete within ",
              call.deadline().timeout().count(), " ms; the NCCL communicator was aborted"));
    }
    if (now - started < std::chrono::microseconds(100)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

Tensor NcclEngine::all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (!native_reduction(t.dtype(), op)) return fallback_.all_reduce(call, t, op);
  const Tensor in = t.contiguous();
  Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
  run(call, "ncclAllReduce", [&] {
    return ncclAllReduce(in.data_ptr(), out.data_ptr(), static_cast<std::size_t>(in.numel()),
                         *nccl_dtype(in.dtype()), *nccl_op(op, in.dtype()), comm_->get(), stream_);
  });
  return out;
}

std::optional<Tensor> NcclEngine::reduce(const EngineCall& call, const Tensor& t, int root,
                                         ReduceOperation op) {
  if (!native_reduction(t.dtype(), op)) return fallback_.reduce(call, t, root, op);
  const Tensor in = t.contiguous();
  const bool is_root = control_.rank() == root;
  Tensor out = is_root ? Tensor::empty(in.shape(), in.dtype(), device_) : Tensor();
  run(call, "ncclReduce", [&] {
    return ncclReduce(in.data_ptr(), is_root ? out.data_ptr() : nullptr,
                      static_cast<std::size_t>(in.numel()), *nccl_dtype(in.dtype()),
                      *nccl_op(op, in.dtype()), root, comm_->get(), stream_);
  });
  if (!is_root) return std::nullopt;
  return out;
}

Tensor NcclEngine::reduce_scatter(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (!native_reduction(t.dtype(), op)) return fallback_.reduce_scatter(call, t, op);
  const Tensor in = t.contiguous();
  Shape shard = in.shape();
  shard[0] = shard[0] / control_.world_size();
  Tensor out = Tensor::empty(shard, in.dtype(), device_);
  run(call, "ncclReduceScatter", [&] {
    return ncclReduceScatter(in.data_ptr(), out.data_ptr(), static_cast<std::size_t>(out.numel()),
                             *nccl_dtype(in.dtype()), *nccl_op(op, in.dtype()), comm_->get(),
                             stream_);
  });
  return out;
}

Tensor NcclEngine::broadcast(const EngineCall& call, const Tensor& t, int root) {
  const CallRecord& rr = call.records[static_cast<std::size_t>(root)];
  Tensor out = Tensor::empty(rr.shape(), static_cast<DType>(rr.dtype), device_);
  const bool is_root = control_.rank() == root;
  const Tensor in = is_root ? t.contiguous() : Tensor();
  run(call, "ncclBroadcast", [&] {
    return ncclBroadcast(is_root ? in.data_ptr() : nullptr, out.data_ptr(), out.nbytes(), ncclUint8,
                         root, comm_->get(), stream_);
  });
  return out;
}

Tensor NcclEngine::all_gather(const EngineCall& call, const Tensor& t) {
  const Tensor in = t.contiguous();
  Tensor out =
      Tensor::empty(gathered_shape(in.shape(), control_.world_size()), in.dtype(), device_);
  run(call, "ncclAllGather", [&] {
    return ncclAllGather(in.data_ptr(), out.data_ptr(), in.nbytes(), ncclUint8, comm_->get(),
                         stream_);
  });
  return out;
}

// gather, scatter and the all-to-alls are grouped ncclSend/ncclRecv (as c10d does): they work
// with every NCCL since 2.7, where ncclGather/ncclScatter/ncclAlltoAll need 2.28.
std::optional<Tensor> NcclEngine::gather(const EngineCall& call, const Tensor& t, int root) {
  const Tensor in = t.contiguous();
  const int w = control_.world_size();
  const bool is_root = control_.rank() == root;
  Tensor out =
      is_root ? Tensor::empty(gathered_shape(in.shape(), w), in.dtype(), device_) : Tensor();
  const std::size_t block = in.nbytes();
  run(call, "ncclSend/ncclRecv (gather)", [&]() -> ncclResult_t {
    std::vector<Transfer> moves;
    if (is_root) {
      for (int q = 0; q < w; ++q) {
        moves.push_back(
            {q, false,
             static_cast<unsigned char*>(out.data_ptr()) + static_cast<std::size_t>(q) * block,
             block});
      }
    }
    moves.push_back({root, true, in.data_ptr(), block});
    return grouped(moves);
  });
  if (!is_root) return std::nullopt;
  return out;
}

Tensor NcclEngine::scatter(const EngineCall& call, const Tensor& t, int root) {
  const CallRecord& rr = call.records[static_cast<std::size_t>(root)];
  const int w = control_.world_size();
  Shape block_shape = rr.shape();
  block_shape[0] = block_shape[0] / w;
  Tensor out = Tensor::empty(block_shape, static_cast<DType>(rr.dtype), device_);
  const bool is_root = control_.rank() == root;
  const Tensor in = is_root ? t.contiguous() : Tensor();
  const std::size_t block = out.nbytes();
  run(call, "ncclSend/ncclRecv (scatter)", [&]() -> ncclResult_t {
    std::vector<Transfer> moves;
    if (is_root) {
      for (int q = 0; q < w; ++q) {
        moves.push_back(
            {q, true,
             static_cast<unsigned char*>(in.data_ptr()) + static_cast<std::size_t>(q) * block,
             block});
      }
    }
    moves.push_back({root, false, out.data_ptr(), block});
    return grouped(moves);
  });
  return out;
}

Tensor NcclEngine::all_to_all(const EngineCall& call, const Tensor& t) {
  const Tensor in = t.contiguous();
  Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
  const int w = control_.world_size();
  const std::size_t block = in.nbytes() / static_cast<std::size_t>(w);
  run(call, "ncclSend/ncclRecv (all_to_all)", [&]() -> ncclResult_t {
    std::vector<Transfer> moves;
    for (int q = 0; q < w; ++q) {
      const std::size_t at = static_cast<std::size_t>(q) * block;
      moves.push_back({q, true, static_cast<unsigned char*>(in.data_ptr()) + at, block});
      moves.push_back({q, false, static_cast<unsigned char*>(out.data_ptr()) + at, block});
    }
    return grouped(moves);
  });
  return out;
}

AllToAllVResult NcclEngine::all_to_all_v(const EngineCall& call, const Tensor& t,
                                         std::span<const std::int64_t> send_counts) {
  const auto w = static_cast<std::size_t>(control_.world_size());
  // The counts first, through NCCL too: every rank learns how many rows each peer sends it.
  const Tensor sent = Tensor::from_vector<std::int64_t>(
      std::vector<std::int64_t>(send_counts.begin(), send_counts.end()), device_);
  Tensor received = Tensor::empty({static_cast<std::int64_t>(w)}, DType::I64, device_);
  run(call, "ncclSend/ncclRecv (all_to_all_v counts)", [&]() -> ncclResult_t {
    std::vector<Transfer> moves;
    for (std::size_t q = 0; q < w; ++q) {
      const std::size_t at = q * sizeof(std::int64_t);
      moves.push_back({static_cast<int>(q), true, static_cast<unsigned char*>(sent.data_ptr()) + at,
                       sizeof(std::int64_t)});
      moves.push_back({static_cast<int>(q), false,
                       static_cast<unsigned char*>(received.data_ptr()) + at,
                       sizeof(std::int64_t)});
    }
    return grouped(moves);
  });
  std::vector<std::int64_t> recv_counts = received.to(Device::cpu()).to_vector<std::int64_t>();
  const Tensor in = t.contiguous();
  Shape out_shape = in.shape();
  out_shape[0] = std::accumulate(recv_counts.begin(), recv_counts.end(), std::int64_t{0});
  Tensor out = Tensor::empty(out_shape, in.dtype(), device_);
  std::size_t row = dtype_size(in.dtype());
  for (std::int64_t d = 1; d < in.dim(); ++d) row *= static_cast<std::size_t>(in.shape()[d]);
  run(call, "ncclSend/ncclRecv (all_to_all_v)", [&]() -> ncclResult_t {
    std::vector<Transfer> moves;
    std::size_t s = 0;
    std::size_t q = 0;
    for (std::size_t j = 0; j < w; ++j) {
      const std::size_t sb = static_cast<std::size_t>(send_counts[j]) * row;
      const std::size_t rb = static_cast<std::size_t>(recv_counts[j]) * row;
      moves.push_back(
          {static_cast<int>(j), true, static_cast<unsigned char*>(in.data_ptr()) + s, sb});
      moves.push_back(
          {static_cast<int>(j), false, static_cast<unsigned char*>(out.data_ptr()) + q, rb});
      s += sb;
      q += rb;
    }
    return grouped(moves);
  });
  AllToAllVResult result;
  result.output = out;
  result.recv_counts = std::move(recv_counts);
  return result;
}

}  // namespace ruccl::cuda
