#include "consensus/quorum.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace basalt {
namespace {

// Counts the voters whose entry in `flags` is present and equal to `value`.
size_t CountVoters(const RaftConfig& config, const std::map<PeerId, bool>& flags, bool value) {
  size_t n = 0;
  for (const PeerId& voter : config.voters) {
    auto it = flags.find(voter);
    if (it != flags.end() && it->second == value) ++n;
  }
  return n;
}

}  // namespace

size_t MajoritySize(const RaftConfig& config) { return config.voters.size() / 2 + 1; }

uint64_t CommittedIndex(const RaftConfig& config, const std::map<PeerId, uint64_t>& match) {
  if (config.voters.empty()) return 0;
  std::vector<uint64_t> indexes;
  indexes.reserve(config.voters.size());
  for (const PeerId& voter : config.voters) {
    auto it = match.find(voter);
    indexes.push_back(it == match.end() ? 0 : it->second);
  }
  // The k-th largest value, k = majority, is matched by at least a majority of voters.
  const size_t k = MajoritySize(config);
  std::nth_element(indexes.begin(), indexes.begin() + (k - 1), indexes.end(),
                   std::greater<uint64_t>());
  return indexes[k - 1];
}

VoteResult TallyVotes(const RaftConfig& config, const std::map<PeerId, bool>& votes) {
  const size_t majority = MajoritySize(config);
  const size_t granted = CountVoters(config, votes, true);
  const size_t rejected = CountVoters(config, votes, false);
  if (granted >= majority) return VoteResult::kWon;
  // Lost once even every outstanding voter granting could not make a majority (this also covers
  // an even split with an even number of voters).
  const size_t outstanding = config.voters.size() - granted - rejected;
  if (granted + outstanding < majority) return VoteResult::kLost;
  return VoteResult::kPending;
}

bool QuorumActive(const RaftConfig& config, const std::map<PeerId, bool>& active) {
  return CountVoters(config, active, true) >= MajoritySize(config);
}

}  // namespace basalt
