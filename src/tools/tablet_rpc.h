#pragma once

// Private to src/tools (.cc files only): calls to tablet servers for the `basalt tablet` verbs and
// `basalt cluster rebalance` (docs/cli.md): listing a server's replicas, finding a tablet's
// leader, asking it to step down, reading its consensus state and changing its Raft configuration.
//
// Every call here is one RPC (or one round of them) with the deadline its caller passes; nothing
// retries. Errors are the server's status; most calls prefix its message with the server it came
// from, which drops the ErrorDetailPB (PrependToStatus keeps code and message only).
// SendChangeConfig does not prefix, so its caller can read the detail (NOT_THE_LEADER, ...).

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/consensus.pb.h"
#include "proto/master.pb.h"
#include "proto/tserver.pb.h"

namespace basalt::tools {

using Deadline = std::chrono::system_clock::time_point;

// "host:port" of a tablet server's RPC address as the master lists it.
std::string TabletServerAddress(const pb::ListTabletServersResponsePB::ServerPB& server);

// The tablet servers the leader master lists (ListTabletServers, --timeout_ms). CallMaster's
// errors.
absl::StatusOr<pb::ListTabletServersResponsePB> ListTabletServers(const std::string& masters);

struct LeaderReplica {
  std::string uuid;
  std::string address;
  uint64_t term = 0;
};

// Asks every live tablet server of `servers` for `tablet_id` (ListTablets, each call until
// `deadline`); returns the RUNNING replica that reports itself LEADER (the highest term if
// several do). NOT_FOUND "no tablet server hosts tablet <id>" if no server that answered has a
// replica; NOT_FOUND "tablet <id> has no leader" if none leads (an election may be under way).
absl::StatusOr<LeaderReplica> FindLeader(const pb::ListTabletServersResponsePB& servers,
                                         const std::string& tablet_id, Deadline deadline);
// The same with the servers ListTabletServers gives and the --timeout_ms deadline.
absl::StatusOr<LeaderReplica> FindLeader(const std::string& masters, const std::string& tablet_id);

// Every replica (tombstones included) the server at `address` reports (ListTablets). The
// server's error, prefixed with "tablet server at <address>".
absl::StatusOr<pb::ListTabletsResponsePB> ListTabletsOn(const std::string& address,
                                                        Deadline deadline);

// The replica of `tablet_id` as the server at `address` reports it (ListTablets). NOT_FOUND if it
// has none; ListTabletsOn's errors.
absl::StatusOr<pb::TabletStatusPB> GetReplicaStatus(const std::string& address,
                                                    const std::string& tablet_id,
                                                    Deadline deadline);

// TabletServerAdminService.LeaderStepDown to `leader`: it steps down, and with a non-empty
// `new_leader_uuid` transfers leadership to that replica. The server's error, prefixed with
// "leader <uuid> (<address>): ".
absl::Status StepDownLeader(const LeaderReplica& leader, const std::string& tablet_id,
                            const std::string& new_leader_uuid, Deadline deadline);

// ConsensusService.GetConsensusState of the replica of `tablet_id` on the server `uuid` at
// `address`. The server's error, prefixed with "tablet server <uuid> (<address>): ".
absl::StatusOr<pb::GetConsensusStateResponsePB> GetConsensusState(const std::string& uuid,
                                                                  const std::string& address,
                                                                  const std::string& tablet_id,
                                                                  Deadline deadline);

// ConsensusService.ChangeConfig sent to `address` (req.dest_uuid names the server meant). The
// server's status unchanged, with no prefix: callers turn it into a message
// (ChangeConfigErrorMessage in change_config_checks.h).
absl::StatusOr<pb::ChangeConfigResponsePB> SendChangeConfig(const std::string& address,
                                                            const pb::ChangeConfigRequestPB& req,
                                                            Deadline deadline);

}  // namespace basalt::tools
