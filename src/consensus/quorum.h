#pragma once

// Quorum math for a single (non-joint) Raft configuration, as pure functions. Only voters count;
// learners and non-members are ignored wherever they appear in the inputs. Membership changes
// are single-server (raft_config.h), so one majority of the current voters is always the quorum.

#include <cstdint>
#include <map>

#include "consensus/raft_types.h"

namespace basalt {

// Returns the number of voters that form a majority of `config` (n / 2 + 1).
size_t MajoritySize(const RaftConfig& config);

// Returns the largest index that a majority of the voters have durably matched: the
// (majority)-th largest match index, with voters missing from `match` counting as 0. Learners'
// match indexes are ignored. Returns 0 for a configuration without voters.
uint64_t CommittedIndex(const RaftConfig& config, const std::map<PeerId, uint64_t>& match);

enum class VoteResult {
  kPending,  // Neither a majority of grants nor of rejections yet.
  kWon,      // A majority of voters granted.
  kLost,     // A majority of voters rejected: winning is no longer possible.
};

// Tallies `votes` (voter -> granted) against `config`. Votes from learners or non-members are
// ignored.
VoteResult TallyVotes(const RaftConfig& config, const std::map<PeerId, bool>& votes);

// Returns true if the voters in `active` (a set given as peer -> active flag) form a majority.
bool QuorumActive(const RaftConfig& config, const std::map<PeerId, bool>& active);

}  // namespace basalt
