#pragma once

// Helpers shared by the delta store tests (deltamemstore, delta_file, delta_applier,
// delta_tracker): building change lists and random delta streams.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/random.h"
#include "common/types.h"
#include "tablet/delta_store.h"
#include "tablet/row_changelist.h"

namespace basalt::delta_test {

// An UPDATE of INT32 columns: (id, value or nullopt for NULL) pairs.
inline std::string UpdateInt32(std::vector<std::pair<ColumnId, std::optional<int32_t>>> cols) {
  std::string out;
  RowChangeListEncoder enc(&out);
  enc.SetToUpdate();
  for (const auto& [id, v] : cols) {
    enc.AddColumnUpdate(id, DataType::kInt32, v ? &*v : nullptr);
  }
  return out;
}

inline std::string DeleteList() {
  std::string out;
  RowChangeListEncoder(&out).SetToDelete();
  return out;
}

// A REINSERT of INT32 columns.
inline std::string ReinsertInt32(std::vector<std::pair<ColumnId, std::optional<int32_t>>> cols) {
  std::string out;
  RowChangeListEncoder enc(&out);
  enc.SetToReinsert();
  for (const auto& [id, v] : cols) {
    enc.AddColumnUpdate(id, DataType::kInt32, v ? &*v : nullptr);
  }
  return out;
}

// A random, well-framed change list over INT32 columns 1..3: mostly UPDATEs, some DELETEs and
// REINSERTs (the type sequence is not necessarily a valid row history; stores do not care).
inline std::string RandomChangeList(Random* rng) {
  const uint64_t kind = rng->Uniform(10);
  if (kind == 0) return DeleteList();
  std::vector<std::pair<ColumnId, std::optional<int32_t>>> cols;
  for (ColumnId id = 1; id <= 3; ++id) {
    if (kind != 1 && !rng->OneIn(2)) continue;
    std::optional<int32_t> v;
    if (!rng->OneIn(5)) v = static_cast<int32_t>(rng->Next32());
    cols.emplace_back(id, v);
  }
  if (cols.empty()) cols.emplace_back(1, static_cast<int32_t>(rng->Next32()));
  return kind == 1 ? ReinsertInt32(cols) : UpdateInt32(cols);
}

// A model of a delta store: key -> change bytes.
using Model = std::map<DeltaKey, std::string>;

// The model's entries of rows [start, start + n), in order.
inline std::vector<std::pair<DeltaKey, std::string>> ModelRange(const Model& m, rowid_t start,
                                                                size_t n) {
  std::vector<std::pair<DeltaKey, std::string>> out;
  const uint64_t end = uint64_t{start} + n;
  for (auto it = m.lower_bound(DeltaKey{start, HybridTime::kMin});
       it != m.end() && it->first.row < end; ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

inline std::vector<std::pair<DeltaKey, std::string>> ToPairs(const std::vector<DeltaEntry>& v) {
  std::vector<std::pair<DeltaKey, std::string>> out;
  for (const DeltaEntry& e : v) out.emplace_back(e.key, std::string(e.changes));
  return out;
}

}  // namespace basalt::delta_test

namespace basalt {
inline void PrintTo(const DeltaKey& k, std::ostream* os) {
  *os << "(row " << k.row << ", ts " << k.ts.value() << ")";
}
}  // namespace basalt
