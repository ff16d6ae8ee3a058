#pragma once

// The maintenance ops of one tablet (docs/tablet.md "Maintenance manager"): flush the MemRowSet,
// flush DeltaMemStores, merge-compact rowsets, minor and major delta compaction, and history GC
// of UNDO files (docs/tablet.md "History GC"). Each scores itself from the tablet's current
// figures; the MaintenanceManager picks among all tablets' ops.

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

// Owns a tablet's ops and their registration. Unregister (or destroy) before the tablet goes.
// Not thread-safe; the tablet's owner calls it.
class TabletMaintenance {
 public:
  // `tablet` and `clock` are borrowed; `clock` gives the time for age-based flushes.
  TabletMaintenance(Tablet* tablet, Clock* clock);
  ~TabletMaintenance();
  TabletMaintenance(const TabletMaintenance&) = delete;
  TabletMaintenance& operator=(const TabletMaintenance&) = delete;

  void RegisterWith(MaintenanceManager* manager);
  void Unregister();
  const std::vector<std::unique_ptr<MaintenanceOp>>& ops() const { return ops_; }

 private:
  std::vector<std::unique_ptr<MaintenanceOp>> ops_;
  MaintenanceManager* manager_ = nullptr;
};

}  // namespace basalt
