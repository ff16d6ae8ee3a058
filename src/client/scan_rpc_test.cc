// CallScan's own deserializer against raw answers: exact parses, no stale fields from a reused
// block, reused buffers, and answers that do not parse (DATA_LOSS, never a crash).

#include "client/scan_rpc.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "common/status_test_util.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "proto/tserver.pb.h"

namespace basalt::client::internal {
namespace {
namespace scan_rpc_test_file {

// Answers every call, whatever its method, with the next of `answers` as raw bytes: what a typed
// server never sends.
class RawAnswerService final : public grpc::CallbackGenericService {
 public:
  explicit RawAnswerService(std::vector<std::string> answers) : answers_(std::move(answers)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    absl::MutexLock l(&mu_);
    return new Reactor(answers_[next_++ % answers_.size()]);
  }

 private:
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    explicit Reactor(std::string answer) : answer_(std::move(answer)) { StartRead(&request_); }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status(grpc::StatusCode::INTERNAL, "no request"));
        return;
      }
      grpc::Slice slice(answer_);
      response_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    }
    void OnDone() override { delete this; }

   private:
    const std::string answer_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
  };

  absl::Mutex mu_;
  const std::vector<std::string> answers_;
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

class CallScanTest : public ::testing::Test {
 protected:
  void Serve(std::vector<std::string> answers) {
    service_ = std::make_unique<RawAnswerService>(std::move(answers));
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterCallbackGenericService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }
  absl::Status Call(ScanBlockPool* pool, pb::ScanResponsePB* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::ScanRequestPB req;
    req.set_scanner_id("s");
    return CallScan(channel_, &ctx, req, pool, resp);
  }

  std::unique_ptr<RawAnswerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

pb::ScanResponsePB Answer(const std::string& scanner_id, std::vector<std::string> columns,
                          const std::string& null_bitmap) {
  pb::ScanResponsePB r;
  r.set_scanner_id(scanner_id);
  r.set_has_more_results(!scanner_id.empty());
  r.set_snap_timestamp(42);
  if (!scanner_id.empty()) r.set_last_primary_key("k");
  auto* data = r.mutable_data();
  data->set_num_rows(static_cast<int64_t>(columns[0].size() / 4));
  for (std::string& c : columns) data->add_columns()->set_data(std::move(c));
  data->mutable_columns(0)->set_null_bitmap(null_bitmap);
  return r;
}

// The second answer is parsed into the block of the first (taken from the pool): it holds
// exactly the second answer (no column, bitmap or field of the first left over), in the first
// one's buffer.
TEST_F(CallScanTest, AReusedBlockHoldsExactlyTheNextAnswer) {
  const pb::ScanResponsePB first =
      Answer("s1", {std::string(4096, 'a'), std::string(4096, 'b')}, std::string(128, '\x01'));
  const pb::ScanResponsePB second = Answer("", {std::string(400, 'c')}, "");
  ASSERT_NO_FATAL_FAILURE(Serve({first.SerializeAsString(), second.SerializeAsString()}));
  ScanBlockPool pool(2);

  pb::ScanResponsePB r1;
  BASALT_ASSERT_OK(Call(&pool, &r1));
  EXPECT_EQ(r1.SerializeAsString(), first.SerializeAsString());
  const char* buffer = r1.data().columns(0).data().data();
  pool.Put(std::unique_ptr<pb::ColumnarRowBlockPB>(r1.release_data()));

  pb::ScanResponsePB r2;
  BASALT_ASSERT_OK(Call(&pool, &r2));
  EXPECT_EQ(r2.SerializeAsString(), second.SerializeAsString());
  ASSERT_EQ(r2.data().columns_size(), 1);
  EXPECT_EQ(r2.data().columns(0).data().data(), buffer) << "the block's buffer was not reused";
  EXPECT_EQ(pool.Take(), nullptr) << "the call took the pooled block";
}

// Answers that are not a ScanResponsePB: DATA_LOSS (gRPC alone would say UNIMPLEMENTED), for
// every truncation of a valid answer that breaks it and for garbage.
TEST_F(CallScanTest, AnswersThatDoNotParseAreDataLoss) {
  const std::string valid =
      Answer("s1", {std::string(64, 'a'), std::string(64, 'b')}, "\x01").SerializeAsString();
  std::vector<std::string> answers = {std::string("\x0a\xff\xff\xff\xff\x0f", 6),
                                      std::string("\xff\xff\xff", 3)};
  for (size_t cut = 1; cut < valid.size(); cut += 7) answers.push_back(valid.substr(0, cut));
  ASSERT_NO_FATAL_FAILURE(Serve(answers));
  ScanBlockPool pool(2);
  int data_loss = 0;
  for (size_t i = 0; i < answers.size(); i++) {
    pb::ScanResponsePB r;
    absl::Status s = Call(&pool, &r);
    // A cut at a field boundary is a valid, shorter message; anything else must be DATA_LOSS.
    pb::ScanResponsePB parsed;
    if (parsed.ParseFromString(answers[i])) {
      BASALT_EXPECT_OK(s);
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "answer " << i << ": " << s;
      data_loss++;
    }
  }
  EXPECT_GE(data_loss, 2);
}

}  // namespace scan_rpc_test_file
}  // namespace
}  // namespace basalt::client::internal
