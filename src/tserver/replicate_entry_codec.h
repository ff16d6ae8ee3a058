#pragma once

// The write-ahead log payload of a tablet entry: a serialized ReplicateMsgPB
// (proto/tablet_replica.proto; docs/wal.md). A write's entry is built without parsing or copying
// the request's rows twice: the header fields, then the WriteOpPB with the row payload copied
// once, straight into the entry; the leader appends the timestamp last, under its propose lock
// (a protobuf parser takes fields in any order).

#include <cstdint>
#include <string>
#include <vector>

#include "common/hybrid_clock.h"

namespace basalt {

namespace pb {
class RequestIdPB;
class RowOperationsPB;
}  // namespace pb

// What a write entry says besides its rows.
struct WriteEntryHeader {
  std::string origin;  // The proposing server's uuid.
  uint64_t seq = 0;    // Its per-replica request sequence.
  uint32_t schema_version = 0;
  const pb::RequestIdPB* request_id = nullptr;  // The client's request id, if any (borrowed).
  // When rows outside the partition were removed: the request's row count and the request row
  // of each row in the entry (WriteOpPB.request_num_rows / request_rows); empty: none removed.
  uint32_t request_num_rows = 0;
  std::vector<int> request_rows;
};

// A ReplicateMsgPB carrying a write of `rows` described by `header`, without its timestamp.
std::string EncodeWriteEntryBody(const WriteEntryHeader& header, const pb::RowOperationsPB& rows);
// Appends ReplicateMsgPB.timestamp = ts to an entry body.
void AppendEntryTimestamp(HybridTime ts, std::string* body);

}  // namespace basalt
