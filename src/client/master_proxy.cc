#include "client/master_proxy.h"

#include <algorithm>

#include "client/client_internal.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

namespace basalt::client::internal {

MasterProxy::MasterProxy(std::vector<std::string> addresses) : addresses_(std::move(addresses)) {}

MasterProxy::Stub* MasterProxy::StubFor(int idx, std::string* address) {
  absl::MutexLock l(&mu_);
  *address = addresses_[idx];
  auto& stub = stubs_[*address];
  if (stub == nullptr) stub = pb::MasterService::NewStub(NewChannel(*address));
  return stub.get();
}

int MasterProxy::IndexOf(const std::string& address) {
  absl::MutexLock l(&mu_);
  auto it = std::find(addresses_.begin(), addresses_.end(), address);
  if (it != addresses_.end()) return static_cast<int>(it - addresses_.begin());
  addresses_.push_back(address);
  return static_cast<int>(addresses_.size()) - 1;
}

absl::Status MasterProxy::CallWithRetries(std::string_view what, absl::Time deadline,
                                          const Attempt& attempt) {
  Backoff backoff(deadline);
  // A master that stopped answering (paused, cut off) is left for another within seconds: every
  // call is a read or an exactly-once DDL (docs/master.md), so retrying elsewhere is safe.
  const absl::Duration attempt_timeout = AttemptTimeout(deadline - absl::Now());
  absl::Status last = absl::UnavailableError("no master answered");
  int idx;
  {
    absl::MutexLock l(&mu_);
    idx = leader_idx_ >= 0 ? leader_idx_ : 0;
  }
  for (;;) {
    std::string address;
    Stub* stub = StubFor(idx, &address);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + attempt_timeout)));
    absl::Status s = FromGrpcStatus(attempt(stub, &ctx));
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      leader_idx_ = idx;
      return s;
    }
    if (s.code() != absl::StatusCode::kUnavailable &&
        !(s.code() == absl::StatusCode::kDeadlineExceeded && absl::Now() < deadline)) {
      return s;
    }
    last = absl::Status(s.code(), StrCat("master ", address, ": ", s.message()));
    auto detail = GetErrorDetail(s);
    if (detail.has_value() && detail->code() == pb::ErrorDetailPB::NOT_THE_LEADER_MASTER &&
        !detail->leader_address().host().empty()) {
      idx = IndexOf(HostPort::FromPB(detail->leader_address()).ToString());
    } else if (!(detail.has_value() && detail->code() == pb::ErrorDetailPB::CATALOG_NOT_READY)) {
      absl::MutexLock l(&mu_);
      idx = (idx + 1) % static_cast<int>(addresses_.size());
      leader_idx_ = -1;
    }
    if (!backoff.Sleep()) return TimedOut(what, backoff.attempts(), last);
  }
}

}  // namespace basalt::client::internal
