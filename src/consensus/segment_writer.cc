#include "consensus/segment_writer.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

namespace {

// Registered at load time, so no caller of Append holds a lock while registering.
Histogram* const kWalFsyncSeconds = MetricRegistry::Global()->GetHistogram(
    "basalt_wal_fsync_seconds", "Latency of WAL fsyncs after appending a batch.");

}  // namespace

absl::StatusOr<std::vector<uint64_t>> ListSegmentFiles(Env* env, const std::string& dir) {
  if (!env->FileExists(dir)) {
    BASALT_RETURN_IF_ERROR(env->CreateDirs(dir));
    BASALT_RETURN_IF_ERROR(env->SyncDir(DirName(dir)));
  }
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->GetChildren(dir));
  std::vector<uint64_t> seqs;
  for (const std::string& name : names) {
    uint64_t seq;
    std::string_view base(name);
    if (base.ends_with(".tmp") && ParseSegmentFileName(base.substr(0, base.size() - 4), &seq)) {
      // Left by a rewrite (torn tail cut, truncation) interrupted before its rename.
      BASALT_RETURN_IF_ERROR(env->DeleteFile(JoinPath(dir, name)));
    } else if (ParseSegmentFileName(name, &seq)) {
      seqs.push_back(seq);
    }
  }
  std::sort(seqs.begin(), seqs.end());
  return seqs;
}

SegmentWriter::SegmentWriter(Env* env, std::string dir, const LogOptions& options)
    : env_(env), dir_(std::move(dir)), options_(options) {}

SegmentWriter::~SegmentWriter() = default;

absl::StatusOr<std::shared_ptr<SegmentFile>> SegmentWriter::Create(const SegmentHeader& header) {
  DCHECK(file_ == nullptr);
  const std::string path = Path(header.seq);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> w, env_->NewWritableFile(path));
  BASALT_RETURN_IF_ERROR(w->Append(EncodeSegmentHeader(header)));
  BASALT_RETURN_IF_ERROR(w->Sync());
  BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> r, env_->NewRandomAccessFile(path));
  file_ = std::move(w);
  seq_ = header.seq;
  preallocated_end_ = 0;
  synced_size_ = file_->Size();
  write_failed_ = false;
  auto seg = std::make_shared<SegmentFile>();
  seg->seq = header.seq;
  seg->first_index = header.first_index;
  seg->prev_term = header.prev_term;
  seg->reader = std::move(r);
  return seg;
}

absl::Status SegmentWriter::OpenExisting(uint64_t seq) {
  DCHECK(file_ == nullptr);
  BASALT_ASSIGN_OR_RETURN(file_, env_->NewAppendableFile(Path(seq)));
  seq_ = seq;
  preallocated_end_ = 0;
  synced_size_ = file_->Size();
  write_failed_ = false;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> SegmentWriter::Append(std::string_view data) {
  const uint64_t offset = file_->Size();
  write_failed_ = true;
  BASALT_RETURN_IF_ERROR(PreallocateFor(offset + data.size()));
  BASALT_RETURN_IF_ERROR(file_->Append(data));
  BASALT_RETURN_IF_ERROR(file_->Flush());
  write_failed_ = false;
  if (options_.force_fsync) {
    ScopedLatency fsync_latency(kWalFsyncSeconds);
    BASALT_RETURN_IF_ERROR(file_->Sync());
    ++num_syncs_;
  }
  synced_size_ = file_->Size();
  return offset;
}

absl::Status SegmentWriter::PreallocateFor(uint64_t end) {
  if (!options_.force_fsync || options_.preallocate_bytes == 0 || end <= preallocated_end_) {
    return absl::OkStatus();
  }
  // Up to the segment's size at most; a write past it gets exactly its own room.
  const uint64_t target =
      std::max(end, std::min(end + options_.preallocate_bytes, options_.segment_size_bytes));
  BASALT_RETURN_IF_ERROR(file_->PreallocateZeros(target));
  preallocated_end_ = target;
  return absl::OkStatus();
}

absl::Status SegmentWriter::Rewind() {
  CHECK(write_failed_);
  if (file_ != nullptr) {
    std::unique_ptr<WritableFile> w = std::move(file_);
    (void)w->Close();  // Its state does not matter: the file is rewritten.
  }
  const std::string path = Path(seq_);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> r, env_->NewRandomAccessFile(path));
  std::string kept(synced_size_, '\0');
  std::string_view data;
  BASALT_RETURN_IF_ERROR(r->ReadAt(0, kept.size(), kept.data(), &data));
  if (data.size() != synced_size_) {
    return absl::DataLossError(StrCat("short read of ", path, " rewinding it"));
  }
  if (data.data() != kept.data()) kept.assign(data);
  BASALT_RETURN_IF_ERROR(WriteFileAtomically(env_, path, kept));
  write_failed_ = false;
  return absl::OkStatus();
}

absl::Status SegmentWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  std::unique_ptr<WritableFile> w = std::move(file_);
  absl::Status s = w->Sync();
  absl::Status c = w->Close();
  return s.ok() ? c : s;
}

}  // namespace basalt
