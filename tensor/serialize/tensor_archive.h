#pragma once
// cereal serialization of Tensor and Generator for binary archives (cereal::BinaryOutputArchive,
// cereal::PortableBinaryOutputArchive and their input twins).
//
//   std::ostringstream os;
//   { cereal::BinaryOutputArchive ar(os); ar(tensor, generator); }
//   std::istringstream is(os.str());
//   { cereal::BinaryInputArchive ar(is); ar(tensor2, generator2); }
//
// Tensor format, version 1 (the header integers are written as the archive writes integers: host
// order for BinaryArchive, the archive's own order for PortableBinaryArchive):
//   u32 version (= kTensorFormatVersion)
//   u8  defined (0: an undefined Tensor(), nothing follows; 1: a tensor follows)
//   u8  dtype   (DType's value: F16 0, BF16 1, F32 2, F64 3, I32 4, I64 5, Bool 6)
//   u8  ndim    (0..Shape::kMaxDims)
//   i64 sizes[ndim]
//   u64 nbytes  (numel * dtype size)
//   nbytes of element data, row-major (contiguous), little-endian.
// Any strides and any device can be saved; a loaded tensor is contiguous and on the CPU.
// Loading checks everything and throws SerializationError (version, truncation, byte count),
// DTypeError (dtype code) or ShapeError (ndim, negative or overflowing sizes); a stream that
// claims a huge tensor fails when its data runs out, before that much memory is allocated.
#include <cereal/cereal.hpp>
#include <cereal/types/array.hpp>
#include <cstdint>
#include <vector>

#include "tensor/core/tensor.h"
#include "tensor/random/generator.h"
#include "tensor/serialize/serialize_error.h"

namespace ruccl {

/// The tensor format version save() writes and load() accepts.
inline constexpr std::uint32_t kTensorFormatVersion = 1;

namespace serialize_detail {

/// A contiguous CPU copy of `t`'s elements, little-endian.
std::vector<char> little_endian_bytes(const Tensor& t);
/// Checks a loaded header; returns the shape. Throws as described in the file comment.
Shape checked_shape(std::uint32_t version, std::uint8_t dtype_code,
                    const std::vector<std::int64_t>& sizes, std::uint64_t nbytes);
/// A CPU tensor of `shape` and `dtype` holding `bytes` (little-endian), finished as finish_load.
Tensor tensor_from_bytes(const Shape& shape, DType dtype, std::vector<char>&& bytes);
/// A CPU tensor to read small data straight into.
Tensor empty_for_load(const Shape& shape, DType dtype);
/// Converts loaded little-endian data to host order in place; checks Bool bytes are 0 or 1.
void finish_load(Tensor& t);
/// Data at most this large is read straight into the tensor; larger data is read in chunks, so
/// a truncated stream claiming a huge tensor fails before the memory is taken.
inline constexpr std::uint64_t kDirectReadBytes = std::uint64_t{64} << 20;
inline constexpr std::uint64_t kChunkBytes = std::uint64_t{16} << 20;

/// Runs `read` and turns cereal's end-of-stream exception into a SerializationError:
/// "<op>: expected <what>, got a truncated stream (...)".
template <typename Fn>
void read_or_throw(Fn&& read, const char* op, const std::string& what) {
  try {
    read();
  } catch (const cereal::Exception& e) {
    throw SerializationError(
        str(op, ": expected ", what, ", got a truncated stream (", e.what(), ")"));
  }
}

}  // namespace serialize_detail

/// Writes `t` (see the file comment for the format).
template <class Archive>
void save(Archive& ar, const Tensor& t) {
  ar(kTensorFormatVersion, static_cast<std::uint8_t>(t.defined() ? 1 : 0));
  if (!t.defined()) return;
  ar(static_cast<std::uint8_t>(t.dtype()), static_cast<std::uint8_t>(t.dim()));
  for (std::int64_t size : t.shape()) ar(size);
  std::vector<char> bytes = serialize_detail::little_endian_bytes(t);
  ar(static_cast<std::uint64_t>(bytes.size()));
  ar(cereal::binary_data(bytes.data(), bytes.size()));
}

/// Reads a tensor written by save(); validates everything before trusting it.
template <class Archive>
void load(Archive& ar, Tensor& t) {
  using namespace serialize_detail;
  std::uint32_t version = 0;
  std::uint8_t defined = 0;
  read_or_throw([&] { ar(version, defined); }, "Tensor load", "a tensor header");
  RUCCL_CHECK(version == kTensorFormatVersion, SerializationError,
              "Tensor load: expected format version ", kTensorFormatVersion, ", got ", version);
  RUCCL_CHECK(defined <= 1, SerializationError,
              "Tensor load: expected a defined flag of 0 or 1, got ", static_cast<int>(defined));
  if (defined == 0) {
    t = Tensor();
    return;
  }
  std::uint8_t dtype_code = 0;
  std::uint8_t ndim = 0;
  read_or_throw([&] { ar(dtype_code, ndim); }, "Tensor load", "a tensor header");
  RUCCL_CHECK(ndim <= Shape::kMaxDims, ShapeError, "Tensor load: expected at most ",
              Shape::kMaxDims, " dims, got ", static_cast<int>(ndim));
  std::vector<std::int64_t> sizes(ndim);
  std::uint64_t nbytes = 0;
  read_or_throw(
      [&] {
        for (std::int64_t& size : sizes) ar(size);
        ar(nbytes);
      },
      "Tensor load", "a tensor header");
  const Shape shape = checked_shape(version, dtype_code, sizes, nbytes);
  const auto dtype = static_cast<DType>(dtype_code);
  if (nbytes <= kDirectReadBytes) {
    Tensor out = empty_for_load(shape, dtype);
    if (nbytes > 0) {
      // As bytes: a char* prvalue. Not void*: a portable archive instantiates
      // loadBinary<sizeof(*p)>, and sizeof(void) is an error in standard C++ (clang; g++ accepts
      // it as an extension). Not an lvalue: binary_data would then hold a char*&, whose
      // "element" archives take to be 8 bytes wide and byte-swap.
      read_or_throw([&] { ar(cereal::binary_data(static_cast<char*>(out.data_ptr()), nbytes)); },
                    "Tensor load", str(nbytes, " bytes of tensor data"));
    }
    finish_load(out);
    t = std::move(out);
    return;
  }
  std::vector<char> bytes;
  for (std::uint64_t done = 0; done < nbytes;) {
    const std::uint64_t chunk = std::min(kChunkBytes, nbytes - done);
    bytes.resize(static_cast<std::size_t>(done + chunk));
    read_or_throw([&] { ar(cereal::binary_data(bytes.data() + done, chunk)); }, "Tensor load",
                  str(nbytes, " bytes of tensor data"));
    done += chunk;
  }
  t = tensor_from_bytes(shape, dtype, std::move(bytes));
}

/// Generator state: every field, in declaration order.
template <class Archive>
void serialize(Archive& ar, Generator::State& state) {
  ar(state.seed, state.counter, state.buffered, state.block, state.has_spare_normal,
     state.spare_normal);
}

/// A Generator is saved as its State; loading continues the stream where it was saved.
template <class Archive>
void save(Archive& ar, const Generator& gen) {
  const Generator::State state = gen.state();
  ar(state);
}

template <class Archive>
void load(Archive& ar, Generator& gen) {
  Generator::State state;
  serialize_detail::read_or_throw([&] { ar(state); }, "Generator load", "a generator state");
  gen.set_state(state);
}

}  // namespace ruccl
