#pragma once
// RankNames: how error messages name the ranks of a group. By default a rank is "rank 2"; the
// registered session API names its peers by the PeerIds their callers chose ("peer 7"), because
// there the rank indices are an internal detail the caller never saw.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ruccl {

/// Names of the ranks of one group, for error messages (CollectiveError::ranks() stays indices).
///
///   RankNames names("peer", {7, 9});   // rank 0 is "peer 7", rank 1 "peer 9"
///   names.list({1});                   // "peer(s) [9]"
class RankNames {
 public:
  /// "rank r" for every rank.
  RankNames() = default;
  /// `noun` and one id per rank (index = rank).
  RankNames(std::string noun, std::vector<std::uint64_t> ids);

  /// "rank 2", or "peer 7".
  std::string name(int rank) const;
  /// "rank(s) [1, 2]", or "peer(s) [7, 9]".
  std::string list(std::span<const int> ranks) const;
  /// The noun ("rank", "peer").
  const std::string& noun() const { return noun_; }
  /// The ids (index = rank); empty when ranks are named by their index.
  const std::vector<std::uint64_t>& ids() const { return ids_; }

  friend bool operator==(const RankNames&, const RankNames&) = default;

 private:
  std::uint64_t id(int rank) const;

  std::string noun_ = "rank";
  std::vector<std::uint64_t> ids_;  // empty: a rank's name is its index
};

}  // namespace ruccl
