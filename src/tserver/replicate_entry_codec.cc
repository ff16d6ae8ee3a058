#include "tserver/replicate_entry_codec.h"

#include <google/protobuf/wire_format_lite.h>

#include "common/coding.h"
#include "proto/tablet_replica.pb.h"

namespace basalt {
namespace {

using google::protobuf::internal::WireFormatLite;

// A field's one-byte tag, from the generated field numbers (every field used here is below 16).
constexpr char Tag(int field, WireFormatLite::WireType type) {
  return static_cast<char>(WireFormatLite::MakeTag(field, type));
}
static_assert(pb::ReplicateMsgPB::kTimestampFieldNumber < 16 &&
                  pb::ReplicateMsgPB::kWriteFieldNumber < 16 &&
                  pb::WriteOpPB::kSchemaVersionFieldNumber < 16 &&
                  pb::WriteOpPB::kRowOperationsFieldNumber < 16,
              "one-byte tags");

constexpr char kTagTimestamp =
    Tag(pb::ReplicateMsgPB::kTimestampFieldNumber, WireFormatLite::WIRETYPE_FIXED64);
constexpr char kTagWrite =
    Tag(pb::ReplicateMsgPB::kWriteFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
constexpr char kTagSchemaVersion =
    Tag(pb::WriteOpPB::kSchemaVersionFieldNumber, WireFormatLite::WIRETYPE_VARINT);
constexpr char kTagRowOperations =
    Tag(pb::WriteOpPB::kRowOperationsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);

size_t VarintSize(uint64_t v) { return static_cast<size_t>(VarintLength(v)); }

}  // namespace

std::string EncodeWriteEntryBody(const std::string& origin, uint64_t seq, uint32_t schema_version,
                                 const pb::RowOperationsPB& rows) {
  pb::ReplicateMsgPB header;
  header.set_origin_uuid(origin);
  header.set_request_seq(seq);
  const size_t rows_size = rows.ByteSizeLong();
  const size_t write_size = 1 + VarintSize(schema_version) + 1 + VarintSize(rows_size) + rows_size;
  std::string body;
  body.reserve(header.ByteSizeLong() + 1 + VarintSize(write_size) + write_size + 16);
  header.AppendToString(&body);
  body.push_back(kTagWrite);
  PutVarint64(&body, write_size);
  body.push_back(kTagSchemaVersion);
  PutVarint32(&body, schema_version);
  body.push_back(kTagRowOperations);
  PutVarint64(&body, rows_size);
  rows.AppendToString(&body);
  return body;
}

void AppendEntryTimestamp(HybridTime ts, std::string* body) {
  body->push_back(kTagTimestamp);
  PutFixed64(body, ts.value());
}

}  // namespace basalt
