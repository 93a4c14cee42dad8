#include "optim/data/idx_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>

namespace ruccl::optim {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw DatasetError(str("cannot use ", path, ": ", why));
}

std::uint32_t big_endian_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

}  // namespace

std::string read_gzip_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "the file does not exist");
  // The gzip trailer's ISIZE (the uncompressed size mod 2^32) sizes the buffer up front, so the
  // 47 MB of Fashion-MNIST's training images are decompressed in place instead of through
  // repeated regrowth.
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

std::vector<std::int64_t> idx_dims(const std::filesystem::path& path, const std::string& bytes,
                                   std::uint32_t expected_dims) {
  const std::size_t header = 4 + 4 * expected_dims;
  if (bytes.size() < header) {
    fail(path, str("too short for an IDX header (", bytes.size(), " bytes)"));
  }
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

LabelledImages read_idx_images(const std::filesystem::path& images,
                               const std::filesystem::path& labels, std::int64_t classes) {
  RUCCL_CHECK(classes >= 1 && classes <= 256, ValueError,
              "read_idx_images: expected 1 to 256 classes (labels are bytes), got ", classes);
  const std::string image_bytes = read_gzip_file(images);
  const std::string label_bytes = read_gzip_file(labels);
  const auto image_dims = idx_dims(images, image_bytes, 3);
  const auto label_dims = idx_dims(labels, label_bytes, 1);
  if (image_dims[0] != label_dims[0]) {
    fail(labels, str("holds ", label_dims[0], " labels but ", images.filename(), " holds ",
                     image_dims[0], " images"));
  }
  LabelledImages d;
  d.count = image_dims[0];
  d.features = image_dims[1] * image_dims[2];
  d.classes = classes;
  d.pixels.assign(image_bytes.begin() + 16, image_bytes.end());
  d.labels.assign(label_bytes.begin() + 8, label_bytes.end());
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] >= d.classes) {
      fail(labels, str("label ", static_cast<int>(d.labels[i]), " of sample ", i, " is outside 0..",
                       d.classes - 1));
    }
  }
  return d;
}

}  // namespace ruccl::optim
