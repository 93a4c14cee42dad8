#pragma once
// The text train_char_lm learns: Debian's `fortunes` package (with fortunes-min), every English
// fortune file under /usr/share/games/fortunes concatenated in name order (the .dat and .u8 files
// are strfile's indexes and links, not text). Characters are bytes; the vocabulary is the bytes
// that occur, in byte order. The first 90 % is for training, the rest for validation.
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace ruccl::examples::char_lm {

inline constexpr const char* kDefaultDataDir = "/usr/share/games/fortunes";

/// The text as token ids, and the byte of each id.
struct Corpus {
  std::vector<std::int64_t> train;
  std::vector<std::int64_t> validation;
  std::vector<unsigned char> alphabet;  ///< id -> byte
  std::int64_t files = 0;
  std::int64_t bytes = 0;
};

/// Reads every fortune file of `dir`. std::runtime_error naming the directory and the package
/// when there is none.
inline Corpus read_corpus(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && !entry.is_symlink() && ext != ".dat" && ext != ".u8") {
      files.push_back(entry.path());
    }
  }
  if (ec || files.empty()) {
    throw std::runtime_error("no fortune files in \"" + dir.string() +
                             "\". Install them with `apt-get install fortunes fortunes-min`");
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::array<std::int64_t, 256> id{};
  id.fill(-1);
  Corpus c;
  for (unsigned char ch : text) id[ch] = 0;
  for (int b = 0; b < 256; ++b) {
    if (id[static_cast<std::size_t>(b)] == 0) {
      id[static_cast<std::size_t>(b)] = static_cast<std::int64_t>(c.alphabet.size());
      c.alphabet.push_back(static_cast<unsigned char>(b));
    }
  }
  const std::size_t split = text.size() * 9 / 10;
  for (std::size_t i = 0; i < text.size(); ++i) {
    (i < split ? c.train : c.validation).push_back(id[static_cast<unsigned char>(text[i])]);
  }
  c.files = static_cast<std::int64_t>(files.size());
  c.bytes = static_cast<std::int64_t>(text.size());
  return c;
}

}  // namespace ruccl::examples::char_lm
