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
                  pb::WriteOpPB::kRowOperationsFieldNumber < 16,
              "one-byte tags");

constexpr char kTagTimestamp =
    Tag(pb::ReplicateMsgPB::kTimestampFieldNumber, WireFormatLite::WIRETYPE_FIXED64);
constexpr char kTagWrite =
    Tag(pb::ReplicateMsgPB::kWriteFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
constexpr char kTagRowOperations =
    Tag(pb::WriteOpPB::kRowOperationsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);

size_t VarintSize(uint64_t v) { return static_cast<size_t>(VarintLength(v)); }

}  // namespace

std::string EncodeWriteEntryBody(const WriteEntryHeader& h, const pb::RowOperationsPB& rows) {
  pb::ReplicateMsgPB header;
  header.set_origin_uuid(h.origin);
  header.set_request_seq(h.seq);
  if (h.request_id != nullptr) *header.mutable_request_id() = *h.request_id;
  // The WriteOpPB's small fields go through protobuf; its rows are appended after them (a parser
  // takes fields in any order), copied once.
  pb::WriteOpPB write_fields;
  write_fields.set_schema_version(h.schema_version);
  if (!h.request_rows.empty()) {
    write_fields.set_request_num_rows(h.request_num_rows);
    for (int r : h.request_rows) write_fields.add_request_rows(static_cast<uint32_t>(r));
  }
  const size_t rows_size = rows.ByteSizeLong();
  const size_t write_size = write_fields.ByteSizeLong() + 1 + VarintSize(rows_size) + rows_size;
  std::string body;
  body.reserve(header.ByteSizeLong() + 1 + VarintSize(write_size) + write_size + 16);
  header.AppendToString(&body);
  body.push_back(kTagWrite);
  PutVarint64(&body, write_size);
  write_fields.AppendToString(&body);
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
