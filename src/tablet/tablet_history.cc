// Tablet's history: the ancient history mark, history GC of UNDO files, and the rule for snapshot
// reads older than the mark (docs/tablet.md "History GC"). The rest of the class is in tablet.cc.
//
// What must stay true: a scan returns exactly the rows of its snapshot, or an error; never rows
// GC has made wrong. A history GC with mark m removes history below m (UNDOs with timestamps < m,
// rows deleted before m; compaction.h); a snapshot that holds every applied op older than m needs
// none of it. Hence:
//  1. Every GC raises history_gc_mark_ to its m (RaiseHistoryGcMark) before its removal is
//     published (a DeltaTracker's UNDO list under the tracker's mutex, or new Components under
//     components_mu_), and PersistSuperBlock, which runs after the removal, stores the mark with
//     the rowsets: a superblock never lists GC'd rowsets with a lower mark, across restarts too.
//  2. NewIterator pins the stores first (it holds the Components; each DiskRowSet iterator takes
//     its StoreSet when created) and checks the snapshot against the mark afterwards. A removal
//     the pinned stores reflect was published before the pin, so its mark was stored before that
//     and the check, ordered after the pin by the same mutex, sees it. Removals published later
//     do not touch the pinned stores: a scan that started before a GC keeps its files open.
//  3. Removed history belongs to ops that were applied (they were in a compaction's snapshot),
//     all at or below last_applied_ts_. A snapshot lacks removed history only if it lacks an
//     applied op below the mark, which CheckSnapshotIsExact tests conservatively.
// The user-facing rule (CheckSnapshotNotTooOld) is stricter: a READ_AT_SNAPSHOT scan below the
// mark is refused even while its history happens to be intact, so the outcome does not depend on
// whether a GC has run yet.

#include <algorithm>
#include <memory>
#include <vector>

#include <glog/logging.h>

#include "common/strings.h"
#include "tablet/delta_tracker.h"
#include "tablet/tablet.h"
#include "tablet/tablet_components.h"

namespace basalt {

HybridTime Tablet::UncappedHistoryMark() const {
  const uint64_t now_us = options_.clock->Now().physical_micros();
  const uint64_t age_us =
      uint64_t{static_cast<uint32_t>(FLAGS_tablet_history_max_age_sec)} * 1000000;
  return HybridTime::FromMicros(now_us > age_us ? now_us - age_us : 0);
}

HybridTime Tablet::AncientHistoryMark(const Components& c) const {
  HybridTime ahm = UncappedHistoryMark();
  auto cap = [&](HybridTime t) {
    if (t.is_valid() && t < ahm) ahm = t;
  };
  for (const auto& store : {c.mrs, c.frozen}) {
    if (store != nullptr) cap(store->mrs->min_timestamp());
  }
  for (const auto& r : c.drs) cap(r->delta_tracker()->dms_min_timestamp());
  return ahm;
}

void Tablet::RaiseHistoryGcMark(HybridTime mark) {
  uint64_t current = history_gc_mark_.load();
  // On failure compare_exchange_weak reloads `current`; stop once someone stored a higher mark.
  while (current < mark.value() && !history_gc_mark_.compare_exchange_weak(current, mark.value())) {
  }
}

HybridTime Tablet::history_gc_mark() const { return HybridTime(history_gc_mark_.load()); }

absl::Status Tablet::CheckSnapshotNotTooOld(HybridTime snapshot_time) const {
  const HybridTime ahm = UncappedHistoryMark();
  const HybridTime gc = history_gc_mark();
  if (snapshot_time >= ahm && snapshot_time >= gc) return absl::OkStatus();
  const std::string flag =
      StrCat("--tablet_history_max_age_sec=", FLAGS_tablet_history_max_age_sec);
  if (gc > ahm) {  // The flag was raised (or the clock stepped back) since a GC ran.
    return absl::InvalidArgumentError(
        StrCat("snapshot time ", snapshot_time.ToString(), " is too old for tablet ", tablet_id_,
               ": history GC has removed versions older than ", gc.ToString(),
               " (the ancient history mark now is ", ahm.ToString(), ", now minus ", flag, " s)"));
  }
  return absl::InvalidArgumentError(StrCat("snapshot time ", snapshot_time.ToString(),
                                           " is too old for tablet ", tablet_id_,
                                           ": history is kept only from the ancient history mark ",
                                           ahm.ToString(), " on (now minus ", flag, " s)"));
}

absl::Status Tablet::CheckSnapshotIsExact(const MvccSnapshot& snap) const {
  // Read after the caller pinned its stores (point 2 of the file comment).
  const HybridTime gc = history_gc_mark();
  const HybridTime before = snap.all_committed_before();
  // The snapshot holds every op below `before`: all history GC removed when before >= gc, and
  // every applied op (hence all history) when before > last_applied_ts_.
  if (before >= gc || before > HybridTime(last_applied_ts_.load())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("snapshot (every op before ", before.ToString(), ") is too old for tablet ",
             tablet_id_, ": history GC has removed versions older than ", gc.ToString(),
             " (--tablet_history_max_age_sec=", FLAGS_tablet_history_max_age_sec, " s)"));
}

uint64_t Tablet::AncientUndoBytes() const {
  std::shared_ptr<const Components> c = GetComponents();
  const HybridTime mark = AncientHistoryMark(*c);
  uint64_t bytes = 0;
  for (const auto& r : c->drs) bytes += r->delta_tracker()->AncientUndoBytes(mark);
  return bytes;
}

absl::Status Tablet::GcAncientUndoFiles() {
  std::shared_ptr<const Components> c = GetComponents();
  const HybridTime mark = AncientHistoryMark(*c);
  std::vector<std::shared_ptr<DiskRowSet>> candidates;
  for (const auto& r : c->drs) {
    if (r->delta_tracker()->AncientUndoBytes(mark) > 0) candidates.push_back(r);
  }
  if (candidates.empty()) return absl::OkStatus();
  // Rowsets a compaction holds are skipped: it drops their ancient UNDOs itself.
  std::vector<std::shared_ptr<DiskRowSet>> mine = ReserveRowSets(candidates);
  // A compaction that ended between GetComponents and the reservation replaced some candidates
  // and retired all their blocks; dropping (and orphaning) their files again would list a block
  // twice. Reserved rowsets still in the current Components stay there until released.
  c = GetComponents();
  RaiseHistoryGcMark(mark);  // Before any removal is published (file comment, point 1).
  std::vector<BlockId> orphans;
  for (const auto& r : mine) {
    if (std::find(c->drs.begin(), c->drs.end(), r) == c->drs.end()) continue;
    for (BlockId id : r->delta_tracker()->DropAncientUndoFiles(mark)) orphans.push_back(id);
  }
  ReleaseRowSets(mine);
  if (orphans.empty()) return absl::OkStatus();
  VLOG(1) << "tablet " << tablet_id_ << " history GC: dropped " << orphans.size()
          << " UNDO files older than " << mark.ToString();
  // The superblock without the files is the commit point; the blocks go only once it is durable
  // (a failed write keeps them pending for the next one, and a crash keeps the old superblock,
  // which still lists them).
  return PersistSuperBlock(std::move(orphans));
}

}  // namespace basalt
