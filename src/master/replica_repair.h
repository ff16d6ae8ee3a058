#pragma once

// The master's decision about one tablet's membership (docs/tablet_copy.md "Automatic repair"):
// which single change, if any, brings the tablet back to its replication factor with healthy
// voters. A pure function of what the master knows; the catalog manager sends the change to the
// tablet's leader as a ChangeConfig with cas_config_index, so a decision made on a stale view
// fails harmlessly and is made again on the next round.
//
// With prepare_replacement_before_eviction (Kudu's 3-4-3, the default), a failed voter stays a
// member until its replacement is a healthy voter: first a replacement learner (promoted once
// caught up) is added on another server, and only then is the failed voter removed, so the
// number of healthy voters never drops. Without it (3-2-3), the failed voter is removed first.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "master/placement_policy.h"

namespace basalt {

struct RepairInput {
  // The tablet's committed configuration (the catalog's).
  std::vector<std::string> voters;
  std::vector<std::string> learners;
  int num_replicas = 3;          // The table's replication factor.
  std::string leader;            // Never removed or demoted (it would have to step down first).
  std::set<std::string> failed;  // Members considered failed (never includes the leader).
  // Live servers that may receive a new replica (not in maintenance), with their replica counts.
  // Members are skipped.
  std::vector<PlacementPolicy::Candidate> candidates;
  bool prepare_replacement_before_eviction = true;
};

struct RepairChange {
  enum class Kind {
    kAddLearner,      // ADD_PEER, promoted once caught up (member_type VOTER).
    kPromoteLearner,  // MODIFY_PEER VOTER.
    kRemove,          // REMOVE_PEER.
  };
  Kind kind = Kind::kAddLearner;
  std::string peer;
  std::string reason;  // For the log.

  bool operator==(const RepairChange&) const = default;
};

// The next change, or nullopt when there is nothing to do (or nothing that can be done: no
// candidate server for a replacement). `policy` picks among the candidates.
std::optional<RepairChange> DecideRepair(const RepairInput& in, PlacementPolicy* policy);

}  // namespace basalt
