#pragma once
// Labelled image datasets in the IDX format (MNIST's and Fashion-MNIST's), gzip-compressed.
//
// IDX: a 4-byte big-endian magic (0x00000803: unsigned bytes, 3 dims, for images; 0x00000801 for
// labels), one big-endian uint32 per dim, then the bytes row-major. Every check failure raises a
// DatasetError "cannot use <path>: <why>" naming the file and the problem.
//
//   LabelledImages train = read_idx_images(dir / "train-images-idx3-ubyte.gz",
//                                          dir / "train-labels-idx1-ubyte.gz", /*classes=*/10);
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tensor/core/error.h"

namespace ruccl::optim {

/// A missing, unreadable or malformed data file.
class DatasetError : public Error {
 public:
  using Error::Error;
};

/// Images (uint8, row-major [count, features]) and their class labels in [0, classes).
struct LabelledImages {
  std::int64_t count = 0;
  std::int64_t features = 0;  ///< pixels per image (784 for 28 x 28)
  std::int64_t classes = 10;
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;
};

/// The whole decompressed content of a gzip file (zlib checks the gzip CRC at the end).
/// DatasetError when the file is missing, cannot be opened or is corrupt.
std::string read_gzip_file(const std::filesystem::path& path);

/// The dims of the IDX file of unsigned bytes `bytes` (read from `path`, named in errors) that
/// must have `expected_dims` dims; checks the magic and that the data fills the dims exactly.
std::vector<std::int64_t> idx_dims(const std::filesystem::path& path, const std::string& bytes,
                                   std::uint32_t expected_dims);

/// Reads a gzip-compressed IDX pair: `images` (3-d unsigned bytes [count, rows, columns]) and
/// `labels` (1-d unsigned bytes [count], each below `classes`). DatasetError when a file is
/// missing, corrupt, not such an IDX file, or the two disagree.
LabelledImages read_idx_images(const std::filesystem::path& images,
                               const std::filesystem::path& labels, std::int64_t classes = 10);

}  // namespace ruccl::optim
