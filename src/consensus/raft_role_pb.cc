#include "consensus/raft_role_pb.h"

#include "proto/common.pb.h"

namespace basalt {

pb::RaftRolePB RaftRoleToPB(RaftCore::Role role) {
  switch (role) {
    case RaftCore::Role::kLeader:
      return pb::LEADER;
    case RaftCore::Role::kFollower:
      return pb::FOLLOWER;
    case RaftCore::Role::kCandidate:
    case RaftCore::Role::kPreCandidate:
      return pb::CANDIDATE;
  }
  return pb::UNKNOWN_ROLE;
}

}  // namespace basalt
