#pragma once

// Master peers: which masters form the catalog's Raft group (docs/master.md "Several masters").
//
// Every master gets the same --master_addresses. A master finds itself in the list by its
// advertised RPC address. The first time the group forms (no catalog metadata yet), each master
// asks every other one for its uuid (GetMasterRegistration, retried until all answer) and stores
// the resulting list in <fs_data_dir>/master_peers; the group's initial voters are those uuids.
// On every later start the stored list is the truth: --master_addresses must name the same
// addresses, and a master no longer needs the others to be up to start. The list changes only
// through `basalt master add|remove` (a catalog batch carrying the new list rewrites the file).
// A new master whose --master_addresses names a running group's masters and itself finds that
// group and joins it (it waits for `basalt master add` and the leader's catalog image).
//
// Private to src/master. Functions are thread-safe.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "rpc/net_util.h"

namespace basalt {

namespace pb {
class GetMasterRegistrationResponsePB;
}  // namespace pb

struct MasterPeer {
  std::string uuid;
  HostPort address;
  bool operator==(const MasterPeer&) const = default;
};

// The index of `self` in `masters`. INVALID_ARGUMENT naming both when it is not there (the fix is
// --rpc_advertised_addresses) or when `masters` lists an address twice.
absl::StatusOr<int> FindSelfInMasters(const std::vector<HostPort>& masters, const HostPort& self);

// The stored list at `path`: nullopt if there is none; DATA_LOSS naming the file if it is
// truncated, fails its checksum, does not parse or holds a malformed entry. `joined` (optional)
// gets MasterPeersPB.joined.
absl::StatusOr<std::optional<std::vector<MasterPeer>>> LoadMasterPeers(Env* env,
                                                                       const std::string& path,
                                                                       bool* joined = nullptr);
// Stores `peers` at `path` durably (atomic replace), with MasterPeersPB.joined = `joined`.
absl::Status StoreMasterPeers(Env* env, const std::string& path,
                              const std::vector<MasterPeer>& peers, bool joined = false);

// OK if `stored` names exactly the addresses of `configured` (in any order); INVALID_ARGUMENT
// listing both otherwise.
absl::Status CheckMasterPeersMatch(const std::vector<MasterPeer>& stored,
                                   const std::vector<HostPort>& configured);

// One GetMasterRegistration call to `address`.
absl::StatusOr<pb::GetMasterRegistrationResponsePB> GetMasterRegistration(const HostPort& address,
                                                                          absl::Duration timeout);

struct ResolvedMasters {
  // Forming: every master in --master_addresses order, this one included. Joining: the running
  // group's members (without this one).
  std::vector<MasterPeer> peers;
  bool join = false;
};

// Asks every master but masters[self_idx] for its uuid, retrying (and logging who is still
// missing every few seconds) until all answered or `deadline`: DEADLINE_EXCEEDED naming the
// masters that did not answer. INVALID_ARGUMENT if two masters report one uuid or disagree on
// --master_addresses. As soon as one answers as a member of a group formed without this master,
// returns that group with join = true: when --master_addresses names exactly its members and this
// master (else INVALID_ARGUMENT) and none of them has this master's address (else
// FAILED_PRECONDITION: this master's data directory was wiped or replaced).
absl::StatusOr<ResolvedMasters> ResolveMasterPeers(const std::vector<HostPort>& masters,
                                                   int self_idx, const std::string& self_uuid,
                                                   absl::Time deadline);

}  // namespace basalt
