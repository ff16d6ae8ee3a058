#pragma once

// AddressBook: the tablet server's map from server uuid to RPC address, learned from CreateTablet
// configurations, consensus metadata and the master's heartbeat responses. It feeds the
// GrpcTransport (so Raft messages reach peers that moved) and the leader hints of
// NOT_THE_LEADER errors.
//
// Thread-safe.

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rpc/net_util.h"

namespace basalt {

class GrpcTransport;

class AddressBook {
 public:
  // `transport` (borrowed, may be null) gets every address of a server other than `self_uuid`.
  AddressBook(std::string self_uuid, GrpcTransport* transport)
      : self_uuid_(std::move(self_uuid)), transport_(transport) {}

  // Records (or changes) the address of `uuid`; ignores an empty uuid or host.
  void Set(const std::string& uuid, const HostPort& address) ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<HostPort> Get(const std::string& uuid) const ABSL_LOCKS_EXCLUDED(mu_);
  std::map<std::string, HostPort> All() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string self_uuid_;
  GrpcTransport* const transport_;

  mutable absl::Mutex mu_;
  std::map<std::string, HostPort> addresses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
