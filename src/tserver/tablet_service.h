#pragma once

// The tablet server's gRPC services (proto/tserver.proto): TabletServerService (Write, Scan,
// ScannerKeepAlive, ListTablets, Checksum) and TabletServerAdminService (CreateTablet,
// DeleteTablet, AlterSchema, LeaderStepDown). Every request is validated completely before
// anything happens; errors follow docs/cluster.md "Errors" (INVALID_ARGUMENT naming the field,
// details for what a client acts on). A handler never crashes the daemon on a request.
//
// The services are created by TabletServer and registered on its grpc::Server; they borrow
// everything in TabletServiceContext. Thread-safe (gRPC calls them from many threads).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "rpc/frame_server.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace basalt {

class AddressBook;
class BlockManager;
class HybridClock;
class ScannerManager;
class TsTabletManager;

struct TabletServiceContext {
  std::string server_uuid;
  TsTabletManager* tablet_manager = nullptr;
  ScannerManager* scanner_manager = nullptr;
  HybridClock* clock = nullptr;
  AddressBook* address_book = nullptr;
  BlockManager* block_manager = nullptr;  // May be null (no data directories reported).
  // The WAL directory and its state (OK or why it failed); may be empty (not reported).
  std::function<std::pair<std::string, absl::Status>()> wal_dir_state;
  // Batch size of a scan call that asks for 0 bytes, and the largest batch a call may ask for.
  uint32_t scanner_default_batch_size_bytes = 1 << 20;
  uint32_t scanner_max_batch_size_bytes = 32 << 20;
  // How long a call without a gRPC deadline may wait (replication, snapshots).
  absl::Duration default_rpc_timeout = absl::Seconds(60);
};

std::unique_ptr<grpc::Service> NewTabletServerService(const TabletServiceContext& ctx);
std::unique_ptr<grpc::Service> NewTabletServerAdminService(const TabletServiceContext& ctx);

// Registers Write, Scan and ScannerKeepAlive (pb::TabletServerFrameMethodPB) on `server`, the
// tablet server's frame RPC port (docs/frame_rpc.md): the same calls as the gRPC methods, with
// the same errors, recorded in the same RPC metrics under the method name
// "frame:/basalt.pb.TabletServerService/<name>". REQUIRES: before server->Start().
void RegisterTabletFrameMethods(const TabletServiceContext& ctx, FrameServer* server);

// `handler` recorded in the RPC metrics (GetRpcMethodMetrics) under `method`, as the gRPC
// interceptor records gRPC calls: "frame:/<service>/<method>" by convention.
FrameServer::Handler WithRpcMetrics(const std::string& method, FrameServer::Handler handler);

}  // namespace basalt
