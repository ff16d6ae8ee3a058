#pragma once

// InMemoryTransport: a Transport connecting RaftNodes in one process, for tests and benchmarks.
// Send hands the message straight to the destination's handler (which only queues it), so
// delivery is immediate and in order per sender thread; the fault controls drop messages per link
// (between two peers, for every group): cut links, isolated peers and random loss.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/random.h"
#include "consensus/transport.h"

namespace basalt {

// Invariant: a handler runs only while reg_mu_ is held shared, so Unregister (exclusive) returns
// only when no call of that handler is in progress.
// The two mutexes are never held together, and link_mu_ is never held across a handler call.
// Thread-safe.
class InMemoryTransport : public Transport {
 public:
  // `seed` drives random loss (SetDropProbability); log it from a randomized test.
  explicit InMemoryTransport(uint64_t seed = 0);

  using Transport::Register;  // Its batch handler is not used: every message goes to `handler`.
  absl::Status Register(const std::string& group_id, const PeerId& peer,
                        RaftMessageHandler handler) override ABSL_LOCKS_EXCLUDED(reg_mu_);
  void Unregister(const std::string& group_id, const PeerId& peer) override
      ABSL_LOCKS_EXCLUDED(reg_mu_);
  void Send(const std::string& group_id, RaftMessage message) override
      ABSL_LOCKS_EXCLUDED(reg_mu_, link_mu_);

  // ---- Fault controls (apply to every group) ----
  // Drops every message between `a` and `b`, both directions, until RestoreLink / HealAll.
  void CutLink(const PeerId& a, const PeerId& b) ABSL_LOCKS_EXCLUDED(link_mu_);
  void RestoreLink(const PeerId& a, const PeerId& b) ABSL_LOCKS_EXCLUDED(link_mu_);
  // Drops every message to or from `peer` until Reconnect / HealAll.
  void Isolate(const PeerId& peer) ABSL_LOCKS_EXCLUDED(link_mu_);
  void Reconnect(const PeerId& peer) ABSL_LOCKS_EXCLUDED(link_mu_);
  // Drops each message from `from` to `to` with probability `p` in [0, 1].
  void SetDropProbability(const PeerId& from, const PeerId& to, double p)
      ABSL_LOCKS_EXCLUDED(link_mu_);
  // Removes every cut, isolation and loss probability.
  void HealAll() ABSL_LOCKS_EXCLUDED(link_mu_);

  // ---- Statistics ----
  int64_t num_delivered() const ABSL_LOCKS_EXCLUDED(link_mu_);
  int64_t num_dropped() const ABSL_LOCKS_EXCLUDED(link_mu_);

 private:
  using Key = std::pair<std::string, PeerId>;  // (group id, peer).
  using Link = std::pair<PeerId, PeerId>;      // (from, to).

  // Returns true if a message from `from` to `to` passes the fault controls (and counts it).
  bool Admit(const PeerId& from, const PeerId& to) ABSL_LOCKS_EXCLUDED(link_mu_);

  mutable absl::Mutex reg_mu_;
  std::map<Key, RaftMessageHandler> handlers_ ABSL_GUARDED_BY(reg_mu_);

  mutable absl::Mutex link_mu_;
  std::set<Link> cut_ ABSL_GUARDED_BY(link_mu_);  // Both directions stored.
  std::set<PeerId> isolated_ ABSL_GUARDED_BY(link_mu_);
  std::map<Link, double> drop_probability_ ABSL_GUARDED_BY(link_mu_);
  Random rng_ ABSL_GUARDED_BY(link_mu_);
  int64_t num_delivered_ ABSL_GUARDED_BY(link_mu_) = 0;
  int64_t num_dropped_ ABSL_GUARDED_BY(link_mu_) = 0;
};

}  // namespace basalt
