#include "tserver/address_book.h"

#include <glog/logging.h>

#include "consensus/grpc_transport.h"

namespace basalt {

void AddressBook::Set(const std::string& uuid, const HostPort& address) {
  if (uuid.empty() || address.host.empty()) return;
  {
    absl::MutexLock l(&mu_);
    auto it = addresses_.find(uuid);
    if (it != addresses_.end() && it->second == address) return;
    addresses_[uuid] = address;
  }
  if (transport_ != nullptr && uuid != self_uuid_) {
    absl::Status s = transport_->AddPeer(uuid, address.ToString());
    LOG_IF(WARNING, !s.ok()) << "adding peer " << uuid << " at " << address.ToString() << ": " << s;
  }
}

std::optional<HostPort> AddressBook::Get(const std::string& uuid) const {
  absl::MutexLock l(&mu_);
  auto it = addresses_.find(uuid);
  if (it == addresses_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, HostPort> AddressBook::All() const {
  absl::MutexLock l(&mu_);
  return addresses_;
}

}  // namespace basalt
