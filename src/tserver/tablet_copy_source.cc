#include "tserver/tablet_copy_source.h"

#include <utility>

#include <glog/logging.h>

#include "common/crc32c.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/log.h"
#include "proto/tablet_copy.pb.h"
#include "tablet/tablet_metadata.h"
#include "tserver/replica_file.h"
#include "tserver/replica_files.h"
#include "tserver/tablet_replica.h"

namespace basalt {
namespace {

// Captures that found a block deleted under them before Begin gives up.
constexpr int kMaxCaptureAttempts = 5;

void SetChunk(uint64_t offset, std::string data, uint64_t total, pb::DataChunkPB* chunk) {
  chunk->set_offset(offset);
  chunk->set_crc32c(crc32c::Value(data));
  chunk->set_data(std::move(data));
  chunk->set_total_length(total);
}

}  // namespace

TabletCopySource::TabletCopySource(std::shared_ptr<TabletReplica> replica)
    : replica_(std::move(replica)) {}

TabletCopySource::~TabletCopySource() {
  if (anchor_.has_value()) replica_->ReleaseLogAnchor(*anchor_);
}

const std::string& TabletCopySource::tablet_id() const { return replica_->tablet_id(); }

absl::StatusOr<std::unique_ptr<TabletCopySource>> TabletCopySource::Begin(
    std::shared_ptr<TabletReplica> replica, pb::BeginTabletCopySessionResponsePB* response) {
  BASALT_RETURN_IF_ERROR(replica->CheckRunning());
  RaftNode* node = replica->raft();
  if (node == nullptr) return absl::UnavailableError("the replica has no Raft node");
  const TabletReplicaContext& ctx = replica->context();
  const std::string& id = replica->tablet_id();
  std::unique_ptr<TabletCopySource> source(new TabletCopySource(replica));
  replica->AnchorLog(0);  // No log GC while capturing.
  source->anchor_ = 0;
  std::string superblock;
  absl::StatusOr<TabletSuperBlock> sb;
  for (int attempt = 1;; ++attempt) {
    BASALT_RETURN_IF_ERROR(
        ReadFileToString(ctx.env, ReplicaFiles::SuperBlockPath(ctx, id), &superblock));
    sb = DecodeSuperBlock(superblock, ReplicaFiles::SuperBlockPath(ctx, id));
    BASALT_RETURN_IF_ERROR(sb.status());
    source->blocks_.clear();
    absl::Status s;
    for (const RowSetMetadata& rs : sb->rowsets) {
      if (!s.ok()) break;
      for (BlockId block : rs.AllBlocks()) {
        absl::StatusOr<std::unique_ptr<ReadableBlock>> b = ctx.block_manager->OpenBlock(block);
        if (!b.ok()) {
          s = b.status();
          break;
        }
        source->blocks_[block.value()] = std::move(*b);
      }
      if (!s.ok()) break;
    }
    if (s.ok()) break;
    if (!absl::IsNotFound(s) || attempt == kMaxCaptureAttempts) {
      return absl::UnavailableError(
          ToAbsl(StrCat("tablet ", id, ": blocks kept changing under the copy: ", s.ToString())));
    }
  }
  std::string cmeta;
  std::string replica_file;
  BASALT_RETURN_IF_ERROR(ReadFileToString(ctx.env, ReplicaFiles::CmetaPath(ctx, id), &cmeta));
  BASALT_RETURN_IF_ERROR(
      ReadFileToString(ctx.env, ReplicaFiles::ReplicaFilePath(ctx, id), &replica_file));
  // This server's data directory positions mean nothing on the receiver (which writes its own).
  BASALT_ASSIGN_OR_RETURN(
      replica_file,
      ChangeReplicaFileDataDirs(replica_file, ReplicaFiles::ReplicaFilePath(ctx, id), {}));
  const Log& log = node->log();
  source->log_prev_index_ =
      std::max(static_cast<uint64_t>(sb->durable_op_index), log.FirstIndex() - 1);
  // Only committed entries: they never change, so the copy holds one history however long it
  // takes, and a leader of any later term may count the peer as holding them.
  source->log_last_index_ =
      std::max(std::min(log.LastIndex(), node->commit_index()), source->log_prev_index_);
  // Keep (prev, last] for the session; drop the capture's anchor at 0.
  replica->AnchorLog(source->log_prev_index_);
  replica->ReleaseLogAnchor(0);
  source->anchor_ = source->log_prev_index_;
  uint64_t prev_term = 0;
  if (source->log_prev_index_ > 0) {
    BASALT_ASSIGN_OR_RETURN(prev_term, log.Term(source->log_prev_index_));
  }
  response->set_superblock(std::move(superblock));
  response->set_cmeta(std::move(cmeta));
  response->set_replica(std::move(replica_file));
  response->set_answers(replica->AnswersImage(source->log_prev_index_));
  for (const auto& [block_id, block] : source->blocks_) {
    auto* b = response->add_blocks();
    b->set_block_id(block_id);
    b->set_size(block->size());
  }
  response->set_log_prev_index(source->log_prev_index_);
  response->set_log_prev_term(prev_term);
  response->set_log_last_index(source->log_last_index_);
  return source;
}

absl::Status TabletCopySource::FetchBlock(uint64_t block_id, uint64_t offset, uint64_t max_length,
                                          pb::DataChunkPB* chunk) const {
  auto it = blocks_.find(block_id);
  if (it == blocks_.end()) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat("block_id: ", BlockId(block_id).ToString(), " is not part of the session")));
  }
  const ReadableBlock& block = *it->second;
  if (offset > block.size()) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat("offset: ", offset, " is past the end of block ",
                      BlockId(block_id).ToString(), " (", block.size(), " bytes)")));
  }
  const uint64_t n = std::min(max_length, block.size() - offset);
  std::string data;
  if (n > 0) BASALT_RETURN_IF_ERROR(block.ReadAt(offset, n, &data));
  SetChunk(offset, std::move(data), block.size(), chunk);
  return absl::OkStatus();
}

absl::Status TabletCopySource::FetchLog(uint64_t first_index, uint64_t max_length,
                                        pb::DataChunkPB* chunk) const {
  if (first_index <= log_prev_index_ || first_index > log_last_index_) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat("offset: log index ", first_index, " is outside the session's entries (",
                      log_prev_index_, ", ", log_last_index_, "]")));
  }
  RaftNode* node = replica_->raft();
  if (node == nullptr) return absl::UnavailableError("the replica has no Raft node");
  BASALT_ASSIGN_OR_RETURN(std::vector<LogEntry> entries,
                          node->log().Entries(first_index, log_last_index_ + 1, max_length));
  pb::LogEntryBatchPB batch;
  for (LogEntry& e : entries) {
    pb::LogEntryPB* out = batch.add_entries();
    out->set_term(e.term);
    out->set_type(static_cast<pb::LogEntryTypePB>(e.type));
    out->set_timestamp(e.timestamp);
    out->set_data(std::move(e.data));
  }
  SetChunk(first_index, batch.SerializeAsString(), log_last_index_, chunk);
  return absl::OkStatus();
}

}  // namespace basalt
