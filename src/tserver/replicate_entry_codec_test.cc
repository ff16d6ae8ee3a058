#include "tserver/replicate_entry_codec.h"

#include <gtest/gtest.h>

#include "proto/tablet_replica.pb.h"

namespace basalt {
namespace {
namespace replicate_entry_codec_test_file {

// The hand-built entry parses as the ReplicateMsgPB protobuf would write it, whatever the sizes.
TEST(ReplicateEntryCodecTest, WriteEntryParsesAsAReplicateMsg) {
  for (size_t rows_bytes : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{300000}}) {
    pb::RowOperationsPB rows;
    rows.set_rows(std::string(rows_bytes, 'r'));
    rows.set_indirect_data("indirect");
    for (uint32_t version : {0u, 1u, 200u, 0xffffffffu}) {
      WriteEntryHeader h;
      h.origin = "server-1";
      h.seq = 0x123456789aULL;
      h.schema_version = version;
      std::string body = EncodeWriteEntryBody(h, rows);
      AppendEntryTimestamp(HybridTime(0xfedcba9876543210ULL), &body);
      pb::ReplicateMsgPB msg;
      ASSERT_TRUE(msg.ParseFromString(body)) << rows_bytes << " " << version;
      EXPECT_EQ(msg.origin_uuid(), "server-1");
      EXPECT_EQ(msg.request_seq(), 0x123456789aULL);
      EXPECT_EQ(msg.timestamp(), 0xfedcba9876543210ULL);
      ASSERT_TRUE(msg.has_write());
      EXPECT_EQ(msg.write().schema_version(), version);
      EXPECT_EQ(msg.write().row_operations().rows(), rows.rows());
      EXPECT_EQ(msg.write().row_operations().indirect_data(), "indirect");
      // As long as what protobuf writes for the same message (which omits a version of 0).
      if (version != 0) {
        EXPECT_EQ(body.size(), msg.ByteSizeLong());
      }
    }
  }
}

// The request id and the row mapping travel in the entry.
TEST(ReplicateEntryCodecTest, RequestIdAndRowMappingRoundTrip) {
  pb::RowOperationsPB rows;
  rows.set_rows("rows");
  pb::RequestIdPB id;
  id.set_client_id("client-7");
  id.set_seq_no(42);
  id.set_first_incomplete_seq_no(40);
  WriteEntryHeader h;
  h.origin = "server-2";
  h.seq = 9;
  h.schema_version = 3;
  h.request_id = &id;
  h.request_num_rows = 5;
  h.request_rows = {0, 2, 4};
  std::string body = EncodeWriteEntryBody(h, rows);
  AppendEntryTimestamp(HybridTime(77), &body);
  pb::ReplicateMsgPB msg;
  ASSERT_TRUE(msg.ParseFromString(body));
  EXPECT_EQ(msg.request_id().client_id(), "client-7");
  EXPECT_EQ(msg.request_id().seq_no(), 42u);
  EXPECT_EQ(msg.request_id().first_incomplete_seq_no(), 40u);
  EXPECT_EQ(msg.write().request_num_rows(), 5u);
  ASSERT_EQ(msg.write().request_rows_size(), 3);
  EXPECT_EQ(msg.write().request_rows(1), 2u);
  EXPECT_EQ(msg.write().row_operations().rows(), "rows");
  EXPECT_EQ(msg.timestamp(), 77u);
}

}  // namespace replicate_entry_codec_test_file
}  // namespace
}  // namespace basalt
