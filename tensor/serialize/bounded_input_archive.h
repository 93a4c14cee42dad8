#pragma once
// BoundedInputArchive: reads what cereal::PortableBinaryOutputArchive wrote, from bytes held in
// memory, and never trusts a length it reads. cereal's own input archives resize a string or a
// vector to whatever count the stream claims before reading the elements, so eight damaged bytes
// can ask for exabytes (std::bad_alloc at best, an OOM kill or a sanitizer abort at worst). Here
// every container count is checked against the bytes that remain — each element we archive takes
// at least one byte — and every read against the end of the buffer, and a bool byte must be 0 or
// 1; all three throw cereal::Exception, which callers turn into their own typed error.
//
//   std::string bytes = ...;                      // written by PortableBinaryOutputArchive
//   ruccl::BoundedInputArchive archive(bytes);
//   archive(record);
//   if (archive.remaining() != 0) ...             // trailing bytes
//
// The buffer must outlive the archive. Byte order: the writer's flag (the first byte) is honoured,
// as PortableBinaryInputArchive does.
#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace ruccl {

class BoundedInputArchive
    : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit BoundedInputArchive(std::string_view bytes)
      : cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision>(this),
        bytes_(bytes) {
    std::uint8_t writer_little_endian = 0;
    (*this)(writer_little_endian);
    if (writer_little_endian > 1) {
      throw cereal::Exception("expected a byte-order flag of 0 or 1, got " +
                              std::to_string(writer_little_endian));
    }
    swap_ = (writer_little_endian == 1) != host_little_endian();
  }

  /// Bytes not read yet.
  std::size_t remaining() const { return bytes_.size() - pos_; }

  /// Copies `size` bytes (elements of `element_size` bytes, byte-swapped when the writer's order
  /// differs) into `data`; throws cereal::Exception when fewer remain.
  void read(void* data, std::size_t size, std::size_t element_size) {
    if (size > remaining()) {
      throw cereal::Exception("expected " + std::to_string(size) + " more bytes, only " +
                              std::to_string(remaining()) + " remain");
    }
    if (size == 0) return;  // data may be null for an empty container
    std::memcpy(data, bytes_.data() + pos_, size);
    pos_ += size;
    if (swap_ && element_size > 1) {
      auto* p = static_cast<unsigned char*>(data);
      for (std::size_t i = 0; i + element_size <= size; i += element_size) {
        for (std::size_t lo = 0, hi = element_size - 1; lo < hi; ++lo, --hi) {
          std::swap(p[i + lo], p[i + hi]);
        }
      }
    }
  }

  /// Reads a container's element count; refuses one that the remaining bytes cannot hold.
  std::uint64_t read_count() {
    std::uint64_t count = 0;
    read(&count, sizeof count, sizeof count);
    if (count > remaining()) {
      throw cereal::Exception("a container claims " + std::to_string(count) +
                              " elements but only " + std::to_string(remaining()) +
                              " bytes remain");
    }
    return count;
  }

 private:
  static bool host_little_endian() {
    const std::uint16_t probe = 1;
    unsigned char first = 0;
    std::memcpy(&first, &probe, 1);
    return first == 1;
  }

  std::string_view bytes_;
  std::size_t pos_ = 0;
  bool swap_ = false;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, T& t) {
  static_assert(!std::is_floating_point_v<T> || std::numeric_limits<T>::is_iec559,
                "BoundedInputArchive reads IEEE 754 floating point only");
  if constexpr (std::is_same_v<T, bool>) {
    // The writer stores a bool as one byte, 0 or 1. Anything else is damage, and copying it
    // into a bool would be undefined behaviour.
    static_assert(sizeof(bool) == 1, "PortableBinaryOutputArchive writes sizeof(bool) bytes");
    std::uint8_t byte = 0;
    ar.read(&byte, 1, 1);
    if (byte > 1) {
      throw cereal::Exception("expected a bool byte of 0 or 1, got " + std::to_string(byte));
    }
    t = byte == 1;
  } else {
    ar.read(&t, sizeof t, sizeof t);
  }
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::SizeTag<T>& t) {
  // PortableBinaryOutputArchive writes every size as a 64-bit integer.
  const std::uint64_t count = ar.read_count();
  using Size = std::remove_reference_t<T>;
  if (count > static_cast<std::uint64_t>(std::numeric_limits<Size>::max())) {
    throw cereal::Exception("a container count " + std::to_string(count) + " does not fit");
  }
  t.size = static_cast<Size>(count);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::BinaryData<T>& bd) {
  using Element = std::remove_cv_t<std::remove_pointer_t<T>>;
  std::size_t element_size = 1;  // raw bytes (void*): never swapped
  if constexpr (!std::is_void_v<Element>) element_size = sizeof(Element);
  ar.read(bd.data, static_cast<std::size_t>(bd.size), element_size);
}

}  // namespace ruccl

CEREAL_REGISTER_ARCHIVE(ruccl::BoundedInputArchive)
// Only the input-to-output direction: PortableBinaryOutputArchive already names its own input twin.
namespace cereal::traits::detail {
template <>
struct get_output_from_input<ruccl::BoundedInputArchive> {
  using type = cereal::PortableBinaryOutputArchive;
};
}  // namespace cereal::traits::detail
