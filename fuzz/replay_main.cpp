// The main of a fuzzer's replay test: feeds every file of the given corpus folders (or files) to
// the fuzzer's LLVMFuzzerTestOneInput, as libFuzzer would, with the ordinary compiler and no
// libFuzzer. A crash or a broken invariant (the fuzzer traps) fails the test; so does an empty or
// missing corpus, which would otherwise pass having checked nothing.
//
//   frame_header_fuzzer_replay fuzz/corpus/frame_header [more folders or files...]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// The input being replayed, named by the handler when it crashes (or traps: a fuzzer's broken
// invariant), then the signal is raised again with its default action.
std::string current_input;

extern "C" void name_the_input(int sig) {
  constexpr char kPrefix[] = "\nreplay: crashed on input ";
  (void)!write(STDERR_FILENO, kPrefix, sizeof kPrefix - 1);
  (void)!write(STDERR_FILENO, current_input.data(), current_input.size());
  (void)!write(STDERR_FILENO, "\n", 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_crash_handler() {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) {
    struct sigaction action = {};
    action.sa_handler = name_the_input;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

// Each input in its own heap block of exactly its size, so that a sanitizer build catches a
// read one byte past the end.
bool replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  current_input = file.string();
  auto block = std::make_unique<std::uint8_t[]>(bytes.size());
  std::copy(bytes.begin(), bytes.end(), block.get());
  LLVMFuzzerTestOneInput(block.get(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  install_crash_handler();
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_regular_file(arg, ec)) {
      if (!replay(arg)) return 1;
      ++replayed;
      continue;
    }
    if (!fs::is_directory(arg, ec)) {
      std::fprintf(stderr, "replay: %s is neither a file nor a folder\n", arg.c_str());
      return 1;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(arg)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());  // the same order on every run
    if (files.empty()) {
      std::fprintf(stderr, "replay: corpus %s is empty: nothing would be checked\n", arg.c_str());
      return 1;
    }
    for (const fs::path& file : files) {
      if (!replay(file)) return 1;
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs without a crash\n", replayed);
  return 0;
}
