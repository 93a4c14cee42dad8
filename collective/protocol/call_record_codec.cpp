#include "collective/protocol/call_record_codec.h"

#include <algorithm>
#include <cstring>

#include "collective/common/collective_error.h"
#include "tensor/core/dtype.h"
#include "tensor/core/error.h"

namespace ruccl {

namespace {

constexpr std::size_t kFixedBytes = 28;
constexpr std::uint8_t kLastOpKind = static_cast<std::uint8_t>(OpKind::AllToAllV);
constexpr std::uint8_t kLastDType = static_cast<std::uint8_t>(DType::Bool);
constexpr std::uint8_t kLastErrorKind = static_cast<std::uint8_t>(CollectiveErrorKind::Unsupported);

// Writes fields front to back into bytes sized for them beforehand (one resize per record).
class Writer {
 public:
  explicit Writer(std::uint8_t* at) : at_(at) {}

  void u8(std::uint8_t v) { *at_++ = v; }
  void le(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) *at_++ = static_cast<std::uint8_t>(v >> (8 * i));
  }
  void text(const char* text, std::size_t n) {
    u8(static_cast<std::uint8_t>(n));
    std::memcpy(at_, text, n);
    at_ += n;
  }
  const std::uint8_t* at() const { return at_; }

 private:
  std::uint8_t* at_;
};

std::size_t text_length(const char* text, std::size_t capacity) {
  return strnlen(text, capacity - 1);
}

// Reads fields front to back; the first failure sticks and every later read is a no-op.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::uint64_t le(int n, const char* what) {
    if (!need(static_cast<std::size_t>(n), what)) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= std::uint64_t{bytes_[pos_ + static_cast<std::size_t>(i)]} << (8 * i);
    pos_ += static_cast<std::size_t>(n);
    return v;
  }
  void text(char* field, std::size_t capacity, const char* what) {
    const auto n = static_cast<std::size_t>(le(1, what));
    if (!error_.empty()) return;
    if (n >= capacity) {
      fail(str("CallRecord ", what, " of ", n, " bytes is longer than ", capacity - 1));
      return;
    }
    if (!need(n, what)) return;
    if (std::memchr(bytes_.data() + pos_, 0, n) != nullptr) {
      fail(str("CallRecord ", what, " contains a NUL byte"));
      return;
    }
    std::memcpy(field, bytes_.data() + pos_, n);
    field[n] = '\0';
    pos_ += n;
  }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  bool ok() const { return error_.empty(); }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& error() const { return error_; }

 private:
  bool need(std::size_t n, const char* what) {
    if (!error_.empty()) return false;
    if (remaining() < n) {
      fail(str("truncated CallRecord: ", what, " needs ", n, " bytes, ", remaining(), " left"));
      return false;
    }
    return true;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace

void encode_call_record(const CallRecord& r, std::vector<std::uint8_t>& out) {
  const int ndim = r.ndim < 0 ? -1 : std::min(r.ndim, Shape::kMaxDims);
  const int words = std::clamp(r.num_words, 0, CallRecord::kMaxWords);
  std::size_t names[CallRecord::kMaxWords] = {};
  std::size_t length = kFixedBytes - 4 + 8 * static_cast<std::size_t>(std::max(ndim, 0) + words);
  for (int w = 0; w < words; ++w) {
    names[w] = text_length(r.word_names[w], CallRecord::kWordNameBytes);
    length += 1 + names[w];
  }
  const std::size_t label = text_length(r.label, CallRecord::kLabelBytes);
  const std::size_t engine = text_length(r.engine, CallRecord::kEngineBytes);
  const std::size_t message = text_length(r.error_message, CallRecord::kMessageBytes);
  length += 3 + label + engine + message;
  const std::size_t start = out.size();
  out.resize(start + 4 + length);
  Writer put(out.data() + start);
  put.le(kCallRecordWireVersion, 2);
  put.le(length, 2);
  put.le(r.seq, 8);
  put.u8(static_cast<std::uint8_t>(r.kind));
  put.u8(r.dtype);
  put.u8(r.reduce_op);
  put.u8(r.has_tensor);
  put.u8(r.algorithm);
  put.u8(r.error_kind);
  put.u8(static_cast<std::uint8_t>(ndim + 1));
  put.u8(static_cast<std::uint8_t>(words));
  put.le(static_cast<std::uint32_t>(r.root), 4);
  put.le(static_cast<std::uint32_t>(r.tree_arity), 4);
  for (int d = 0; d < ndim; ++d) put.le(static_cast<std::uint64_t>(r.dims[d]), 8);
  for (int w = 0; w < words; ++w) put.le(static_cast<std::uint64_t>(r.words[w]), 8);
  for (int w = 0; w < words; ++w) put.text(r.word_names[w], names[w]);
  put.text(r.label, label);
  put.text(r.engine, engine);
  put.text(r.error_message, message);
  RUCCL_ASSERT(put.at() == out.data() + out.size());
}

std::string decode_call_record(std::span<const std::uint8_t> bytes, CallRecord& r) {
  r = CallRecord{};
  Reader in(bytes);
  const auto version = static_cast<std::uint16_t>(in.le(2, "the version"));
  if (in.ok() && version != kCallRecordWireVersion) {
    return str("unsupported CallRecord version ", version, " (expected ", kCallRecordWireVersion,
               ")");
  }
  const auto length = static_cast<std::size_t>(in.le(2, "the length"));
  if (in.ok() && length != in.remaining()) {
    return str("CallRecord length field says ", length, " bytes, ", in.remaining(), " follow");
  }
  r.seq = in.le(8, "seq");
  const auto kind = static_cast<std::uint8_t>(in.le(1, "kind"));
  r.dtype = static_cast<std::uint8_t>(in.le(1, "dtype"));
  r.reduce_op = static_cast<std::uint8_t>(in.le(1, "reduce_op"));
  r.has_tensor = static_cast<std::uint8_t>(in.le(1, "has_tensor"));
  r.algorithm = static_cast<std::uint8_t>(in.le(1, "algorithm"));
  r.error_kind = static_cast<std::uint8_t>(in.le(1, "error_kind"));
  const int ndim = static_cast<int>(in.le(1, "ndim")) - 1;
  const int words = static_cast<int>(in.le(1, "num_words"));
  r.root = static_cast<std::int32_t>(static_cast<std::uint32_t>(in.le(4, "root")));
  r.tree_arity = static_cast<std::int32_t>(static_cast<std::uint32_t>(in.le(4, "tree_arity")));
  if (!in.ok()) return in.error();
  if (kind > kLastOpKind) return str("CallRecord kind ", int{kind}, " is no collective");
  r.kind = static_cast<OpKind>(kind);
  if (r.dtype != CallRecord::kNone && r.dtype > kLastDType) {
    return str("CallRecord dtype ", int{r.dtype}, " is no DType");
  }
  if (r.has_tensor > 1) return str("CallRecord has_tensor ", int{r.has_tensor}, " is not 0 or 1");
  if (r.error_kind != CallRecord::kNone && r.error_kind > kLastErrorKind) {
    return str("CallRecord error_kind ", int{r.error_kind}, " is no CollectiveErrorKind");
  }
  if (ndim > Shape::kMaxDims) {
    return str("CallRecord ndim ", ndim, " out of range [0, ", Shape::kMaxDims, "]");
  }
  if (words > CallRecord::kMaxWords) {
    return str("CallRecord num_words ", words, " out of range [0, ", CallRecord::kMaxWords, "]");
  }
  r.ndim = ndim;
  r.num_words = words;
  for (int d = 0; d < ndim; ++d) {
    r.dims[d] = static_cast<std::int64_t>(in.le(8, "a dim"));
    if (in.ok() && r.dims[d] < 0) return str("CallRecord dim ", d, " is negative: ", r.dims[d]);
  }
  for (int w = 0; w < words; ++w) r.words[w] = static_cast<std::int64_t>(in.le(8, "a word"));
  for (int w = 0; w < words; ++w) in.text(r.word_names[w], CallRecord::kWordNameBytes, "word name");
  in.text(r.label, CallRecord::kLabelBytes, "label");
  in.text(r.engine, CallRecord::kEngineBytes, "engine");
  in.text(r.error_message, CallRecord::kMessageBytes, "error message");
  if (!in.ok()) return in.error();
  if (in.remaining() != 0)
    return str("CallRecord has ", in.remaining(), " unexpected bytes after it");
  return "";
}

}  // namespace ruccl
