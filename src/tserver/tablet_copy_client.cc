#include "tserver/tablet_copy_client.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "cfile/block_manager.h"
#include "common/crc32c.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/consensus_metadata.h"
#include "consensus/log.h"
#include "proto/tablet_copy.grpc.pb.h"
#include "proto/tablet_copy.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "tablet/tablet_metadata.h"
#include "tserver/replica_file.h"

DEFINE_int32(tablet_copy_max_mb_per_sec, 0,
             "Most megabytes per second one tablet copy downloads (0: no limit). A limit leaves "
             "more disk and CPU to the writes a server serves while it receives a copy.");
DEFINE_int32(tablet_copy_nice, 10,
             "Nice value (0-19) of the thread that downloads a tablet copy: a server that also "
             "serves a saturating write load gives those writes the CPU first, and an idle one "
             "copies at full speed. 0: the normal priority.");
DEFINE_int32(tablet_copy_inject_failures, 0,
             "Test only: the first N tablet copies this server receives fail on purpose after "
             "downloading their first block.");

namespace basalt {
namespace {

// Test only: counts the flag down (copies on one server are rare and the count is approximate
// under races, which tests do not rely on).
bool ShouldInjectFailure() {
  if (FLAGS_tablet_copy_inject_failures <= 0) return false;
  --FLAGS_tablet_copy_inject_failures;
  return true;
}

absl::Status Corrupt(std::string_view what) {
  return absl::DataLossError(ToAbsl(StrCat("tablet copy: ", what)));
}

class Download {
 public:
  explicit Download(const TabletCopyClientOptions& o)
      : o_(o), stub_(pb::TabletCopyService::NewStub(NewChannel(o.source_address))) {}

  ~Download() {
    if (session_id_.empty()) return;
    pb::EndTabletCopySessionRequestPB req;
    req.set_session_id(session_id_);
    req.set_is_success(succeeded_);
    pb::EndTabletCopySessionResponsePB resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    grpc::Status s = stub_->EndTabletCopySession(&ctx, req, &resp);
    LOG_IF(WARNING, !s.ok()) << "ending tablet copy session " << session_id_ << ": "
                             << s.error_message();
  }

  absl::StatusOr<uint64_t> Run() {
    BASALT_RETURN_IF_ERROR(BeginSession());
    BASALT_RETURN_IF_ERROR(o_.env->CreateDirs(o_.tablet_dir));
    // The source's replica file with this server's data directory group.
    BASALT_ASSIGN_OR_RETURN(
        const std::string replica,
        ChangeReplicaFileDataDirs(begin_.replica(), "the source's replica file", o_.data_dirs));
    BASALT_ASSIGN_OR_RETURN(
        std::string copying,
        ChangeReplicaFileState(replica, "the source's replica file", ReplicaDataState::kCopying,
                               o_.tombstone_last_logged));
    BASALT_RETURN_IF_ERROR(WriteFileAtomically(o_.env, Path(kReplicaFileName), copying));
    BASALT_RETURN_IF_ERROR(CopyBlocks());
    BASALT_RETURN_IF_ERROR(CopyLog());
    // Before the superblock: a restart between them finds the answers with the data they belong
    // to, or without the data (the tombstone cleanup removes both).
    if (!begin_.answers().empty()) {
      BASALT_RETURN_IF_ERROR(WriteFileAtomically(o_.env, Path(kAnswersFileName), begin_.answers()));
    }
    BASALT_RETURN_IF_ERROR(InstallSuperBlock());
    BASALT_RETURN_IF_ERROR(InstallCmeta());
    BASALT_RETURN_IF_ERROR(WriteFileAtomically(o_.env, Path(kReplicaFileName), replica));
    absl::Status s = o_.env->DeleteFile(Path(kCopyBlocksFileName));
    LOG_IF(WARNING, !s.ok() && !absl::IsNotFound(s)) << s;
    succeeded_ = true;
    return begin_.log_last_index();
  }

 private:
  std::string Path(const char* name) const { return JoinPath(o_.tablet_dir, name); }

  void SetDeadline(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      absl::ToChronoMilliseconds(o_.rpc_timeout));
  }

  absl::Status Call(const char* what, const grpc::Status& s) const {
    if (s.ok()) return absl::OkStatus();
    const absl::Status st = FromGrpcStatus(s);
    return absl::Status(st.code(),
                        ToAbsl(StrCat(what, " from ", o_.source_address, ": ", st.message())));
  }

  absl::Status BeginSession() {
    pb::BeginTabletCopySessionRequestPB req;
    req.set_requestor_uuid(o_.local_uuid);
    req.set_tablet_id(o_.tablet_id);
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    BASALT_RETURN_IF_ERROR(
        Call("BeginTabletCopySession", stub_->BeginTabletCopySession(&ctx, req, &begin_)));
    session_id_ = begin_.session_id();
    BASALT_ASSIGN_OR_RETURN(sb_, DecodeSuperBlock(begin_.superblock(), "the source's superblock"));
    BASALT_ASSIGN_OR_RETURN(cmeta_, DecodeConsensusMetadata(begin_.cmeta(), "the source's cmeta"));
    BASALT_ASSIGN_OR_RETURN(ReplicaFileHeader h,
                            PeekReplicaFile(begin_.replica(), "the source's replica file"));
    if (sb_.tablet_id != o_.tablet_id || h.tablet_id != o_.tablet_id) {
      return Corrupt(StrCat("the source sent tablet ", sb_.tablet_id, " / ", h.tablet_id,
                            " for tablet ", o_.tablet_id));
    }
    if (h.state != ReplicaDataState::kReady) return Corrupt("the source's replica is not ready");
    if (begin_.log_prev_index() < static_cast<uint64_t>(sb_.durable_op_index) ||
        begin_.log_last_index() < begin_.log_prev_index()) {
      return Corrupt(StrCat("inconsistent log range (", begin_.log_prev_index(), ", ",
                            begin_.log_last_index(), "] for durable index ", sb_.durable_op_index));
    }
    std::map<uint64_t, uint64_t> sizes;
    for (const auto& b : begin_.blocks()) {
      if (!sizes.emplace(b.block_id(), b.size()).second) {
        return Corrupt(StrCat("block ", BlockId(b.block_id()).ToString(), " offered twice"));
      }
    }
    // Only what the superblock names is copied (anything else would be left unreferenced).
    for (const RowSetMetadata& rs : sb_.rowsets) {
      for (BlockId id : rs.AllBlocks()) {
        auto it = sizes.find(id.value());
        if (it == sizes.end()) {
          return Corrupt(StrCat("block ", id.ToString(), " of the superblock is not offered"));
        }
        wanted_blocks_[id.value()] = it->second;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Fetch(pb::TabletCopyDataTypePB type, uint64_t block_id, uint64_t offset,
                     pb::DataChunkPB* chunk) {
    if (o_.cancelled && o_.cancelled()) {
      return absl::CancelledError("tablet copy: the tablet server is shutting down");
    }
    pb::FetchDataRequestPB req;
    req.set_session_id(session_id_);
    req.set_type(type);
    req.set_block_id(block_id);
    req.set_offset(offset);
    pb::FetchDataResponsePB resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    BASALT_RETURN_IF_ERROR(Call("FetchData", stub_->FetchData(&ctx, req, &resp)));
    *chunk = std::move(*resp.mutable_chunk());
    Throttle(chunk->data().size());
    if (chunk->offset() != offset) {
      return Corrupt(StrCat("chunk at offset ", chunk->offset(), ", asked for ", offset));
    }
    if (crc32c::Value(chunk->data()) != chunk->crc32c()) {
      return Corrupt(StrCat(type == pb::BLOCK ? "block " + BlockId(block_id).ToString() : "log",
                            " chunk at offset ", offset, ": checksum mismatch"));
    }
    return absl::OkStatus();
  }

  // Sleeps as long as the bytes fetched so far are ahead of --tablet_copy_max_mb_per_sec.
  void Throttle(size_t bytes) {
    fetched_bytes_ += bytes;
    const int limit = FLAGS_tablet_copy_max_mb_per_sec;
    if (limit <= 0) return;
    const absl::Duration due = absl::Seconds(static_cast<double>(fetched_bytes_) /
                                             (static_cast<double>(limit) * (1 << 20)));
    // In short steps, so that a shutdown does not wait for the whole delay.
    while (due - (absl::Now() - start_) > absl::ZeroDuration() &&
           !(o_.cancelled && o_.cancelled())) {
      absl::SleepFor(std::min(due - (absl::Now() - start_), absl::Milliseconds(100)));
    }
  }

  // Blocks are downloaded in groups (kGroupBlocks blocks or kGroupBytes bytes), each group made
  // durable at once: its new ids are added to copy_blocks (one durable write) and then the group
  // is finalized (one sync per block, one per directory). Until finalized a block is a temporary
  // file, which the block manager deletes at startup; once finalized it is listed, so cleaning up
  // an interrupted copy finds it. Per block that is one sync instead of four, so a copy adds few
  // journal commits to the ones the server's WAL needs.
  static constexpr size_t kGroupBlocks = 64;
  static constexpr uint64_t kGroupBytes = uint64_t{64} << 20;

  absl::Status CopyBlocks() {
    std::vector<std::unique_ptr<WritableBlock>> group;
    std::vector<uint64_t> sources;
    uint64_t group_bytes = 0;
    auto finish_group = [&]() -> absl::Status {
      if (group.empty()) return absl::OkStatus();
      for (const auto& b : group) copied_blocks_ += b->id().ToString() + "\n";
      BASALT_RETURN_IF_ERROR(
          WriteFileAtomically(o_.env, Path(kCopyBlocksFileName), copied_blocks_));
      std::vector<WritableBlock*> raw;
      for (const auto& b : group) raw.push_back(b.get());
      BASALT_RETURN_IF_ERROR(o_.block_manager->FinalizeBlocks(raw));
      for (size_t i = 0; i < group.size(); ++i) block_map_[sources[i]] = group[i]->id();
      group.clear();
      sources.clear();
      group_bytes = 0;
      return absl::OkStatus();
    };
    for (const auto& [id, size] : wanted_blocks_) {
      BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableBlock> block,
                              o_.block_manager->CreateBlock());
      BASALT_RETURN_IF_ERROR(CopyBlock(id, size, block.get()));
      group.push_back(std::move(block));
      sources.push_back(id);
      group_bytes += size;
      if (group.size() >= kGroupBlocks || group_bytes >= kGroupBytes) {
        BASALT_RETURN_IF_ERROR(finish_group());
      }
      if (block_map_.size() + group.size() == 1 && ShouldInjectFailure()) {
        return absl::InternalError("injected tablet copy failure (--tablet_copy_inject_failures)");
      }
    }
    return finish_group();
  }

  // Downloads block `source_id` (`size` bytes) into `block` (not finalized).
  absl::Status CopyBlock(uint64_t source_id, uint64_t size, WritableBlock* block) {
    uint64_t offset = 0;
    while (offset < size) {
      pb::DataChunkPB chunk;
      BASALT_RETURN_IF_ERROR(Fetch(pb::BLOCK, source_id, offset, &chunk));
      if (chunk.total_length() != size || chunk.data().empty() ||
          chunk.data().size() > size - offset) {
        return Corrupt(StrCat("block ", BlockId(source_id).ToString(), ": chunk of ",
                              chunk.data().size(), " bytes at ", offset, " of ", size, " (total ",
                              chunk.total_length(), ")"));
      }
      BASALT_RETURN_IF_ERROR(block->Append(chunk.data()));
      offset += chunk.data().size();
    }
    return absl::OkStatus();
  }

  absl::Status CopyLog() {
    if (o_.wal.Exists()) {
      return absl::FailedPreconditionError(ToAbsl(StrCat("the ", o_.wal.ToString(), " exists")));
    }
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Log> log, o_.wal.Open());
    BASALT_RETURN_IF_ERROR(log->Start());
    if (begin_.log_prev_index() > 0) {
      BASALT_RETURN_IF_ERROR(
          log->ResetToSnapshot(OpId{begin_.log_prev_term(), begin_.log_prev_index()}));
    }
    uint64_t next = begin_.log_prev_index() + 1;
    while (next <= begin_.log_last_index()) {
      pb::DataChunkPB chunk;
      BASALT_RETURN_IF_ERROR(Fetch(pb::LOG_ENTRIES, 0, next, &chunk));
      pb::LogEntryBatchPB batch;
      if (!batch.ParseFromString(chunk.data()) || batch.entries_size() == 0 ||
          next + batch.entries_size() - 1 > begin_.log_last_index()) {
        return Corrupt(StrCat("bad log chunk at index ", next));
      }
      std::vector<LogEntry> entries;
      for (pb::LogEntryPB& e : *batch.mutable_entries()) {
        if (!pb::LogEntryTypePB_IsValid(e.type()) || e.term() == 0) {
          return Corrupt(StrCat("bad log entry at index ", next + entries.size()));
        }
        LogEntry entry;
        entry.term = e.term();
        entry.index = next + entries.size();
        entry.type = static_cast<EntryType>(e.type());
        entry.timestamp = e.timestamp();
        entry.data = std::move(*e.mutable_data());
        entries.push_back(std::move(entry));
      }
      next += entries.size();
      BASALT_RETURN_IF_ERROR_PREPEND(log->Append(std::move(entries)), "writing the copied log");
    }
    log->Shutdown();
    return absl::OkStatus();
  }

  absl::Status InstallSuperBlock() {
    auto map = [this](BlockId* id) -> absl::Status {
      auto it = block_map_.find(id->value());
      if (it == block_map_.end()) return Corrupt(StrCat("block ", id->ToString(), " not copied"));
      *id = it->second;
      return absl::OkStatus();
    };
    for (RowSetMetadata& rs : sb_.rowsets) {
      for (auto& [column, id] : rs.column_blocks) BASALT_RETURN_IF_ERROR(map(&id));
      if (rs.key_index_block.valid()) BASALT_RETURN_IF_ERROR(map(&rs.key_index_block));
      if (rs.bloom_block.valid()) BASALT_RETURN_IF_ERROR(map(&rs.bloom_block));
      for (BlockId& id : rs.redo_blocks) BASALT_RETURN_IF_ERROR(map(&id));
      for (BlockId& id : rs.undo_blocks) BASALT_RETURN_IF_ERROR(map(&id));
    }
    sb_.orphaned_blocks.clear();
    return WriteSuperBlock(o_.env, Path(kSuperBlockFileName), sb_);
  }

  absl::Status InstallCmeta() {
    HardState& hs = cmeta_.hard_state;
    hs.commit = std::min(hs.commit, begin_.log_last_index());
    if (o_.local_hard_state.has_value()) {
      const HardState& local = *o_.local_hard_state;
      if (local.term > hs.term) {
        hs.term = local.term;
        hs.vote = local.vote;
      } else if (local.term == hs.term) {
        hs.vote = local.vote;
      } else {
        hs.vote.clear();
      }
    } else {
      hs.vote.clear();  // The source's vote is not this replica's.
    }
    return WriteFileAtomically(o_.env, Path(kCmetaFileName), EncodeConsensusMetadata(cmeta_));
  }

  const TabletCopyClientOptions& o_;
  std::unique_ptr<pb::TabletCopyService::Stub> stub_;
  pb::BeginTabletCopySessionResponsePB begin_;
  std::string session_id_;
  bool succeeded_ = false;
  TabletSuperBlock sb_;
  ConsensusMetadataContents cmeta_;
  std::map<uint64_t, BlockId> block_map_;       // Source id -> local block.
  std::map<uint64_t, uint64_t> wanted_blocks_;  // Source id -> size, of the superblock's blocks.
  std::string copied_blocks_;                   // Contents of copy_blocks.
  const absl::Time start_ = absl::Now();
  uint64_t fetched_bytes_ = 0;
};

}  // namespace

absl::StatusOr<uint64_t> RunTabletCopy(const TabletCopyClientOptions& options) {
  absl::StatusOr<uint64_t> result;
  // On a thread of its own, so that its lower priority ends with it: an unprivileged process
  // cannot raise a thread's priority back, and the caller is an RPC thread.
  std::thread copier([&] {
    const int nice = std::clamp(FLAGS_tablet_copy_nice, 0, 19);
    if (nice > 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) != 0) {
      PLOG(WARNING) << "lowering the priority of a tablet copy";  // It runs at normal priority.
    }
    Download download(options);
    result = download.Run();
  });
  copier.join();
  return result;
}

}  // namespace basalt
