#pragma once

// Private to src/tools (.cc files only): membership changes of one tablet, made by its leader, for
// `basalt tablet change_config` (tool_tablet_change_config.cc) and `basalt cluster rebalance`
// (tool_cluster_rebalance.cc); docs/cli.md.
//
// A change is decided on a TabletView (the tablet servers the master lists, the tablet's leader
// and the leader's consensus state), checked against it (change_config_checks.h) and sent to the
// leader with the committed configuration's index as cas_config_index, so that a change someone
// else made in between fails the call rather than being acted on with a stale view.
//
// MoveReplica strings four steps together, each within --timeout_ms: add the new replica as VOTER
// (it joins as a learner, gets a tablet copy from the leader, and the leader promotes it), wait
// until it is a VOTER of the committed configuration, move leadership away from the old replica
// if it leads, remove the old replica. A step that fails leaves what the earlier ones did, and the
// error says how to finish or undo it.
//
// Functions only; thread-safe: calls for different tablets may run on different threads (each
// makes its own RPCs; a MoveLog's functions are called on the thread that called MoveReplica).

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/consensus.pb.h"
#include "proto/master.pb.h"
#include "tools/change_config_checks.h"
#include "tools/tablet_rpc.h"

namespace basalt::tools {

// What a change is decided on.
struct TabletView {
  pb::ListTabletServersResponsePB servers;
  LeaderReplica leader;
  pb::ConsensusStatePB cstate;
};

// The tablet servers (master), the tablet's leader (FindLeader: ListTablets on every live server)
// and its consensus state (GetConsensusState), each call within --timeout_ms. An unknown tablet
// is NOT_FOUND "no tablet server hosts tablet <id>"; NOT_FOUND "tablet <id> has no leader";
// UNAVAILABLE if the replica no longer leads when asked; the RPCs' errors.
absl::StatusOr<TabletView> LoadView(const std::string& masters, const std::string& tablet_id);

// Sends `change` to the view's leader, compare-and-set on the committed configuration the view
// holds. Returns the new configuration's op index; ChangeConfigError's message on failure.
// REQUIRES: CheckChange(change, view.servers, view.cstate) passed.
absl::StatusOr<uint64_t> SendChange(const TabletView& view, const ConfigChange& change,
                                    absl::Time deadline);

// "host:port" of tablet server `uuid` as the view's master listing has it, or "address unknown".
std::string ServerAddress(const TabletView& view, const std::string& uuid);

// Where MoveReplica reports; each call gets one whole line, ending in '\n'. Neither may be empty.
struct MoveLog {
  // A step done: the replica added, a VOTER, leadership moved, the old replica removed, and the
  // move's last line "Moved the replica of tablet T from A to B".
  std::function<void(const std::string&)> step;
  // While waiting: the new replica's progress (on each change of state and every 5 s), and a
  // leadership transfer asked for.
  std::function<void(const std::string&)> progress;
};

// Moves the VOTER replica of `tablet_id` on tablet server `from` to tablet server `to`: adds `to`
// as VOTER, waits until it is a VOTER of the committed configuration (polling the leader with
// backoff from 100 ms to 1 s), asks `from` to hand leadership to another voter if it leads (again
// every 3 s while it still does), then removes `from` (retrying UNAVAILABLE). Errors:
//   before anything changed: CheckMoveArgs', LoadView's, CheckMove's and the add's errors (the
//     message is the cause alone);
//   FAILED_PRECONDITION if `to` left the configuration before it became a VOTER (its message says
//     `from` was not removed);
//   after `to` was added (a timeout waiting for it, for the leadership transfer, or a failed
//     removal): the cause, followed by ". Tablet server <to> was added to tablet <id> and <from>
//     is still a member: finish the move with `basalt tablet change_config remove_replica ...`
//     once <to> is a VOTER, or undo it with `...`".
absl::Status MoveReplica(const std::string& masters, const std::string& tablet_id,
                         const std::string& from, const std::string& to, const MoveLog& log);

}  // namespace basalt::tools
