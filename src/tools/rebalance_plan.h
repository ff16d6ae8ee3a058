#pragma once

// The pure part of `basalt cluster rebalance` (docs/cli.md): given where every tablet's replicas
// are, which tablets may move and which moves are already running, choose the next replica move.
// No I/O and no threads (tool_cluster_rebalance.cc gathers the placement and runs the moves);
// tested in rebalance_plan_test.cc.
//
// The goal is cluster-wide, like Kudu's default: the replica counts of the eligible tablet servers
// (live, not in maintenance mode) differ by at most one. Each move takes one replica from a server
// to one with at least two fewer replicas that holds none of that tablet, so the sum of the
// squared counts drops with every move and planning ends. While the counts are not balanced, the
// most loaded server holds a tablet the least loaded does not hold (it has more replicas, one per
// tablet), so only unhealthy tablets and the limits on moves in flight can keep a move from being
// found.
//
// Rules of PickMove, in order:
//   - a tablet moves only when healthy (TabletPlacement::unhealthy empty) and not already moving;
//   - a server takes part in at most max_moves_per_server moves at a time (as source or target);
//   - of the moves allowed, one between the two servers whose counts differ most (a move between
//     servers that differ by less would make more moves in all);
//   - among those, one of a replica that does not lead (moving the leader's replica costs a
//     leadership transfer), then one whose table is spread most unevenly between its two servers,
//     then the smallest tablet id, then the most loaded source and least loaded target (ties by
//     uuid): plans are deterministic.
//
// Functions only; thread-safe.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "proto/tserver.pb.h"

namespace basalt::tools {

// One tablet as the rebalancer sees it.
struct TabletPlacement {
  std::string tablet_id;
  std::string table_name;
  // The tablet servers of its replicas (uuids), in any order, each once.
  std::vector<std::string> replicas;
  // The replica that leads; empty if not exactly one does.
  std::string leader_uuid;
  // Why the tablet may not move, for messages ("2 leaders", "replica on X is BOOTSTRAPPING");
  // empty when it is healthy.
  std::string unhealthy;
};

// What one tablet server said about its replica of a tablet (ListTablets); tombstones
// (TABLET_DELETED) are not replicas and are left out by the caller.
struct ReplicaReport {
  std::string ts_uuid;
  pb::TabletStatusPB status;
};

// A tablet's placement and health from its replicas' reports. `answered`: the tablet servers
// whose ListTablets answered (a member on another server cannot be seen to run);
// `replication_factor`: its table's, 0 when the master does not list the table.
//   replicas: the members of the configuration its leader reports; without exactly one leader,
//             the servers that report a replica.
//   unhealthy (the first problem found, else empty):
//     "N replicas report LEADER (want exactly 1)";
//     "its table is not listed by the master";
//     "replica on X is a NON_VOTER (a configuration change is under way)";
//     "replica on X: its tablet server is not live or did not answer";
//     "replica on X is missing" (a member whose server answered without it);
//     "replica on X is TABLET_BOOTSTRAPPING" (any state but RUNNING);
//     "N voters, fewer than the replication factor R".
// REQUIRES: `reports` is not empty, and each is of `tablet_id`.
TabletPlacement PlaceTablet(const std::string& tablet_id, const std::vector<ReplicaReport>& reports,
                            int replication_factor, const std::set<std::string>& answered);

// Every tablet and the tablet servers that count: replicas on other servers (not live, in
// maintenance mode) are neither counted nor moved, and nothing moves to those servers.
struct ClusterPlacement {
  std::vector<std::string> servers;  // Eligible tablet servers (uuids), each once.
  std::vector<TabletPlacement> tablets;
};

// One replica move: the replica of `tablet_id` on `from` goes to `to`.
struct ReplicaMove {
  std::string tablet_id;
  std::string from;
  std::string to;
};

// Replicas per eligible server (servers without any at 0).
std::map<std::string, int> ReplicaCounts(const ClusterPlacement& placement);
// The same per table: table name -> server -> replicas (every eligible server present).
std::map<std::string, std::map<std::string, int>> ReplicaCountsByTable(
    const ClusterPlacement& placement);

// Whether the counts differ by at most one (true for no server).
bool IsBalanced(const std::map<std::string, int>& counts);

// Moves already running: the tablets moving and the moves each server takes part in.
struct MovesInFlight {
  std::set<std::string> tablets;
  std::map<std::string, int> per_server;

  void Add(const ReplicaMove& move);
  void Remove(const ReplicaMove& move);
  bool empty() const { return tablets.empty(); }
};

// The next move by the rules above, or nullopt when the counts are balanced or no allowed move
// is left. `placement` must show the moves in flight as done (ApplyMove), so that their servers
// are counted as they will be. REQUIRES: max_moves_per_server >= 1.
std::optional<ReplicaMove> PickMove(const ClusterPlacement& placement,
                                    const MovesInFlight& in_flight, int max_moves_per_server);

// Makes `move` look done in `placement`, whatever step it is at: a tablet that holds `from`
// holds `to` instead (halfway, holding both, it loses `from`), and its leader becomes unknown if
// it was `from`. A tablet without a replica on `from` (the move is done) is left alone; an
// unknown tablet too.
void ApplyMove(const ReplicaMove& move, ClusterPlacement* placement);

// The healthy-tablet rule's casualties: "tablet T (table t): why" for every unhealthy tablet with
// a replica on an eligible server, sorted.
std::vector<std::string> UnhealthyTablets(const ClusterPlacement& placement);

}  // namespace basalt::tools
