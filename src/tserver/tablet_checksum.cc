#include "tserver/tablet_checksum.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/coding.h"
#include "common/column_block.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "tablet/tablet.h"

namespace basalt {
namespace {

constexpr size_t kBlockRows = 1024;

uint32_t RowCrc(const std::vector<ColumnBlock*>& blocks, size_t row, std::string* scratch) {
  scratch->clear();
  for (const ColumnBlock* b : blocks) {
    const bool is_null = b->is_null(row);
    scratch->push_back(is_null ? 1 : 0);
    if (is_null) continue;
    if (GetTypeInfo(b->type).is_variable_length()) {
      const auto* v = reinterpret_cast<const std::string_view*>(b->cell(row));
      PutFixed32(scratch, static_cast<uint32_t>(v->size()));
      scratch->append(v->data(), v->size());
    } else {
      scratch->append(reinterpret_cast<const char*>(b->cell(row)), b->cell_size);
    }
  }
  return crc32c::Value(*scratch);
}

}  // namespace

absl::StatusOr<TabletChecksum> ChecksumTablet(const Tablet& tablet, const MvccSnapshot& snap) {
  const Schema schema = tablet.schema();
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RowBlockIterator> iter,
                          tablet.NewIterator(schema, snap, ScanSpec(), /*ordered=*/false));
  BASALT_RETURN_IF_ERROR(iter->Init());
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers;
  std::vector<ColumnBlock*> blocks;
  for (const ColumnSchema& c : schema.columns()) {
    buffers.push_back(std::make_unique<ColumnBlockBuffer>(c.type(), kBlockRows, c.is_nullable()));
    blocks.push_back(buffers.back()->block());
  }
  TabletChecksum out;
  std::string scratch;
  while (iter->HasNext()) {
    BASALT_ASSIGN_OR_RETURN(size_t n, iter->NextBlock(blocks, kBlockRows));
    for (size_t r = 0; r < n; ++r) out.checksum += RowCrc(blocks, r, &scratch);
    out.num_rows += n;
  }
  return out;
}

}  // namespace basalt
