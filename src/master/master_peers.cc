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

// What `reg` (the answer of the master at `address`) must agree on before a group forms: the
// same --master_addresses, and no group already formed without this master.
absl::Status CheckRegistration(const pb::GetMasterRegistrationResponsePB& reg,
                               const HostPort& address, const std::vector<HostPort>& masters,
                               const MasterPeer& self) {
  std::vector<HostPort> theirs;
  for (const auto& a : reg.master_addresses()) theirs.push_back(HostPort::FromPB(a));
  if (SortedStrings(theirs) != SortedStrings(masters)) {
    return absl::InvalidArgumentError(
        StrCat("master ", address.ToString(), " was given --master_addresses=", AddressList(theirs),
               ", this one ", AddressList(masters), "; every master must be given the same set"));
  }
  if (reg.peers_size() == 0) return absl::OkStatus();  // It is forming too.
  for (const auto& p : reg.peers()) {
    if (p.uuid() == self.uuid && HostPort::FromPB(p.address()) == self.address) {
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(
      StrCat("master ", address.ToString(),
             " already belongs to a catalog group without this "
             "master (",
             self.uuid, " at ", self.address.ToString(),
             "): was this master's data directory wiped or replaced? Restore it; replacing a "
             "master is not supported yet"));
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
                                                                       const std::string& path) {
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
  if (peers.size() < 2) {
    return absl::DataLossError(StrCat(path, " lists ", peers.size(), " masters (at least 2)"));
  }
  return std::optional<std::vector<MasterPeer>>(std::move(peers));
}

absl::Status StoreMasterPeers(Env* env, const std::string& path,
                              const std::vector<MasterPeer>& peers) {
  pb::MasterPeersPB pb;
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
  return absl::InvalidArgumentError(
      StrCat("--master_addresses (", AddressList(configured),
             ") differs from the masters this master's catalog was formed with (",
             AddressList(Addresses(stored)),
             "); changing the set of masters is not supported (docs/master.md)"));
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

absl::StatusOr<std::vector<MasterPeer>> ResolveMasterPeers(const std::vector<HostPort>& masters,
                                                           int self_idx,
                                                           const std::string& self_uuid,
                                                           absl::Time deadline) {
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
        BASALT_RETURN_IF_ERROR(
            CheckRegistration(*reg, p.address, masters, {self_uuid, masters[self_idx]}));
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
  return peers;
}

}  // namespace basalt
