#pragma once

// The maintenance ops of one tablet (docs/tablet.md "Maintenance manager"): flush the MemRowSet,
// flush DeltaMemStores, merge-compact rowsets, minor and major delta compaction, and history GC
// of UNDO files (docs/tablet.md "History GC"). Each scores itself from the tablet's current
// figures; the MaintenanceManager picks among all tablets' ops.

#include <functional>
#include <memory>
#include <vector>

#include <gflags/gflags_declare.h>

#include "common/clock.h"
#include "tablet/maintenance_manager.h"

DECLARE_int32(flush_threshold_mb);
DECLARE_int32(flush_threshold_secs);
DECLARE_double(tablet_major_delta_compaction_ratio);

namespace basalt {

class Tablet;

// What the tablet's owner (the replica) lends its ops. Both may be empty; both are called on
// maintenance threads and must be quick.
struct TabletMaintenanceHooks {
  // False while the data directory is full: the ops that write blocks (flushes, compactions)
  // report themselves not runnable until it has room again; history GC, which frees space, runs.
  std::function<bool()> has_room;
  // An op failed with an error of the storage (anything but RESOURCE_EXHAUSTED, a full disk that
  // only pauses the ops, and CANCELLED / ABORTED / UNAVAILABLE): the replica fails
  // (docs/tserver.md "Replica states").
  std::function<void(const absl::Status& error)> on_storage_error;
};

// Owns a tablet's ops and their registration. Unregister (or destroy) before the tablet goes.
// Not thread-safe; the tablet's owner calls it.
class TabletMaintenance {
 public:
  // `tablet` and `clock` are borrowed; `clock` gives the time for age-based flushes.
  TabletMaintenance(Tablet* tablet, Clock* clock, TabletMaintenanceHooks hooks = {});
  ~TabletMaintenance();
  TabletMaintenance(const TabletMaintenance&) = delete;
  TabletMaintenance& operator=(const TabletMaintenance&) = delete;

  void RegisterWith(MaintenanceManager* manager);
  void Unregister();
  const std::vector<std::unique_ptr<MaintenanceOp>>& ops() const { return ops_; }

 private:
  const TabletMaintenanceHooks hooks_;  // The ops point at it.
  std::vector<std::unique_ptr<MaintenanceOp>> ops_;
  MaintenanceManager* manager_ = nullptr;
};

}  // namespace basalt
