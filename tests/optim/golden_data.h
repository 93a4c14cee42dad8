#pragma once
// Reads the golden text files written by tools/golden/optim_golden.py: one record per line,
// `key value value ...`; lines starting with '#' are comments.
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
#include "tests/support/test_data_dir.h"

namespace ruccl::optim::test_support {

/// One line of a golden file: its key and the numbers after it (non-numeric words are kept too).
struct GoldenLine {
  std::string key;
  std::vector<std::string> words;

  /// The words as doubles (throws when a word is not a number).
  std::vector<double> numbers() const {
    std::vector<double> out;
    out.reserve(words.size());
    for (const std::string& w : words) out.push_back(std::stod(w));
    return out;
  }
};

/// Every non-comment line of golden file `name` (tests/support/test_data_dir.h).
inline std::vector<GoldenLine> read_golden(const std::string& name) {
  const std::string path = ruccl::testing::test_data_path(name);
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  std::vector<GoldenLine> lines;
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream words(text);
    GoldenLine line;
    words >> line.key;
    for (std::string w; words >> w;) line.words.push_back(w);
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace ruccl::optim::test_support
