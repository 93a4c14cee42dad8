#pragma once
// Reading the Fashion-MNIST files (IDX format, gzip-compressed) that Debian's
// dataset-fashion-mnist package installs in /usr/share/datasets/fashion-mnist/.
//
// IDX: a 4-byte big-endian magic (0x00000803: unsigned bytes, 3 dims, for images; 0x00000801 for
// labels), one big-endian uint32 per dim, then the bytes row-major. Every check failure raises a
// DatasetError naming the file, the problem and how to install the data.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tensor/core/error.h"

namespace ruccl::examples::fashion_mnist {

/// Where Debian's dataset-fashion-mnist puts the files.
inline const char* const kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

/// A missing, unreadable or malformed data file.
class DatasetError : public Error {
 public:
  using Error::Error;
};

/// Images (uint8, row-major [count, features]) and their class labels.
struct Dataset {
  std::int64_t count = 0;
  std::int64_t features = 0;  ///< pixels per image (784 for 28 x 28)
  std::int64_t classes = 10;
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;
};

namespace detail {

[[noreturn]] inline void fail(const std::filesystem::path& path, const std::string& why) {
  throw DatasetError(str("cannot use ", path, ": ", why,
                         ".\nInstall Fashion-MNIST with `apt-get install dataset-fashion-mnist` "
                         "(files in ",
                         kDefaultDataDir,
                         "), or pass --data DIR with the four "
                         "*-idx?-ubyte.gz files"));
}

/// The whole decompressed content of a gzip file (zlib checks the gzip CRC at the end).
inline std::string read_gzip(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "the file does not exist");
  // The gzip trailer's ISIZE (the uncompressed size mod 2^32) sizes the buffer up front, so the
  // 47 MB of training images are decompressed in place instead of through repeated regrowth.
  std::size_t expected = 0;
  {
    std::ifstream raw(path, std::ios::binary | std::ios::ate);
    const std::streamoff size = raw ? static_cast<std::streamoff>(raw.tellg()) : 0;
    if (size >= 18) {
      unsigned char trailer[4] = {};
      raw.seekg(size - 4);
      raw.read(reinterpret_cast<char*>(trailer), 4);
      expected = trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) |
                 (static_cast<std::size_t>(trailer[3]) << 24);
    }
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) fail(path, "the file cannot be opened");
  gzbuffer(file, 1 << 18);
  // The trailer is untrusted: no more than deflate's best ratio (about 1032:1) could produce.
  std::size_t compressed = 0;
  {
    std::error_code size_ec;
    compressed = static_cast<std::size_t>(std::filesystem::file_size(path, size_ec));
  }
  std::string out;
  out.resize(std::min<std::size_t>({expected, compressed * 1032, std::size_t{1} << 30}) + 1);
  std::size_t used = 0;
  while (true) {
    if (used == out.size()) out.resize(out.size() * 2);
    const auto want = static_cast<unsigned>(std::min<std::size_t>(out.size() - used, 1u << 30));
    const int n = gzread(file, out.data() + used, want);
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      fail(path, "corrupt gzip data (" + message + ")");
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  const int rc = gzclose(file);
  if (rc != Z_OK) fail(path, "corrupt gzip data (truncated or bad checksum)");
  return out;
}

inline std::uint32_t big_endian_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

/// The dims of an IDX file with `expected_dims` dims of unsigned bytes; checks the total size.
inline std::vector<std::int64_t> idx_dims(const std::filesystem::path& path,
                                          const std::string& bytes, std::uint32_t expected_dims) {
  const std::size_t header = 4 + 4 * expected_dims;
  if (bytes.size() < header)
    fail(path, str("too short for an IDX header (", bytes.size(), " bytes)"));
  const std::uint32_t magic = big_endian_u32(bytes, 0);
  if (magic != (0x0800u | expected_dims)) {
    fail(path, str("not an IDX file of ", expected_dims, "-d unsigned bytes (magic 0x", std::hex,
                   magic, ")"));
  }
  std::vector<std::int64_t> dims;
  std::uint64_t total = 1;
  for (std::uint32_t d = 0; d < expected_dims; ++d) {
    dims.push_back(big_endian_u32(bytes, 4 + 4 * d));
    total *= static_cast<std::uint64_t>(dims.back());
  }
  if (bytes.size() - header != total) {
    fail(path, str("expected ", total, " data bytes after the header, got ", bytes.size() - header,
                   " (truncated or corrupt)"));
  }
  return dims;
}

}  // namespace detail

/// Reads `<dir>/<split>-images-idx3-ubyte.gz` and `<dir>/<split>-labels-idx1-ubyte.gz` (split is
/// "train" or "t10k"). DatasetError when a file is missing, corrupt or inconsistent.
inline Dataset read_split(const std::filesystem::path& dir, const std::string& split) {
  const auto image_path = dir / (split + "-images-idx3-ubyte.gz");
  const auto label_path = dir / (split + "-labels-idx1-ubyte.gz");
  const std::string images = detail::read_gzip(image_path);
  const std::string labels = detail::read_gzip(label_path);
  const auto image_dims = detail::idx_dims(image_path, images, 3);
  const auto label_dims = detail::idx_dims(label_path, labels, 1);
  if (image_dims[0] != label_dims[0]) {
    detail::fail(label_path, str("holds ", label_dims[0], " labels but ", image_path.filename(),
                                 " holds ", image_dims[0], " images"));
  }
  Dataset d;
  d.count = image_dims[0];
  d.features = image_dims[1] * image_dims[2];
  d.pixels.assign(images.begin() + 16, images.end());
  d.labels.assign(labels.begin() + 8, labels.end());
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] >= d.classes) {
      detail::fail(label_path, str("label ", static_cast<int>(d.labels[i]), " of sample ", i,
                                   " is outside 0..9"));
    }
  }
  return d;
}

}  // namespace ruccl::examples::fashion_mnist
