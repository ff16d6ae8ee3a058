#include "client/scan_rpc.h"

#include <climits>
#include <utility>

#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/tserver.pb.h"
#include "rpc/rpc_status.h"

namespace basalt::client::internal {

// The answer of CallScan as gRPC sees it: a message type of its own, so that its
// SerializationTraits (below) are the ones that parse it.
struct ReusedScanResponse {
  pb::ScanResponsePB* msg;
  bool malformed = false;  // gRPC reports a failed parse as UNIMPLEMENTED; this tells them apart.
};

// Clears `m` for a merge, keeping its `data` block and the capacity of the block's buffers
// (Clear() would delete the block).
void ClearKeepingBlock(pb::ScanResponsePB* m) {
  pb::ColumnarRowBlockPB* data = m->has_data() ? m->release_data() : nullptr;
  m->Clear();
  if (data != nullptr) {
    data->Clear();
    m->set_allocated_data(data);
  }
}

}  // namespace basalt::client::internal

namespace grpc {

template <>
class SerializationTraits<basalt::client::internal::ReusedScanResponse> {
 public:
  // As gRPC's own protobuf deserializer, but merging into a message whose `data` block was
  // cleared without being freed, so its repeated columns and their strings keep their capacity.
  static Status Deserialize(ByteBuffer* buffer, basalt::client::internal::ReusedScanResponse* out) {
    if (buffer == nullptr) return Status(StatusCode::INTERNAL, "no payload");
    basalt::pb::ScanResponsePB* m = out->msg;
    basalt::client::internal::ClearKeepingBlock(m);
    Status result;
    {
      ProtoBufferReader reader(buffer);
      if (!reader.status().ok()) return reader.status();
      protobuf::io::CodedInputStream input(&reader);
      input.SetTotalBytesLimit(INT_MAX);  // As gRPC's own; the channel caps message sizes.
      if (!m->MergeFromCodedStream(&input)) {
        out->malformed = true;
        result = Status(StatusCode::INTERNAL, "malformed Scan response");
      }
    }
    buffer->Clear();
    return result;
  }
};

}  // namespace grpc

namespace basalt::client::internal {

ScanBlockPool::ScanBlockPool(size_t capacity) : capacity_(capacity) {}
ScanBlockPool::~ScanBlockPool() = default;

void ScanBlockPool::SetCapacity(size_t capacity) {
  absl::MutexLock l(&mu_);
  capacity_ = capacity;
  if (blocks_.size() > capacity_) blocks_.resize(capacity_);
}

std::unique_ptr<pb::ColumnarRowBlockPB> ScanBlockPool::Take() {
  absl::MutexLock l(&mu_);
  if (blocks_.empty()) return nullptr;
  std::unique_ptr<pb::ColumnarRowBlockPB> b = std::move(blocks_.back());
  blocks_.pop_back();
  return b;
}

void ScanBlockPool::Put(std::unique_ptr<pb::ColumnarRowBlockPB> block) {
  if (block == nullptr) return;
  block->Clear();  // Outside the lock; keeps the buffers' capacity.
  absl::MutexLock l(&mu_);
  if (blocks_.size() < capacity_) blocks_.push_back(std::move(block));
}

// Must match the service and method of proto/tserver.proto (a mismatch is UNIMPLEMENTED on
// every scan, which every scan test would show).
constexpr char kScanMethod[] = "/basalt.pb.TabletServerService/Scan";

// Gives *resp a kept block from `pool` if it has none.
static void UsePooledBlock(ScanBlockPool* pool, pb::ScanResponsePB* resp) {
  if (resp->has_data()) return;
  std::unique_ptr<pb::ColumnarRowBlockPB> block = pool->Take();
  if (block != nullptr) resp->set_allocated_data(block.release());
}

absl::Status ParseScanResponse(std::string_view bytes, ScanBlockPool* pool,
                               pb::ScanResponsePB* resp) {
  UsePooledBlock(pool, resp);
  ClearKeepingBlock(resp);
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetTotalBytesLimit(INT_MAX);
  if (!resp->MergeFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
    return absl::DataLossError("the server's Scan response does not parse");
  }
  return absl::OkStatus();
}

absl::Status CallScan(const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* ctx,
                      const pb::ScanRequestPB& req, ScanBlockPool* pool, pb::ScanResponsePB* resp) {
  UsePooledBlock(pool, resp);
  const grpc::internal::RpcMethod method(kScanMethod, grpc::internal::RpcMethod::NORMAL_RPC,
                                         channel);
  ReusedScanResponse out{resp};
  absl::Status s = FromGrpcStatus(
      grpc::internal::BlockingUnaryCall<pb::ScanRequestPB, ReusedScanResponse,
                                        grpc::protobuf::MessageLite, ReusedScanResponse>(
          channel.get(), method, ctx, req, &out));
  if (out.malformed) return absl::DataLossError("the server's Scan response does not parse");
  return s;
}

}  // namespace basalt::client::internal
