#include "tablet/tablet_maintenance.h"

#include <algorithm>
#include <functional>
#include <string>

#include <gflags/gflags.h>

#include "common/strings.h"
#include "tablet/row_outcome.h"
#include "tablet/tablet.h"

DEFINE_int32(flush_threshold_mb, 64,
             "Size of a tablet's MemRowSet at which the maintenance manager flushes it, in MiB "
             "(earlier under memory pressure).");
DEFINE_int32(flush_threshold_secs, 120,
             "Age of a tablet's oldest unflushed write at which its MemRowSet or DeltaMemStores "
             "are flushed, in seconds.");
DEFINE_int32(tablet_delta_files_minor_compaction_threshold, 8,
             "Number of REDO files of one rowset at which they are merged (minor delta "
             "compaction).");
DEFINE_double(tablet_major_delta_compaction_ratio, 0.1,
              "Ratio of a rowset's REDO bytes to its base bytes at which the REDOs are folded "
              "into the base data (major delta compaction).");

namespace basalt {

namespace {

// A maintenance op defined by two functions of the tablet.
class TabletOp : public MaintenanceOp {
 public:
  using StatsFn = std::function<void(const TabletStats&, MaintenanceOpStats*)>;
  using RunFn = std::function<absl::Status()>;

  // `needs_room`: the op writes blocks, so it waits while the data directory is full.
  TabletOp(std::string name, Tablet* tablet, const TabletMaintenanceHooks* hooks, bool needs_room,
           StatsFn stats, RunFn run)
      : MaintenanceOp(std::move(name)),
        tablet_(tablet),
        hooks_(hooks),
        needs_room_(needs_room),
        stats_(std::move(stats)),
        run_(std::move(run)) {}

  void UpdateStats(MaintenanceOpStats* stats) override {
    stats_(tablet_->GetStats(), stats);
    if (needs_room_ && hooks_->has_room && !hooks_->has_room()) stats->runnable = false;
  }
  bool Prepare() override { return true; }
  absl::Status Perform() override {
    absl::Status s = run_();
    // Any error of the storage (EIO, a read-only file system, a lost or corrupt block) fails the
    // replica: it could flush nothing more and may no longer match its peers' durable state. Only
    // a full disk (which pauses the ops) and cancellations are let through.
    const bool transient = absl::IsResourceExhausted(s) || absl::IsCancelled(s) ||
                           absl::IsAborted(s) || absl::IsUnavailable(s);
    if (!s.ok() && !transient && hooks_->on_storage_error) {
      const absl::Status e = StorageError(s);
      hooks_->on_storage_error(absl::Status(e.code(), StrCat(name(), ": ", e.message())));
    }
    return s;
  }

 private:
  Tablet* const tablet_;
  const TabletMaintenanceHooks* const hooks_;
  const bool needs_room_;
  const StatsFn stats_;
  const RunFn run_;
};

// How urgent a flush of `bytes` whose oldest write is at `oldest` is: >= 1 once past the size or
// age threshold, growing beyond; the fraction of the size threshold below it.
double FlushUrgency(size_t bytes, HybridTime oldest, Clock* clock) {
  double size =
      static_cast<double>(bytes) / (static_cast<double>(FLAGS_flush_threshold_mb) * 1024 * 1024);
  double age = 0;
  if (oldest.is_valid()) {
    int64_t now = clock->NowMicros();
    int64_t then = static_cast<int64_t>(oldest.physical_micros());
    age = now > then ? static_cast<double>(now - then) / 1e6 / FLAGS_flush_threshold_secs : 0;
  }
  double urgency = std::max(size, age);
  return urgency >= 1 ? urgency : 0;
}

}  // namespace

TabletMaintenance::TabletMaintenance(Tablet* tablet, Clock* clock, TabletMaintenanceHooks hooks)
    : hooks_(std::move(hooks)) {
  const std::string id = tablet->tablet_id();
  ops_.push_back(std::make_unique<TabletOp>(
      StrCat("FlushMRS(", id, ")"), tablet, &hooks_, /*needs_room=*/true,
      [clock](const TabletStats& st, MaintenanceOpStats* out) {
        out->runnable = st.mrs_rows > 0;
        out->ram_anchored_bytes = static_cast<int64_t>(st.mrs_bytes);
        out->perf_improvement = FlushUrgency(st.mrs_bytes, st.mrs_oldest, clock);
      },
      [tablet] { return tablet->FlushMemRowSet(); }));
  ops_.push_back(std::make_unique<TabletOp>(
      StrCat("FlushDeltas(", id, ")"), tablet, &hooks_, /*needs_room=*/true,
      [clock](const TabletStats& st, MaintenanceOpStats* out) {
        out->runnable = st.dms_bytes > 0;
        out->ram_anchored_bytes = static_cast<int64_t>(st.dms_bytes);
        out->perf_improvement = FlushUrgency(st.dms_bytes, st.dms_oldest, clock);
      },
      [tablet] { return tablet->FlushDeltas(); }));
  ops_.push_back(std::make_unique<TabletOp>(
      StrCat("CompactRowSets(", id, ")"), tablet, &hooks_, /*needs_room=*/true,
      [tablet](const TabletStats& st, MaintenanceOpStats* out) {
        if (st.num_rowsets < 2) return;
        double quality = tablet->MergeCompactionQuality();
        out->runnable = quality > 0;
        out->perf_improvement = quality;
      },
      [tablet] { return tablet->Compact(); }));
  ops_.push_back(std::make_unique<TabletOp>(
      StrCat("MinorDeltaCompaction(", id, ")"), tablet, &hooks_, /*needs_room=*/true,
      [](const TabletStats& st, MaintenanceOpStats* out) {
        size_t threshold = std::max(2, FLAGS_tablet_delta_files_minor_compaction_threshold);
        out->runnable = st.max_redo_files >= threshold;
        out->perf_improvement = out->runnable ? 0.1 * static_cast<double>(st.max_redo_files) /
                                                    static_cast<double>(threshold)
                                              : 0;
      },
      [tablet] { return tablet->MinorCompactDeltas(); }));
  ops_.push_back(std::make_unique<TabletOp>(
      StrCat("MajorDeltaCompaction(", id, ")"), tablet, &hooks_, /*needs_room=*/true,
      [](const TabletStats& st, MaintenanceOpStats* out) {
        out->runnable = st.max_redo_ratio >= FLAGS_tablet_major_delta_compaction_ratio;
        out->perf_improvement = out->runnable ? st.max_redo_ratio : 0;
      },
      [tablet] { return tablet->MajorCompactDeltas(); }));
  // History GC: frees disk, so it competes through data_retained_bytes (the manager alternates
  // it with perf work) rather than a perf score.
  ops_.push_back(std::make_unique<TabletOp>(
      StrCat("UndoHistoryGC(", id, ")"), tablet, &hooks_, /*needs_room=*/false,
      [tablet](const TabletStats& st, MaintenanceOpStats* out) {
        if (st.undo_bytes == 0) return;  // Skips the clock read on tablets without UNDOs.
        const uint64_t bytes = tablet->AncientUndoBytes();
        out->runnable = bytes > 0;
        out->data_retained_bytes = static_cast<int64_t>(bytes);
      },
      [tablet] { return tablet->GcAncientUndoFiles(); }));
}

TabletMaintenance::~TabletMaintenance() { Unregister(); }

void TabletMaintenance::RegisterWith(MaintenanceManager* manager) {
  Unregister();
  manager_ = manager;
  for (auto& op : ops_) manager_->RegisterOp(op.get());
}

void TabletMaintenance::Unregister() {
  if (manager_ == nullptr) return;
  for (auto& op : ops_) manager_->UnregisterOp(op.get());
  manager_ = nullptr;
}

}  // namespace basalt
