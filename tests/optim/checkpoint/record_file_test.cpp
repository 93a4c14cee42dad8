#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/record_file.h"
#include "optim/checkpoint/tensor_blob.h"
#include "tests/optim/child_call.h"
#include "tests/optim/scratch_dir.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::optim::test_support::call_in_child;
using ruccl::optim::test_support::ChildOutcome;
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

/// Loads `path` in a child process (so a load that blocks or grows memory fails the test
/// instead of hanging it) and requires a prompt CheckpointError whose message has `reason`.
void require_refused(const std::filesystem::path& path, const std::string& reason) {
  const auto start = std::chrono::steady_clock::now();
  const ChildOutcome outcome = call_in_child([&] { (void)read_record_file(path); });
  INFO("loading " << path << " " << test_support::to_string(outcome.kind) << ": "
                  << outcome.message);
  CHECK(outcome.kind == ChildOutcome::Kind::CheckpointError);
  CHECK_THAT(outcome.message, Catch::Contains(path.string()) && Catch::Contains(reason) &&
                                  Catch::Contains("not a regular file"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

/// The names in `dir`.
std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
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
                    Catch::Contains(str("unsupported format version: expected ",
                                        kRecordFormatVersion, ", got ", kRecordFormatVersion + 1)));
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

TEST_CASE("loading a directory, a device or a FIFO without a writer is refused at once",
          "[optim]") {
  ScratchDir dir;
  require_refused(dir.path(), "is a directory");
  require_refused("/dev/zero", "is a character device");     // would grow memory without bound
  require_refused("/dev/urandom", "is a character device");  // likewise, and never ends
  const std::filesystem::path fifo = dir / "pipe.ckpt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  require_refused(fifo, "is a FIFO (named pipe)");  // a blocking open would wait for a writer
}

TEST_CASE("a symbolic link to a record file is followed and what it points to is checked",
          "[optim]") {
  ScratchDir dir;
  write_record_file(dir / "step10.rec", "ten");
  std::filesystem::create_symlink(dir / "step10.rec", dir / "latest.rec");
  CHECK(read_record_file(dir / "latest.rec") == "ten");
  std::filesystem::create_symlink("/dev/zero", dir / "zero.rec");
  require_refused(dir / "zero.rec", "is a character device");
  std::filesystem::create_symlink(dir / "gone.rec", dir / "dangling.rec");
  CHECK_THROWS_WITH(read_record_file(dir / "dangling.rec"),
                    Catch::Contains("dangling.rec") && Catch::Contains("does not exist"));
  // Saving to the link replaces the link by the new file; the old target stays as it was.
  write_record_file(dir / "latest.rec", "eleven");
  CHECK(!std::filesystem::is_symlink(dir / "latest.rec"));
  CHECK(read_record_file(dir / "latest.rec") == "eleven");
  CHECK(read_record_file(dir / "step10.rec") == "ten");
}

TEST_CASE("a record file whose name has NAME_MAX bytes is saved and loaded", "[optim]") {
  ScratchDir dir;
  const std::string name = std::string(NAME_MAX - 5, 'n') + ".ckpt";
  REQUIRE(name.size() == 255);
  write_record_file(dir / name, sample_payload());
  CHECK(read_record_file(dir / name) == sample_payload());
  write_record_file(dir / name, "again");  // over an existing file too
  CHECK(read_record_file(dir / name) == "again");
  CHECK(names_in(dir.path()) == std::vector<std::string>{name});
  // One byte more is not a legal name: the error names the file, and nothing is left behind.
  CHECK_THROWS_AS(write_record_file(dir / (name + "x"), "x"), CheckpointError);
  CHECK(names_in(dir.path()) == std::vector<std::string>{name});
}

TEST_CASE("a save that fails after creating its temporary file removes it", "[optim]") {
  ScratchDir dir;
  // rename() cannot replace a non-empty directory: the last step before the commit fails.
  std::filesystem::create_directories(dir / "taken" / "inside");
  CHECK_THROWS_WITH(write_record_file(dir / "taken", sample_payload()),
                    Catch::Contains("taken") && Catch::Contains("rename of the temporary file"));
  CHECK(names_in(dir.path()) == std::vector<std::string>{"taken"});
}

TEST_CASE("a tensor blob whose byte count wraps around 2^64 is refused before allocating",
          "[optim]") {
  // (2^62 + 20) F32 elements are 2^64 + 80 bytes: 80 modulo 2^64, the byte count of a [5, 4] blob.
  TensorBlob blob = TensorBlob::from_tensor(Tensor::zeros({5, 4}, DType::F32));
  REQUIRE(blob.bytes.size() == 80);
  blob.shape = {(std::int64_t{1} << 62) + 20, 1};
  CHECK_THROWS_AS(blob.validate(), CheckpointError);
  CHECK_THROWS_AS(blob.to_tensor(), CheckpointError);
  CHECK_THROWS_WITH(blob.to_tensor(), Catch::Contains("byte size") && Catch::Contains("overflows"));
  // 2^61 F64 elements wrap to 0 bytes: an empty blob.
  TensorBlob empty;
  empty.dtype = static_cast<std::uint8_t>(DType::F64);
  empty.shape = {std::int64_t{1} << 61};
  CHECK_THROWS_AS(empty.to_tensor(), CheckpointError);
  // An element count beyond int64 is refused as a CheckpointError too.
  empty.shape = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  CHECK_THROWS_AS(empty.to_tensor(), CheckpointError);
}
