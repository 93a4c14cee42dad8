#include "collective/common/rank_names.h"

#include <sstream>
#include <utility>

namespace ruccl {

RankNames::RankNames(std::string noun, std::vector<std::uint64_t> ids)
    : noun_(std::move(noun)), ids_(std::move(ids)) {}

std::uint64_t RankNames::id(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return rank >= 0 && r < ids_.size() ? ids_[r] : static_cast<std::uint64_t>(rank);
}

std::string RankNames::name(int rank) const {
  std::ostringstream out;
  out << noun_ << ' ';
  if (rank < 0) {
    out << rank;
  } else {
    out << id(rank);
  }
  return out.str();
}

std::string RankNames::list(std::span<const int> ranks) const {
  std::ostringstream out;
  out << noun_ << "(s) [";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out << (i ? ", " : "");
    if (ranks[i] < 0) {
      out << ranks[i];
    } else {
      out << id(ranks[i]);
    }
  }
  out << ']';
  return out.str();
}

}  // namespace ruccl
