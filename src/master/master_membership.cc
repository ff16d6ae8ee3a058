// Master: membership of the catalog's Raft group (`basalt master add|remove`) and catalog images
// between masters (docs/master.md "Adding and removing masters", "Catalog snapshots").
//
// The list of masters (uuid and address of each) is part of the catalog (a batch's `masters`,
// key meta/masters) so that every master can reach a new one before it becomes a member; the
// Raft configuration says who votes. Adding: list first, then the learner (promoted by the
// leader once caught up). Removing: configuration first, then the list.

#include <algorithm>
#include <chrono>
#include <utility>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/grpc_transport.h"
#include "consensus/raft_config.h"
#include "master/catalog_manager.h"
#include "master/master.h"
#include "master/master_errors.h"
#include "master/sys_catalog.h"
#include "proto/master.grpc.pb.h"
#include "proto/master_catalog.pb.h"
#include "rpc/rpc_status.h"
#include "server/server_instance.h"

namespace basalt {

namespace {

constexpr absl::Duration kMembershipTimeout = absl::Seconds(30);
// An image is small (catalog entries) and installs in well under a second; a receiver that
// does not answer within this is retried by the leader's node with backoff.
constexpr absl::Duration kImageRpcTimeout = absl::Seconds(15);

pb::MasterPeersPB ToPB(const std::vector<MasterPeer>& peers) {
  pb::MasterPeersPB out;
  for (const MasterPeer& p : peers) {
    pb::RaftPeerPB* m = out.add_masters();
    m->set_uuid(p.uuid);
    p.address.ToPB(m->mutable_address());
  }
  return out;
}

std::string PeerList(const std::vector<MasterPeer>& peers) {
  std::string out;
  for (const MasterPeer& p : peers) {
    StrAppend(&out, out.empty() ? "" : ", ", p.uuid, " at ", p.address.ToString());
  }
  return out;
}

}  // namespace

bool Master::joining() const { return catalog_open_.load() && sys_catalog_->joining(); }

void Master::OnMastersChanged(const pb::MasterPeersPB& masters) {
  std::vector<MasterPeer> peers;
  for (const pb::RaftPeerPB& m : masters.masters()) {
    peers.push_back({m.uuid(), HostPort::FromPB(m.address())});
    if (m.uuid() == instance_->uuid()) continue;
    absl::Status s = transport_->AddPeer(m.uuid(), peers.back().address.ToString());
    LOG_IF(WARNING, !s.ok()) << "master " << m.uuid() << ": " << s;
  }
  {
    absl::MutexLock l(&mu_);
    if (peers == peers_) return;
    peers_ = peers;
  }
  // A cache for the next start (read before the catalog opens); the catalog's copy wins then.
  absl::Status s = StoreMasterPeers(env_, JoinPath(options_.fs_data_dir, "master_peers"), peers,
                                    /*joined=*/true);
  LOG_IF(ERROR, !s.ok()) << "storing the list of masters: " << s;
  LOG(INFO) << "the catalog group's masters are now: " << PeerList(peers);
}

absl::Status Master::SendCatalogSnapshot(const std::string& peer_uuid,
                                         const pb::CatalogSnapshotPB& image) {
  std::optional<HostPort> address;
  for (const MasterPeer& p : peers()) {
    if (p.uuid == peer_uuid) address = p.address;
  }
  if (!address.has_value()) {
    return absl::NotFoundError(StrCat("no address known for master ", peer_uuid));
  }
  pb::InstallCatalogSnapshotRequestPB req;
  req.set_leader_uuid(instance_->uuid());
  req.set_dest_uuid(peer_uuid);
  *req.mutable_snapshot() = image;
  pb::InstallCatalogSnapshotResponsePB resp;
  auto stub = pb::MasterService::NewStub(NewChannel(address->ToString()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + kImageRpcTimeout));
  absl::Status s = FromGrpcStatus(stub->InstallCatalogSnapshot(&ctx, req, &resp));
  if (!s.ok()) {
    return absl::Status(s.code(), StrCat("catalog image to master ", peer_uuid, " at ",
                                         address->ToString(), ": ", s.message()));
  }
  LOG(INFO) << "master " << peer_uuid << " installed the catalog image at index "
            << image.applied_index();
  return absl::OkStatus();
}

absl::Status Master::InstallCatalogSnapshot(const std::string& leader_uuid,
                                            const std::string& dest_uuid,
                                            const pb::CatalogSnapshotPB& image) {
  if (dest_uuid != instance_->uuid()) {
    return absl::FailedPreconditionError(
        StrCat("dest_uuid ", dest_uuid, " is not this master (", instance_->uuid(), ")"));
  }
  if (!catalog_open_.load()) return absl::UnavailableError("the catalog is not open yet");
  bool known = false;
  for (const MasterPeer& p : peers()) known |= p.uuid == leader_uuid;
  if (leader_uuid.empty() || leader_uuid == instance_->uuid() || !known) {
    return absl::FailedPreconditionError(
        StrCat("leader_uuid '", leader_uuid, "' is not another master of this catalog group"));
  }
  return sys_catalog_->InstallSnapshot(image);
}

absl::StatusOr<std::string> Master::AddMaster(const HostPort& address) {
  absl::MutexLock membership(&membership_mu_);
  if (address.host.empty() || address.port == 0) {
    return absl::InvalidArgumentError("rpc_address: a host and a port are required");
  }
  auto reg = GetMasterRegistration(address, absl::Seconds(5));
  if (!reg.ok()) {
    // Not UNAVAILABLE: callers retry that one at other masters.
    return absl::FailedPreconditionError(
        StrCat("rpc_address: the new master at ", address.ToString(),
               " does not answer (start it first): ", reg.status().message()));
  }
  const std::string uuid = reg->uuid();
  std::shared_ptr<RaftNode> node = sys_catalog_->node();
  if (node == nullptr) return absl::UnavailableError("this master is joining the catalog group");
  auto [config, config_index] = node->committed_config();
  if (IsMember(config, uuid)) {
    return absl::AlreadyExistsError(
        StrCat("master ", uuid, " at ", address.ToString(), " is already in the catalog group"));
  }
  if (node->config_index() != config_index) {
    return absl::FailedPreconditionError(
        "another membership change of the catalog group is in progress; retry when it is done");
  }
  if (!reg->joining()) {
    return absl::FailedPreconditionError(StrCat(
        "rpc_address: master ", uuid, " at ", address.ToString(),
        " is not waiting to join; start it with --master_addresses naming every master of the "
        "group and itself"));
  }
  std::vector<MasterPeer> peers = PeersWithout(uuid);
  for (const MasterPeer& p : peers) {
    if (p.address == address) {
      return absl::FailedPreconditionError(StrCat("rpc_address: master ", p.uuid,
                                                  " of the group has address ", address.ToString(),
                                                  "; remove it first (`basalt master remove`)"));
    }
  }
  peers.push_back({uuid, address});
  // 1. Every master learns the new one's address (and a restarted one finds it in its catalog).
  pb::SysCatalogWriteBatchPB batch;
  *batch.mutable_masters() = ToPB(peers);
  const uint64_t term = sys_catalog_->LeaderReadyTerm();
  if (term == 0) return catalog_manager_->CheckReady();
  BASALT_RETURN_IF_ERROR(sys_catalog_->Write(batch, kMembershipTimeout, term));
  // 2. The learner: it gets the catalog image, catches up, and the leader promotes it.
  ConfigChange change;
  change.type = ConfigChange::Type::kAddLearner;
  change.peer = uuid;
  change.promote = true;
  absl::Status added =
      sys_catalog_->ChangeConfig(change, kMembershipTimeout, config_index).status();
  if (!added.ok()) {
    // The list names it already: a retry completes the add, a remove undoes it.
    return absl::Status(added.code(),
                        StrCat("the list of masters names ", uuid,
                               " but adding it to the catalog "
                               "group failed (retry `basalt master add`, or undo with `basalt "
                               "master remove ",
                               uuid, "`): ", added.message()));
  }
  LOG(INFO) << "added master " << uuid << " at " << address.ToString()
            << " to the catalog group (a non-voter until it has caught up)";
  return uuid;
}

std::vector<MasterPeer> Master::PeersWithout(const std::string& uuid) const {
  std::vector<MasterPeer> out = peers();
  out.erase(
      std::remove_if(out.begin(), out.end(), [&](const MasterPeer& p) { return p.uuid == uuid; }),
      out.end());
  return out;
}

absl::StatusOr<std::string> Master::RemoveMaster(const std::string& uuid_arg,
                                                 const std::optional<HostPort>& address) {
  absl::MutexLock membership(&membership_mu_);
  const std::vector<MasterPeer> all = peers();
  std::string uuid = uuid_arg;
  if (uuid.empty() && !address.has_value()) {
    return absl::InvalidArgumentError("uuid or rpc_address: name the master to remove");
  }
  for (const MasterPeer& p : all) {
    if (!address.has_value() || p.address != *address) continue;
    if (!uuid.empty() && uuid != p.uuid) {
      return absl::InvalidArgumentError(
          StrCat("rpc_address ", address->ToString(), " is master ", p.uuid, ", not uuid ", uuid));
    }
    uuid = p.uuid;
  }
  std::shared_ptr<RaftNode> node = sys_catalog_->node();
  if (node == nullptr) return absl::UnavailableError("this master is joining the catalog group");
  auto [config, config_index] = node->committed_config();
  const bool listed =
      std::any_of(all.begin(), all.end(), [&](const MasterPeer& p) { return p.uuid == uuid; });
  if (uuid.empty() || (!listed && !IsMember(config, uuid))) {
    return absl::NotFoundError(StrCat(uuid.empty() ? "rpc_address" : "uuid", ": no master ",
                                      uuid.empty() ? address->ToString() : uuid,
                                      " in the catalog group (", PeerList(all), ")"));
  }
  if (node->config_index() != config_index) {
    return absl::FailedPreconditionError(
        "another membership change of the catalog group is in progress; retry when it is done");
  }
  if (IsMember(config, uuid)) {
    if (IsVoter(config, uuid) && config.voters.size() == 1) {
      return absl::FailedPreconditionError(
          StrCat("master ", uuid, " is the catalog group's only voter"));
    }
    if (uuid == instance_->uuid()) {
      // The leader does not remove itself: it hands the leadership to another voter, and the
      // caller retries there (UNAVAILABLE + NOT_THE_LEADER_MASTER).
      for (const PeerId& v : config.voters) {
        if (v == uuid) continue;
        LOG(INFO) << "removing this master from the catalog group: handing the leadership to " << v
                  << " first";
        BASALT_RETURN_IF_ERROR(node->TransferLeadership(v));
        return MasterError(absl::UnavailableError(StrCat("master ", uuid,
                                                         " leads the catalog group: leadership "
                                                         "moves to ",
                                                         v, "; retry")),
                           pb::ErrorDetailPB::NOT_THE_LEADER_MASTER);
      }
    }
    ConfigChange change;
    change.type = ConfigChange::Type::kRemovePeer;
    change.peer = uuid;
    BASALT_RETURN_IF_ERROR(
        sys_catalog_->ChangeConfig(change, kMembershipTimeout, config_index).status());
  }
  // The list follows the configuration.
  if (listed) {
    pb::SysCatalogWriteBatchPB batch;
    *batch.mutable_masters() = ToPB(PeersWithout(uuid));
    const uint64_t term = sys_catalog_->LeaderReadyTerm();
    if (term == 0) return catalog_manager_->CheckReady();
    BASALT_RETURN_IF_ERROR(sys_catalog_->Write(batch, kMembershipTimeout, term));
  }
  LOG(INFO) << "removed master " << uuid << " from the catalog group";
  return uuid;
}

}  // namespace basalt
