#pragma once

// The write-ahead log payload of a tablet entry: a serialized ReplicateMsgPB
// (proto/tablet_replica.proto; docs/wal.md). A write's entry is built without parsing or copying
// the request's rows twice: the header fields, then the WriteOpPB with the row payload copied
// once, straight into the entry; the leader appends the timestamp last, under its propose lock
// (a protobuf parser takes fields in any order).

#include <cstdint>
#include <string>

#include "common/hybrid_clock.h"

namespace basalt {

namespace pb {
class RowOperationsPB;
}  // namespace pb

// A ReplicateMsgPB carrying a write of `rows` encoded for `schema_version`, from `origin` with
// request sequence `seq`, without its timestamp.
std::string EncodeWriteEntryBody(const std::string& origin, uint64_t seq, uint32_t schema_version,
                                 const pb::RowOperationsPB& rows);
// Appends ReplicateMsgPB.timestamp = ts to an entry body.
void AppendEntryTimestamp(HybridTime ts, std::string* body);

}  // namespace basalt
