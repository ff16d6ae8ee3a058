#include "master/master_peers.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "master/sys_catalog.h"
#include "proto/master.grpc.pb.h"
#include "proto/master_catalog.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {

namespace {

std::string AddressList(const std::vector<HostPort>& addresses) {
  std::string out;
  for (const HostPort& a : addresses) StrAppend(&out, out.empty() ? "" : ",", a.ToString());
  return out;
}

std::vector<HostPort> Addresses(const std::vector<MasterPeer>& peers) {
  std::vector<HostPort> out;
  for (const MasterPeer& p : peers) out.push_back(p.address);
  return out;
}

std::vector<std::string> SortedStrings(const std::vector<HostPort>& addresses) {
  std::vector<std::string> out;
  for (const HostPort& a : addresses) out.push_back(a.ToString());
  std::sort(out.begin(), out.end());
  return out;
}

bool ListsSelf(const pb::GetMasterRegistrationResponsePB& reg, const MasterPeer& self) {
  for (const auto& p : reg.peers()) {
    if (p.uuid() == self.uuid && HostPort::FromPB(p.address()) == self.address) return true;
  }
  return false;
}

// `reg` (the answer of the master at `address`) belongs to a group formed without this master:
// its members, if this master may join it (`basalt master add`). FAILED_PRECONDITION when a member
// has this master's address (this master's data directory was wiped or replaced);
// INVALID_ARGUMENT unless `masters` names exactly the group's members and this master.
absl::StatusOr<std::vector<MasterPeer>> CheckJoin(const pb::GetMasterRegistrationResponsePB& reg,
                                                  const HostPort& address,
                                                  const std::vector<HostPort>& masters,
                                                  const MasterPeer& self) {
  std::vector<MasterPeer> group;
  std::vector<HostPort> expected{self.address};
  for (const auto& p : reg.peers()) {
    group.push_back({p.uuid(), HostPort::FromPB(p.address())});
    expected.push_back(group.back().address);
    if (group.back().address == self.address) {
      return absl::FailedPreconditionError(
          StrCat("master ", address.ToString(),
                 " already belongs to a catalog group without this master (", self.uuid, " at ",
                 self.address.ToString(), "): its member at this address is master ", p.uuid(),
                 ". Was this master's data directory wiped or replaced? Restore it, or remove ",
                 p.uuid(), " (`basalt master remove`) and add this one (`basalt master add`)"));
    }
  }
  if (SortedStrings(expected) != SortedStrings(masters)) {
    return absl::InvalidArgumentError(StrCat("this master joins the catalog group of ",
                                             AddressList(Addresses(group)),
                                             "; give it --master_addresses=", AddressList(expected),
                                             " (not ", AddressList(masters), ")"));
  }
  return group;
}

// What `reg` (the answer of the master at `address`) must agree on before a group forms: the
// same --master_addresses.
absl::Status CheckRegistration(const pb::GetMasterRegistrationResponsePB& reg,
                               const HostPort& address, const std::vector<HostPort>& masters) {
  std::vector<HostPort> theirs;
  for (const auto& a : reg.master_addresses()) theirs.push_back(HostPort::FromPB(a));
  if (SortedStrings(theirs) != SortedStrings(masters)) {
    return absl::InvalidArgumentError(
        StrCat("master ", address.ToString(), " was given --master_addresses=", AddressList(theirs),
               ", this one ", AddressList(masters), "; every master must be given the same set"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> FindSelfInMasters(const std::vector<HostPort>& masters, const HostPort& self) {
  int found = -1;
  for (size_t i = 0; i < masters.size(); ++i) {
    if (std::count(masters.begin(), masters.end(), masters[i]) > 1) {
      return absl::InvalidArgumentError(
          StrCat("--master_addresses lists ", masters[i].ToString(), " more than once"));
    }
    if (masters[i] == self) found = static_cast<int>(i);
  }
  if (found < 0) {
    return absl::InvalidArgumentError(StrCat("this master's address ", self.ToString(),
                                             " is not in --master_addresses (",
                                             AddressList(masters),
                                             "); set --rpc_advertised_addresses to the entry of "
                                             "--master_addresses that is this master"));
  }
  return found;
}

absl::StatusOr<std::optional<std::vector<MasterPeer>>> LoadMasterPeers(Env* env,
                                                                       const std::string& path,
                                                                       bool* joined) {
  if (!env->FileExists(path)) return std::optional<std::vector<MasterPeer>>();
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  BASALT_ASSIGN_OR_RETURN(std::string_view payload, SysCatalog::DecodeValue(path, data));
  pb::MasterPeersPB pb;
  if (!pb.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::DataLossError(StrCat(path, " does not parse"));
  }
  std::vector<MasterPeer> peers;
  std::set<std::string> uuids;
  for (const pb::RaftPeerPB& m : pb.masters()) {
    MasterPeer p{m.uuid(), HostPort::FromPB(m.address())};
    if (p.uuid.empty() || p.address.host.empty() || p.address.port == 0 ||
        !uuids.insert(p.uuid).second) {
      return absl::DataLossError(StrCat(path, " holds a malformed or repeated master entry"));
    }
    peers.push_back(std::move(p));
  }
  if (peers.empty()) return absl::DataLossError(StrCat(path, " lists no master"));
  if (joined != nullptr) *joined = pb.joined();
  return std::optional<std::vector<MasterPeer>>(std::move(peers));
}

absl::Status StoreMasterPeers(Env* env, const std::string& path,
                              const std::vector<MasterPeer>& peers, bool joined) {
  pb::MasterPeersPB pb;
  pb.set_joined(joined);
  for (const MasterPeer& p : peers) {
    pb::RaftPeerPB* m = pb.add_masters();
    m->set_uuid(p.uuid);
    p.address.ToPB(m->mutable_address());
  }
  return WriteFileAtomically(env, path, SysCatalog::EncodeValue(pb.SerializeAsString()));
}

absl::Status CheckMasterPeersMatch(const std::vector<MasterPeer>& stored,
                                   const std::vector<HostPort>& configured) {
  if (SortedStrings(Addresses(stored)) == SortedStrings(configured)) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat(
      "--master_addresses (", AddressList(configured),
      ") differs from the masters of this master's catalog group (", AddressList(Addresses(stored)),
      "); give every master and tablet server --master_addresses=", AddressList(Addresses(stored)),
      " (the set changes only through `basalt master add|remove`, docs/master.md)"));
}

absl::StatusOr<pb::GetMasterRegistrationResponsePB> GetMasterRegistration(const HostPort& address,
                                                                          absl::Duration timeout) {
  auto stub = pb::MasterService::NewStub(NewChannel(address.ToString()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  pb::GetMasterRegistrationResponsePB resp;
  BASALT_RETURN_IF_ERROR(FromGrpcStatus(
      stub->GetMasterRegistration(&ctx, pb::GetMasterRegistrationRequestPB(), &resp)));
  if (resp.uuid().empty()) {
    return absl::InvalidArgumentError(
        StrCat("master ", address.ToString(), " answered without a uuid"));
  }
  return resp;
}

absl::StatusOr<ResolvedMasters> ResolveMasterPeers(const std::vector<HostPort>& masters,
                                                   int self_idx, const std::string& self_uuid,
                                                   absl::Time deadline) {
  const MasterPeer self{self_uuid, masters[self_idx]};
  std::vector<MasterPeer> peers(masters.size());
  for (size_t i = 0; i < masters.size(); ++i) peers[i].address = masters[i];
  peers[self_idx].uuid = self_uuid;
  absl::Time next_log = absl::Now() + absl::Seconds(5);
  for (;;) {
    std::vector<HostPort> missing;
    for (MasterPeer& p : peers) {
      if (!p.uuid.empty()) continue;
      auto reg = GetMasterRegistration(p.address, absl::Seconds(2));
      if (reg.ok()) {
        if (reg->peers_size() > 0 && !ListsSelf(*reg, self)) {
          BASALT_ASSIGN_OR_RETURN(std::vector<MasterPeer> group,
                                  CheckJoin(*reg, p.address, masters, self));
          return ResolvedMasters{std::move(group), /*join=*/true};
        }
        if (reg->peers_size() == 0) {  // It is forming too.
          BASALT_RETURN_IF_ERROR(CheckRegistration(*reg, p.address, masters));
        }
        p.uuid = reg->uuid();
      } else {
        missing.push_back(p.address);
      }
    }
    if (missing.empty()) break;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat("masters ", AddressList(missing),
                 " did not answer; every master of "
                 "--master_addresses must be up to form the catalog"));
    }
    if (absl::Now() >= next_log) {
      LOG(INFO) << "waiting for masters " << AddressList(missing) << " to answer";
      next_log = absl::Now() + absl::Seconds(5);
    }
    // Retry pacing while the other masters start; bounded by the deadline above.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::set<std::string> uuids;
  for (const MasterPeer& p : peers) {
    if (!uuids.insert(p.uuid).second) {
      return absl::InvalidArgumentError(StrCat("two entries of --master_addresses are master ",
                                               p.uuid, "; list every master once"));
    }
  }
  LOG(INFO) << "catalog group formed from " << masters.size() << " masters";
  return ResolvedMasters{std::move(peers), /*join=*/false};
}

}  // namespace basalt
