#include "optim/rank_agreement.h"

#include <algorithm>
#include <cstring>

namespace ruccl::optim {

void append_word(std::string& out, std::int64_t value) {
  char bytes[sizeof(value)];
  std::memcpy(bytes, &value, sizeof(value));
  out.append(bytes, sizeof(value));
}

std::vector<std::vector<std::int64_t>> all_gather_words(Communicator& comm,
                                                        const std::vector<std::int64_t>& words,
                                                        const char* label) {
  const auto n = static_cast<std::int64_t>(words.size());
  const Tensor local = Tensor::from_vector<std::int64_t>(words, Shape{1, n}, comm.device());
  const std::vector<std::int64_t> all =
      comm.all_gather(local, CallOptions().with_label(label)).to_vector<std::int64_t>();
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(comm.world_size()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].assign(all.begin() + static_cast<std::ptrdiff_t>(r * words.size()),
                  all.begin() + static_cast<std::ptrdiff_t>((r + 1) * words.size()));
  }
  return out;
}

std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& text,
                                            const char* label) {
  const auto lengths = all_gather_words(comm, {static_cast<std::int64_t>(text.size())}, label);
  std::int64_t longest = 0;
  for (const auto& l : lengths) longest = std::max(longest, l[0]);
  const std::int64_t words = (longest + 7) / 8;
  std::vector<std::int64_t> packed(static_cast<std::size_t>(words), 0);
  if (!text.empty()) std::memcpy(packed.data(), text.data(), text.size());
  const auto gathered = all_gather_words(comm, packed, label);
  std::vector<std::string> out(gathered.size());
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].resize(static_cast<std::size_t>(lengths[r][0]));
    if (!out[r].empty()) std::memcpy(out[r].data(), gathered[r].data(), out[r].size());
  }
  return out;
}

}  // namespace ruccl::optim
