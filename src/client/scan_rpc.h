#pragma once

// The Scan RPC as the client sends it: answers are parsed into column buffers reused from one
// batch to the next (ScanBlockPool), instead of freshly allocated ones. Private to src/client.
//
// Why: a scan receives its whole projection through these buffers (40 MB for W3 of
// docs/performance.md). Fresh ~1 MiB buffers for every batch meant a malloc that maps new pages
// and a page fault for every 4 KiB of them: twice the client's CPU of a full scan on a VM, where
// faults are dear. Reused buffers keep their capacity and their pages.
//
// The generated stub parses with ParseFromZeroCopyStream, whose Clear() deletes a proto3
// submessage (the `data` block and its strings); this call keeps the block and merges into it.

#include <memory>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace basalt::pb {
class ColumnarRowBlockPB;
class ScanRequestPB;
class ScanResponsePB;
}  // namespace basalt::pb

namespace basalt::client::internal {

// Row blocks of answers the caller is done with, kept for the next answers. Thread-safe.
class ScanBlockPool {
 public:
  // At most `capacity` blocks are kept; more are freed.
  explicit ScanBlockPool(size_t capacity);
  ~ScanBlockPool();
  ScanBlockPool(const ScanBlockPool&) = delete;
  ScanBlockPool& operator=(const ScanBlockPool&) = delete;

  void SetCapacity(size_t capacity) ABSL_LOCKS_EXCLUDED(mu_);
  // A kept block (cleared, with its buffers' capacity), or null.
  std::unique_ptr<pb::ColumnarRowBlockPB> Take() ABSL_LOCKS_EXCLUDED(mu_);
  void Put(std::unique_ptr<pb::ColumnarRowBlockPB> block) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  size_t capacity_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<pb::ColumnarRowBlockPB>> blocks_ ABSL_GUARDED_BY(mu_);
};

// Sends `req` as a Scan RPC on `channel` and parses the answer into *resp, whose `data` block
// (set from `pool` when it has one) keeps its buffers. The status is the RPC's.
absl::Status CallScan(const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* ctx,
                      const pb::ScanRequestPB& req, ScanBlockPool* pool, pb::ScanResponsePB* resp);

// Parses a serialized Scan response (a frame RPC answer) into *resp as CallScan does: its `data`
// block (from `pool` when *resp has none) keeps its buffers. DATA_LOSS when `bytes` does not
// parse.
absl::Status ParseScanResponse(std::string_view bytes, ScanBlockPool* pool,
                               pb::ScanResponsePB* resp);

}  // namespace basalt::client::internal
