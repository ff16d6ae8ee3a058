#pragma once

// MasterProxy: calls MasterService on the leader master. Private to src/client (it includes the
// generated gRPC header; only the client's .cc files include it).
//
// It remembers which of the configured masters led last. A call goes there first (or to each in
// turn when no leader is known); UNAVAILABLE + NOT_THE_LEADER_MASTER moves to the hinted leader
// (or the next master), and CATALOG_NOT_READY, connection failures and other UNAVAILABLE answers
// are retried with exponential backoff until the deadline. Each attempt waits at most
// AttemptTimeout (a third of the call's time, at least 3 s), then the next master is tried. Other
// errors are returned as they are.
//
// Thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/request_tracker.h"
#include "grpcpp/channel.h"
#include "proto/master.grpc.pb.h"

namespace basalt::client::internal {

class MasterProxy {
 public:
  using Stub = pb::MasterService::Stub;
  explicit MasterProxy(std::vector<std::string> addresses);

  // Calls `method` (e.g. &Stub::CreateTable) with retries until `deadline`. `what` names the
  // operation in a timeout error.
  template <typename Req, typename Resp>
  absl::Status Call(std::string_view what,
                    grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* resp, absl::Time deadline) {
    return CallWithRetries(what, deadline, [&](Stub* stub, grpc::ClientContext* ctx) {
      resp->Clear();
      return (stub->*method)(ctx, req, resp);
    });
  }

  // Call for a DDL request (CreateTable, AlterTable, DeleteTable): exactly-once (docs/master.md
  // "Exactly-once DDL"). Takes a sequence number from `requests` and sets the request id on
  // `*req`, so that every attempt carries the same id and a master answers an attempt of a
  // request that already took effect with its first answer; the number is completed when the
  // call returns, whatever the outcome. `requests` is borrowed for the call.
  template <typename Req, typename Resp>
  absl::Status CallExactlyOnce(
      std::string_view what, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
      Req* req, Resp* resp, absl::Time deadline, RequestTracker* requests) {
    const uint64_t seq = requests->Start();
    absl::Cleanup complete = [requests, seq] { requests->Complete(seq); };
    pb::RequestIdPB* id = req->mutable_request_id();
    id->set_client_id(requests->client_id());
    id->set_seq_no(seq);
    id->set_first_incomplete_seq_no(requests->FirstIncomplete());
    return Call(what, method, *req, resp, deadline);
  }

 private:
  using Attempt = std::function<grpc::Status(Stub*, grpc::ClientContext*)>;
  absl::Status CallWithRetries(std::string_view what, absl::Time deadline, const Attempt& attempt)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The stub for addresses_[idx] and its address.
  Stub* StubFor(int idx, std::string* address) ABSL_LOCKS_EXCLUDED(mu_);
  // The index of `address`, adding it if it is new (a leader hint).
  int IndexOf(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mu_);
  int leader_idx_ ABSL_GUARDED_BY(mu_) = -1;
  // Stubs are never removed, so a raw pointer handed out stays valid.
  absl::flat_hash_map<std::string, std::unique_ptr<Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::client::internal
