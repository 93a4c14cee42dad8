// The IDX reader (optim/data/idx_dataset.h): a good image and label pair reads back exactly, and
// every way a data file can be wrong is a DatasetError naming the file and the problem.
#include <zlib.h>
#include <catch2/catch.hpp>

#include <fstream>

#include "optim/data/idx_dataset.h"
#include "tests/optim/scratch_dir.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::optim::test_support::ScratchDir;

namespace {

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// An IDX file of unsigned bytes: magic 0x08 << 8 | ndims, the dims, then the data.
std::string idx(const std::vector<std::uint32_t>& dims, const std::string& data) {
  std::string out = be32(0x0800u | static_cast<std::uint32_t>(dims.size()));
  for (std::uint32_t d : dims) out += be32(d);
  return out + data;
}

void write_gzip(const std::filesystem::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Three 2 x 2 images with pixels 0..11 and labels 7, 0, 9.
void write_good(const ScratchDir& dir) {
  std::string pixels;
  for (int i = 0; i < 12; ++i) pixels += static_cast<char>(i);
  write_gzip(dir / "t10k-images-idx3-ubyte.gz", idx({3, 2, 2}, pixels));
  write_gzip(dir / "t10k-labels-idx1-ubyte.gz", idx({3}, std::string("\x07\x00\x09", 3)));
}

LabelledImages read_good(const ScratchDir& dir, std::int64_t classes = 10) {
  return read_idx_images(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz",
                         classes);
}

}  // namespace

TEST_CASE("read_idx_images reads an IDX image and label pair exactly", "[optim]") {
  ScratchDir dir;
  write_good(dir);
  const LabelledImages d = read_good(dir);
  CHECK(d.count == 3);
  CHECK(d.features == 4);
  CHECK(d.labels == std::vector<std::uint8_t>{7, 0, 9});
  REQUIRE(d.pixels.size() == 12);
  for (std::size_t i = 0; i < 12; ++i) CHECK(d.pixels[i] == i);
}

TEST_CASE("a missing, corrupt or inconsistent data file is a DatasetError naming it", "[optim]") {
  ScratchDir dir;
  write_good(dir);
  const auto images = dir / "t10k-images-idx3-ubyte.gz";
  const auto labels = dir / "t10k-labels-idx1-ubyte.gz";
  const auto refused = [&](const std::string& file, const std::string& why) {
    INFO(file << ": " << why);
    try {
      (void)read_good(dir);
      FAIL_CHECK("no DatasetError");
    } catch (const DatasetError& e) {
      CHECK_THAT(std::string(e.what()),
                 Catch::StartsWith("cannot use ") && Catch::Contains(file) && Catch::Contains(why));
    }
  };
  SECTION("missing") {
    std::filesystem::remove(labels);
    refused("t10k-labels-idx1-ubyte.gz", "the file does not exist");
  }
  SECTION("a truncated gzip stream") {
    const std::string gz = read_file(images);
    write_file(images, gz.substr(0, gz.size() - 6));
    refused("t10k-images-idx3-ubyte.gz", "corrupt gzip data");
  }
  SECTION("a gzip trailer claiming 4 GiB does not allocate it") {
    std::string gz = read_file(images);
    for (std::size_t i = gz.size() - 4; i < gz.size(); ++i) gz[i] = '\xff';  // ISIZE
    write_file(images, gz);
    refused("t10k-images-idx3-ubyte.gz", "corrupt gzip data");
  }
  SECTION("not an IDX file") {
    write_gzip(images, idx({3, 2}, std::string(6, '\0')));  // a 2-d file where 3-d belongs
    refused("t10k-images-idx3-ubyte.gz", "not an IDX file of 3-d unsigned bytes");
  }
  SECTION("too short for its header") {
    write_gzip(labels, std::string(2, '\0'));
    refused("t10k-labels-idx1-ubyte.gz", "too short for an IDX header (2 bytes)");
  }
  SECTION("fewer data bytes than the dims say") {
    write_gzip(images, idx({3, 2, 2}, std::string(11, '\1')));
    refused("t10k-images-idx3-ubyte.gz", "expected 12 data bytes after the header, got 11");
  }
  SECTION("labels and images disagree in count") {
    write_gzip(labels, idx({2}, std::string("\x01\x02", 2)));
    refused("t10k-labels-idx1-ubyte.gz", "holds 2 labels but");
  }
  SECTION("a label outside 0..9") {
    write_gzip(labels, idx({3}, std::string("\x01\x0c\x02", 3)));
    refused("t10k-labels-idx1-ubyte.gz", "label 12 of sample 1 is outside 0..9");
  }
}

TEST_CASE("read_idx_images checks labels against the number of classes it is given", "[optim]") {
  ScratchDir dir;
  write_good(dir);  // labels 7, 0, 9
  CHECK(read_good(dir, 10).classes == 10);
  CHECK_THROWS_AS(read_good(dir, 8), DatasetError);
  CHECK_THROWS_WITH(read_good(dir, 8), Catch::Contains("label 9 of sample 2 is outside 0..7"));
  CHECK_THROWS_AS(read_good(dir, 0), ValueError);
}
