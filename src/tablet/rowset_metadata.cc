#include "tablet/rowset_metadata.h"

namespace basalt {

std::vector<BlockId> RowSetMetadata::AllBlocks() const {
  std::vector<BlockId> out;
  out.reserve(column_blocks.size() + 2 + redo_blocks.size() + undo_blocks.size());
  auto add = [&out](BlockId id) {
    if (id.valid()) out.push_back(id);
  };
  for (const auto& [column_id, block] : column_blocks) add(block);
  add(key_index_block);
  add(bloom_block);
  for (BlockId id : redo_blocks) add(id);
  for (BlockId id : undo_blocks) add(id);
  return out;
}

}  // namespace basalt
