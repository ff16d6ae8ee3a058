#pragma once

// The wire form of a Raft role (proto/common.proto RaftRolePB), for reports and listings.

#include "consensus/raft_core.h"

namespace basalt {

namespace pb {
enum RaftRolePB : int;
}  // namespace pb

// kLeader -> LEADER, kFollower -> FOLLOWER, kCandidate and kPreCandidate -> CANDIDATE. (Whether
// a replica is a LEARNER depends on the configuration, which the caller checks.)
pb::RaftRolePB RaftRoleToPB(RaftCore::Role role);

}  // namespace basalt
