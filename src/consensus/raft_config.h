#pragma once

// Raft group membership helpers: queries on RaftConfig, single-server changes, and the encoding
// of a configuration inside a kConfigChange log entry (byte table in docs/raft.md).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "consensus/raft_types.h"

namespace basalt {

// One single-server membership change (Raft thesis §4.1). New servers join as learners and are
// promoted once caught up, so a change never alters the voter count by more than one.
struct ConfigChange {
  enum class Type : uint8_t {
    kAddLearner = 0,      // peer joins as a non-voting learner.
    kPromoteLearner = 1,  // learner peer becomes a voter.
    kRemovePeer = 2,      // voter or learner peer leaves the group.
    kDemoteVoter = 3,     // voter peer becomes a non-voting learner.
  };
  Type type = Type::kAddLearner;
  PeerId peer;
  // kAddLearner only: the learner is listed in RaftConfig::promote, and whichever replica leads
  // proposes its promotion once it has caught up.
  bool promote = false;
};

bool IsVoter(const RaftConfig& config, const PeerId& peer);
bool IsLearner(const RaftConfig& config, const PeerId& peer);
inline bool IsMember(const RaftConfig& config, const PeerId& peer) {
  return IsVoter(config, peer) || IsLearner(config, peer);
}

// Returns OK if `config` has at least one voter, its lists are sorted, without duplicates, and
// disjoint, and no id is empty; INVALID_ARGUMENT naming the problem otherwise.
absl::Status ValidateConfig(const RaftConfig& config);

// Returns `config` with both lists sorted and deduplicated.
RaftConfig NormalizeConfig(RaftConfig config);

// Returns the configuration after `change`, or FAILED_PRECONDITION when the change does not apply
// (adding a member, promoting a non-learner, removing a non-member, demoting a non-voter, removing
// or demoting the last voter).
absl::StatusOr<RaftConfig> ApplyConfigChange(const RaftConfig& config, const ConfigChange& change);

// Serializes `config` as the data of a kConfigChange entry (docs/raft.md).
std::string EncodeConfig(const RaftConfig& config);
// Parses EncodeConfig's output. Returns DATA_LOSS for truncated, trailing or otherwise malformed
// bytes, and for a decoded configuration that fails ValidateConfig.
absl::StatusOr<RaftConfig> DecodeConfig(std::string_view data);

// Returns "voters={a,b} learners={c}" for logs and test messages.
std::string ConfigToString(const RaftConfig& config);

}  // namespace basalt
