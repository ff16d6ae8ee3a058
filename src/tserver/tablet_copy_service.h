#pragma once

// The tablet server's TabletCopyService (proto/tablet_copy.proto, docs/tablet_copy.md): copy
// sessions (TabletCopySource) by id, each ended by EndTabletCopySession or after
// --tablet_copy_session_idle_timeout_ms without a call (a reaper thread checks every quarter of
// the timeout), so a receiver that dies mid-copy does not pin the source's log and blocks. The
// start and end of a session are logged; while the copies of a tablet to one requestor keep
// failing, only the sessions of one a minute (LogThrottle), the start line with their count.
//
// Lifecycle: construct -> Start() -> serve -> Shutdown() (ends every session). Thread-safe.

#include <memory>

namespace grpc {
class Service;
}  // namespace grpc

namespace basalt {

class TsTabletManager;

class TabletCopyService {
 public:
  virtual ~TabletCopyService() = default;
  virtual void Start() = 0;
  virtual void Shutdown() = 0;
  // The gRPC service to register. Owned by this object.
  virtual grpc::Service* service() = 0;
};

// `tablet_manager` is borrowed and outlives the service.
std::unique_ptr<TabletCopyService> NewTabletCopyService(TsTabletManager* tablet_manager);

}  // namespace basalt
