#include "collective/mpi/mpi_engine.h"

#include <array>
#include <climits>
#include <numeric>

#include "collective/algorithms/reduce_kernel.h"
#include "collective/mpi/mpi_runtime.h"

namespace ruccl {

namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::F64:
      return MPI_DOUBLE;
    case DType::I32:
      return MPI_INT32_T;
    case DType::I64:
      return MPI_INT64_T;
    default:
      return MPI_DATATYPE_NULL;  // never asked: native_reduction() said no
  }
}

MPI_Op mpi_op(ReduceOperation op) {
  switch (op) {
    case ReduceOperation::Sum:
    case ReduceOperation::Mean:  // Sum, then divided here
      return MPI_SUM;
    case ReduceOperation::Prod:
      return MPI_PROD;
    case ReduceOperation::Min:
      return MPI_MIN;
    case ReduceOperation::Max:
      return MPI_MAX;
    case ReduceOperation::BitAnd:
      return MPI_BAND;
    case ReduceOperation::BitOr:
      return MPI_BOR;
    case ReduceOperation::BitXor:
      return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

Tensor to_device(const Tensor& host, Device device) {
  return device.is_cpu() ? host : host.to(device);
}

/// Mean: the sum divided by the world size, in place (floating dtypes only, checked by the core).
void divide(Tensor& out, int world) {
  const auto n = static_cast<std::size_t>(out.numel());
  if (out.dtype() == DType::F32) {
    float* p = out.data<float>();
    const float w = static_cast<float>(world);
    for (std::size_t i = 0; i < n; ++i) p[i] /= w;
  } else {
    double* p = out.data<double>();
    const double w = static_cast<double>(world);
    for (std::size_t i = 0; i < n; ++i) p[i] /= w;
  }
}

int as_int(std::size_t n) { return static_cast<int>(n); }

bool fits_int(std::size_t n) { return n <= static_cast<std::size_t>(INT_MAX); }

/// The bytes of a record's tensor.
std::size_t record_bytes(const CallRecord& r) {
  return static_cast<std::size_t>(r.shape().numel()) * dtype_size(static_cast<DType>(r.dtype));
}

/// Every rank's tensor bytes together fit an MPI count (decided alike on every rank).
bool all_fit(const EngineCall& call) {
  std::size_t total = 0;
  for (const CallRecord& r : call.records) {
    if (r.ndim >= 0 && r.dtype != CallRecord::kNone) total += record_bytes(r);
  }
  return fits_int(total);
}

Shape gathered_shape(const Shape& shape, int world) {
  Shape out = shape.empty() ? Shape{1} : shape;
  out[0] = out[0] * world;
  return out;
}

}  // namespace

MpiEngine::MpiEngine(MpiTransport& transport, Device device, const CommunicatorOptions& options)
    : transport_(transport),
      device_(device),
      options_(options),
      fallback_(transport, device, options) {}

bool MpiEngine::supports(OpKind, DType, Device) const { return true; }

bool MpiEngine::sends_with_agreement(OpKind kind, Algorithm algorithm) const {
  // Every all_reduce: a small one sends its data with its record (fused_all_reduce); the others
  // complete the agreement first (agreed()) unless the fallback sends with it.
  return kind == OpKind::AllReduce || fallback_.sends_with_agreement(kind, algorithm);
}

bool MpiEngine::native_reduction(DType dtype, std::int64_t count) const {
  return !options_.require_bit_identical && mpi_type(dtype) != MPI_DATATYPE_NULL &&
         fits_int(static_cast<std::size_t>(count));
}

void MpiEngine::wait(MPI_Request request, const Tensor& in, const Tensor& out,
                     const EngineCall& call, const char* what) {
  // On a failure MPI may still read `in` and write `out`: they live as long as the request.
  auto keep = std::make_shared<std::array<Tensor, 2>>(std::array<Tensor, 2>{in, out});
  transport_.wait(std::span<MPI_Request>(&request, 1), keep, call.deadline(), what);
}

void MpiEngine::agreed(const EngineCall& call) {
  call.agreed();
  transport_.expect_payloads(0);  // nothing rode on the records
}

Tensor MpiEngine::all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (fused(call)) return fused_all_reduce(call, t, op);
  if (!native_reduction(t.dtype(), t.numel())) {
    if (!fallback_.sends_with_agreement(OpKind::AllReduce, call.algorithm())) agreed(call);
    return fallback_.all_reduce(call, t, op);
  }
  // A fold window (DataParallel's buckets) asks for the canonical order of its whole reduction:
  // our pairwise path or the fallback honour it, MPI's own reduction does not.
  const bool windowed = call.context.window.total > 0;
  if (transport_.world_size() <= MpiTransportOptions::kPairwiseMaxWorld && fits_int(t.nbytes()) &&
      (windowed || t.nbytes() >= transport_.options().pairwise_all_reduce_bytes)) {
    return pairwise_all_reduce(call, t, op);
  }
  if (windowed) {
    if (!fallback_.sends_with_agreement(OpKind::AllReduce, call.algorithm())) agreed(call);
    return fallback_.all_reduce(call, t, op);
  }
  agreed(call);
  const Tensor in = host_contiguous(t);
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Iallreduce(in.data_ptr(), out.data_ptr(), as_int(in.numel()), mpi_type(in.dtype()),
                            mpi_op(op), transport_.collective_comm(), &r),
             "MPI_Iallreduce");
  wait(r, in, out, call, "MPI_Iallreduce");
  if (op == ReduceOperation::Mean) divide(out, transport_.world_size());
  return to_device(out, device_);
}

std::optional<Tensor> MpiEngine::reduce(const EngineCall& call, const Tensor& t, int root,
                                        ReduceOperation op) {
  if (!native_reduction(t.dtype(), t.numel()) || call.context.window.total > 0) {
    return fallback_.reduce(call, t, root, op);  // a fold window: our order (all_reduce's note)
  }
  agreed(call);
  const Tensor in = host_contiguous(t);
  const bool is_root = transport_.rank() == root;
  Tensor out = is_root ? Tensor::empty(in.shape(), in.dtype()) : Tensor();
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ireduce(in.data_ptr(), is_root ? out.data_ptr() : nullptr, as_int(in.numel()),
                         mpi_type(in.dtype()), mpi_op(op), root, transport_.collective_comm(), &r),
             "MPI_Ireduce");
  wait(r, in, out, call, "MPI_Ireduce");
  if (!is_root) return std::nullopt;
  if (op == ReduceOperation::Mean) divide(out, transport_.world_size());
  return to_device(out, device_);
}

Tensor MpiEngine::reduce_scatter(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (!native_reduction(t.dtype(), t.numel())) return fallback_.reduce_scatter(call, t, op);
  agreed(call);
  const Tensor in = host_contiguous(t);
  Shape shard = in.shape();
  shard[0] = shard[0] / transport_.world_size();
  Tensor out = Tensor::empty(shard, in.dtype());
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(
      MPI_Ireduce_scatter_block(in.data_ptr(), out.data_ptr(), as_int(out.numel()),
                                mpi_type(in.dtype()), mpi_op(op), transport_.collective_comm(), &r),
      "MPI_Ireduce_scatter_block");
  wait(r, in, out, call, "MPI_Ireduce_scatter_block");
  if (op == ReduceOperation::Mean) divide(out, transport_.world_size());
  return to_device(out, device_);
}

Tensor MpiEngine::broadcast(const EngineCall& call, const Tensor& t, int root) {
  const CallRecord& rr = call.records[static_cast<std::size_t>(root)];
  if (!fits_int(record_bytes(rr))) return fallback_.broadcast(call, t, root);
  agreed(call);
  Tensor out = Tensor::empty(rr.shape(), static_cast<DType>(rr.dtype));
  if (transport_.rank() == root) {
    const Tensor in = host_contiguous(t);
    copy_bytes(out.data_ptr(), in.data_ptr(), out.nbytes());  // never the caller's memory
  }
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ibcast(out.data_ptr(), as_int(out.nbytes()), MPI_BYTE, root,
                        transport_.collective_comm(), &r),
             "MPI_Ibcast");
  wait(r, Tensor(), out, call, "MPI_Ibcast");
  return to_device(out, device_);
}

Tensor MpiEngine::all_gather(const EngineCall& call, const Tensor& t) {
  if (!all_fit(call)) return fallback_.all_gather(call, t);
  agreed(call);
  const Tensor in = host_contiguous(t);
  Tensor out = Tensor::empty(gathered_shape(in.shape(), transport_.world_size()), in.dtype());
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Iallgather(in.data_ptr(), as_int(in.nbytes()), MPI_BYTE, out.data_ptr(),
                            as_int(in.nbytes()), MPI_BYTE, transport_.collective_comm(), &r),
             "MPI_Iallgather");
  wait(r, in, out, call, "MPI_Iallgather");
  return to_device(out, device_);
}

std::optional<Tensor> MpiEngine::gather(const EngineCall& call, const Tensor& t, int root) {
  if (!all_fit(call)) return fallback_.gather(call, t, root);
  agreed(call);
  const Tensor in = host_contiguous(t);
  const bool is_root = transport_.rank() == root;
  Tensor out = is_root
                   ? Tensor::empty(gathered_shape(in.shape(), transport_.world_size()), in.dtype())
                   : Tensor();
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(
      MPI_Igather(in.data_ptr(), as_int(in.nbytes()), MPI_BYTE, is_root ? out.data_ptr() : nullptr,
                  as_int(in.nbytes()), MPI_BYTE, root, transport_.collective_comm(), &r),
      "MPI_Igather");
  wait(r, in, out, call, "MPI_Igather");
  if (!is_root) return std::nullopt;
  return to_device(out, device_);
}

Tensor MpiEngine::scatter(const EngineCall& call, const Tensor& t, int root) {
  const CallRecord& rr = call.records[static_cast<std::size_t>(root)];
  if (!fits_int(record_bytes(rr))) return fallback_.scatter(call, t, root);
  agreed(call);
  Shape block = rr.shape();
  block[0] = block[0] / transport_.world_size();
  Tensor out = Tensor::empty(block, static_cast<DType>(rr.dtype));
  const Tensor in = transport_.rank() == root ? host_contiguous(t) : Tensor();
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Iscatter(in.defined() ? in.data_ptr() : nullptr, as_int(out.nbytes()), MPI_BYTE,
                          out.data_ptr(), as_int(out.nbytes()), MPI_BYTE, root,
                          transport_.collective_comm(), &r),
             "MPI_Iscatter");
  wait(r, in, out, call, "MPI_Iscatter");
  return to_device(out, device_);
}

Tensor MpiEngine::all_to_all(const EngineCall& call, const Tensor& t) {
  if (!all_fit(call)) return fallback_.all_to_all(call, t);
  agreed(call);
  const Tensor in = host_contiguous(t);
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  const int block = as_int(in.nbytes() / static_cast<std::size_t>(transport_.world_size()));
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ialltoall(in.data_ptr(), block, MPI_BYTE, out.data_ptr(), block, MPI_BYTE,
                           transport_.collective_comm(), &r),
             "MPI_Ialltoall");
  wait(r, in, out, call, "MPI_Ialltoall");
  return to_device(out, device_);
}

AllToAllVResult MpiEngine::all_to_all_v(const EngineCall& call, const Tensor& t,
                                        std::span<const std::int64_t> send_counts) {
  if (!all_fit(call)) return fallback_.all_to_all_v(call, t, send_counts);
  agreed(call);
  const auto w = static_cast<std::size_t>(transport_.world_size());
  // The counts first: every rank learns how many rows each peer sends it.
  Tensor sent = Tensor::from_vector<std::int64_t>(
      std::vector<std::int64_t>(send_counts.begin(), send_counts.end()));
  Tensor received = Tensor::empty({static_cast<std::int64_t>(w)}, DType::I64);
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ialltoall(sent.data_ptr(), 1, MPI_INT64_T, received.data_ptr(), 1, MPI_INT64_T,
                           transport_.collective_comm(), &r),
             "MPI_Ialltoall");
  wait(r, sent, received, call, "MPI_Ialltoall (all_to_all_v counts)");
  std::vector<std::int64_t> recv_counts = received.to_vector<std::int64_t>();

  const Tensor in = host_contiguous(t);
  Shape out_shape = in.shape();
  out_shape[0] = std::accumulate(recv_counts.begin(), recv_counts.end(), std::int64_t{0});
  Tensor out = Tensor::empty(out_shape, in.dtype());
  std::size_t row_bytes = dtype_size(in.dtype());
  for (std::int64_t d = 1; d < in.dim(); ++d) row_bytes *= static_cast<std::size_t>(in.shape()[d]);
  std::vector<int> scount(w), sdispl(w), rcount(w), rdispl(w);
  std::size_t s = 0;
  std::size_t q = 0;
  for (std::size_t j = 0; j < w; ++j) {
    sdispl[j] = as_int(s);
    scount[j] = as_int(static_cast<std::size_t>(send_counts[j]) * row_bytes);
    s += static_cast<std::size_t>(scount[j]);
    rdispl[j] = as_int(q);
    rcount[j] = as_int(static_cast<std::size_t>(recv_counts[j]) * row_bytes);
    q += static_cast<std::size_t>(rcount[j]);
  }
  // MPI reads the count arrays until the request completes: they live with it.
  auto counts = std::make_shared<std::array<std::vector<int>, 4>>(std::array<std::vector<int>, 4>{
      std::move(scount), std::move(sdispl), std::move(rcount), std::move(rdispl)});
  auto& c = *counts;
  mpi::check(MPI_Ialltoallv(in.data_ptr(), c[0].data(), c[1].data(), MPI_BYTE, out.data_ptr(),
                            c[2].data(), c[3].data(), MPI_BYTE, transport_.collective_comm(), &r),
             "MPI_Ialltoallv");
  auto keep = std::make_shared<std::pair<std::array<Tensor, 2>, decltype(counts)>>(
      std::array<Tensor, 2>{in, out}, counts);
  transport_.wait(std::span<MPI_Request>(&r, 1), keep, call.deadline(), "MPI_Ialltoallv");
  AllToAllVResult result;
  result.output = to_device(out, device_);
  result.recv_counts = std::move(recv_counts);
  return result;
}

std::unique_ptr<CollectiveEngine> make_mpi_engine(Transport& transport, Device device,
                                                  const CommunicatorOptions& options) {
  auto* mpi = dynamic_cast<MpiTransport*>(&transport);
  if (mpi == nullptr) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          "make_mpi_engine: expected an MpiTransport (MpiGroup makes one), got "
                          "another transport");
  }
  return std::make_unique<MpiEngine>(*mpi, device, options);
}

}  // namespace ruccl
