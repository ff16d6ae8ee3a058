#pragma once

// TsAdminClient: the master's admin requests to tablet servers (TabletServerAdminService in
// proto/tserver.proto): CreateTablet, DeleteTablet, AlterSchema, and ChangeConfig
// (ConsensusService, proto/consensus.proto). An interface so that catalog
// manager tests substitute a fake; NewGrpcTsAdminClient is the real one.
//
// Implementations are thread-safe: the reconciliation loop sends requests from several threads.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

namespace pb {
class AlterSchemaRequestPB;
class ChangeConfigRequestPB;
class CreateTabletRequestPB;
class DeleteTabletRequestPB;
}  // namespace pb

class TsAdminClient {
 public:
  virtual ~TsAdminClient() = default;
  // Each sends one request to the server at `address` ("host:port") and returns the server's
  // status (rpc_status.h: code, message and ErrorDetailPB) or a transport error (UNAVAILABLE,
  // DEADLINE_EXCEEDED).
  virtual absl::Status CreateTablet(const std::string& address,
                                    const pb::CreateTabletRequestPB& request) = 0;
  virtual absl::Status DeleteTablet(const std::string& address,
                                    const pb::DeleteTabletRequestPB& request) = 0;
  // The tablet's schema version afterwards.
  virtual absl::StatusOr<uint32_t> AlterSchema(const std::string& address,
                                               const pb::AlterSchemaRequestPB& request) = 0;
  // ConsensusService.ChangeConfig to the tablet's leader. The default answers UNIMPLEMENTED
  // (fakes in tests that do not care).
  virtual absl::Status ChangeConfig(const std::string& address,
                                    const pb::ChangeConfigRequestPB& request) {
    return absl::UnimplementedError("ChangeConfig");
  }
  // Cancels requests in flight (they return CANCELLED) and fails later ones with UNAVAILABLE,
  // so that a shutdown never waits for an unresponsive server. Idempotent.
  virtual void Shutdown() {}
};

// gRPC implementation: one channel per address (NewChannel), kept for the client's lifetime;
// every call has a deadline of --master_ts_rpc_timeout_ms.
std::unique_ptr<TsAdminClient> NewGrpcTsAdminClient();

}  // namespace basalt
