#include "consensus/in_memory_transport.h"

#include <utility>

#include "common/strings.h"

namespace basalt {

InMemoryTransport::InMemoryTransport(uint64_t seed) : rng_(seed) {}

absl::Status InMemoryTransport::Register(const std::string& group_id, const PeerId& peer,
                                         RaftMessageHandler handler) {
  absl::MutexLock l(&reg_mu_);
  if (!handlers_.emplace(Key(group_id, peer), std::move(handler)).second) {
    return absl::AlreadyExistsError(
        StrCat("a receiver for group ", group_id, " peer ", peer, " is already registered"));
  }
  return absl::OkStatus();
}

void InMemoryTransport::Unregister(const std::string& group_id, const PeerId& peer) {
  absl::MutexLock l(&reg_mu_);
  handlers_.erase(Key(group_id, peer));
}

bool InMemoryTransport::Admit(const PeerId& from, const PeerId& to) {
  absl::MutexLock l(&link_mu_);
  bool pass =
      cut_.count(Link(from, to)) == 0 && isolated_.count(from) == 0 && isolated_.count(to) == 0;
  if (pass) {
    auto it = drop_probability_.find(Link(from, to));
    if (it != drop_probability_.end() && rng_.NextDouble() < it->second) pass = false;
  }
  ++(pass ? num_delivered_ : num_dropped_);
  return pass;
}

void InMemoryTransport::Send(const std::string& group_id, RaftMessage message) {
  if (!Admit(message.from, message.to)) return;
  absl::ReaderMutexLock l(&reg_mu_);
  auto it = handlers_.find(Key(group_id, message.to));
  if (it == handlers_.end()) return;  // Nobody listening: lost, like a message to a dead server.
  it->second(std::move(message));
}

void InMemoryTransport::CutLink(const PeerId& a, const PeerId& b) {
  absl::MutexLock l(&link_mu_);
  cut_.insert(Link(a, b));
  cut_.insert(Link(b, a));
}

void InMemoryTransport::RestoreLink(const PeerId& a, const PeerId& b) {
  absl::MutexLock l(&link_mu_);
  cut_.erase(Link(a, b));
  cut_.erase(Link(b, a));
}

void InMemoryTransport::Isolate(const PeerId& peer) {
  absl::MutexLock l(&link_mu_);
  isolated_.insert(peer);
}

void InMemoryTransport::Reconnect(const PeerId& peer) {
  absl::MutexLock l(&link_mu_);
  isolated_.erase(peer);
}

void InMemoryTransport::SetDropProbability(const PeerId& from, const PeerId& to, double p) {
  absl::MutexLock l(&link_mu_);
  drop_probability_[Link(from, to)] = p;
}

void InMemoryTransport::HealAll() {
  absl::MutexLock l(&link_mu_);
  cut_.clear();
  isolated_.clear();
  drop_probability_.clear();
}

int64_t InMemoryTransport::num_delivered() const {
  absl::MutexLock l(&link_mu_);
  return num_delivered_;
}

int64_t InMemoryTransport::num_dropped() const {
  absl::MutexLock l(&link_mu_);
  return num_dropped_;
}

}  // namespace basalt
