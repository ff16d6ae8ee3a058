#pragma once

// The tablet server's ConsensusService (proto/consensus.proto): UpdateConsensus goes to the
// server's GrpcTransport (Raft traffic of every tablet); ChangeConfig and GetConsensusState act on
// one replica; StartTabletCopy copies a replica onto this server (docs/tablet_copy.md).

#include <memory>
#include <string>

#include "absl/time/time.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace basalt {

class AddressBook;
class GrpcTransport;
class TsTabletManager;

struct ConsensusServiceContext {
  std::string server_uuid;
  GrpcTransport* transport = nullptr;  // All borrowed; they outlive the service.
  TsTabletManager* tablet_manager = nullptr;
  AddressBook* address_book = nullptr;
  // How long a ChangeConfig without a gRPC deadline waits for its entry to commit.
  absl::Duration default_rpc_timeout = absl::Seconds(60);
};

std::unique_ptr<grpc::Service> NewConsensusService(const ConsensusServiceContext& ctx);

}  // namespace basalt
