#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "optim/checkpoint_error.h"
#include "optim/record_file.h"
#include "optim/tensor_blob.h"
#include "tests/optim/scratch_dir.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::optim::test_support::ScratchDir;

namespace {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string sample_payload() {
  std::string payload;
  for (int i = 0; i < 300; ++i) payload.push_back(static_cast<char>((i * 37 + 11) & 0xFF));
  return payload;
}

}  // namespace

TEST_CASE("a record file round-trips its payload and leaves no temporary file", "[optim]") {
  ScratchDir dir;
  const std::string payload = sample_payload();
  write_record_file(dir / "a.rec", payload);
  CHECK(read_record_file(dir / "a.rec") == payload);
  CHECK(std::filesystem::file_size(dir / "a.rec") == kRecordHeaderSize + payload.size());
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);

  // Overwriting replaces the whole file atomically.
  write_record_file(dir / "a.rec", "short");
  CHECK(read_record_file(dir / "a.rec") == "short");
  write_record_file(dir / "empty.rec", "");
  CHECK(read_record_file(dir / "empty.rec").empty());
}

TEST_CASE("a record file with any single flipped bit is refused naming the file", "[optim]") {
  ScratchDir dir;
  write_record_file(dir / "good.rec", sample_payload());
  const std::string good = read_bytes(dir / "good.rec");
  const std::filesystem::path bad = dir / "bad.rec";
  // Every bit of the header and every 7th bit of the payload.
  int refused = 0;
  int tried = 0;
  for (std::size_t bit = 0; bit < good.size() * 8; ++bit) {
    if (bit >= kRecordHeaderSize * 8 && bit % 7 != 0) continue;
    std::string damaged = good;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    write_bytes(bad, damaged);
    ++tried;
    try {
      read_record_file(bad);
      FAIL_CHECK("flipping bit " << bit << " was not detected");
    } catch (const CheckpointError& e) {
      const std::string message = e.what();
      if (message.find("bad.rec") == std::string::npos) {
        FAIL_CHECK("message does not name the file: " << message);
      }
      ++refused;
    }
  }
  CHECK(refused == tried);
}

TEST_CASE("a truncated or extended record file is refused with the reason", "[optim]") {
  ScratchDir dir;
  write_record_file(dir / "good.rec", sample_payload());
  const std::string good = read_bytes(dir / "good.rec");
  const std::filesystem::path bad = dir / "bad.rec";
  for (std::size_t length = 0; length < good.size(); ++length) {
    write_bytes(bad, good.substr(0, length));
    INFO("truncated to " << length << " bytes");
    CHECK_THROWS_WITH(read_record_file(bad),
                      Catch::Contains("truncated") && Catch::Contains("bad.rec"));
  }
  write_bytes(bad, good + "x");
  CHECK_THROWS_WITH(read_record_file(bad), Catch::Contains("unexpected bytes after the payload"));
  CHECK_THROWS_WITH(read_record_file(dir / "missing.rec"),
                    Catch::Contains("missing.rec") && Catch::Contains("does not exist"));
}

TEST_CASE("a record file of another format version is refused as such", "[optim]") {
  ScratchDir dir;
  write_record_file(dir / "good.rec", "payload");
  std::string bytes = read_bytes(dir / "good.rec");
  bytes[8] = static_cast<char>(kRecordFormatVersion + 1);
  // Re-seal the header checksum, as a future writer would.
  const std::uint32_t crc = crc32_of(std::string_view(bytes.data(), 28));
  for (int i = 0; i < 4; ++i) bytes[28 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  write_bytes(dir / "future.rec", bytes);
  CHECK_THROWS_WITH(read_record_file(dir / "future.rec"),
                    Catch::Contains("unsupported format version: expected 1, got 2"));
  write_bytes(dir / "text.rec", "this is not a checkpoint, just some text that is long enough");
  CHECK_THROWS_WITH(read_record_file(dir / "text.rec"), Catch::Contains("not a ruCCL checkpoint"));
}

TEST_CASE("a refused write leaves the previous file intact", "[optim]") {
  ScratchDir dir;
  write_record_file(dir / "a.rec", "first");
  CHECK_THROWS_AS(write_record_file(dir / "no_such_dir" / "a.rec", "second"), CheckpointError);
  CHECK(read_record_file(dir / "a.rec") == "first");
}

TEST_CASE("a tensor blob restores dtype, shape and bytes and rejects inconsistent data",
          "[optim]") {
  const Tensor t = Tensor::from_vector<double>({1.5, -2.0, 3.25, 4.0, 0.0, -0.5}, {2, 3});
  const TensorBlob blob = TensorBlob::from_tensor(t.transpose(0, 1));  // a strided view
  CHECK(blob.shape == std::vector<std::int64_t>{3, 2});
  const Tensor back = blob.to_tensor();
  CHECK(back.dtype() == DType::F64);
  CHECK(back.shape() == Shape{3, 2});
  CHECK(back.to_vector<double>() == std::vector<double>{1.5, 4.0, -2.0, 0.0, 3.25, -0.5});

  TensorBlob short_bytes = blob;
  short_bytes.bytes.pop_back();
  CHECK_THROWS_AS(short_bytes.to_tensor(), CheckpointError);
  TensorBlob bad_dtype = blob;
  bad_dtype.dtype = 200;
  CHECK_THROWS_AS(bad_dtype.to_tensor(), CheckpointError);
  TensorBlob negative = blob;
  negative.shape = {-3, -2};
  CHECK_THROWS_AS(negative.to_tensor(), CheckpointError);
}
