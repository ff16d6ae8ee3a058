#pragma once

// VirtualNetwork: "hosts" made of Linux network namespaces on a private bridge, for cluster tests
// that cut the network between real daemons (docs/testing.md "Network partitions").
//
// Topology (every object is made by this class with the `ip` program and removed by it):
//
//   root namespace (the test process)         host namespaces, one per daemon
//   bridge <tag>br  10.A.B.1/24  <--veth-->   eth0 10.A.B.2/24   (+ lo)   host 0
//                                <--veth-->   eth0 10.A.B.3/24   (+ lo)   host 1 ...
//
// The bridge has no other port, hosts have no route but their /24, so traffic stays on this
// machine: between hosts, and between each host and the test process (through the bridge's
// address). The subnet is chosen, under a lock file shared by every test process, among the /24s
// of 10.160.0.0-10.254.255.0 that no address or route of the machine overlaps.
//
// Names: tag = "bs<pid>x<cc>" (cc: a per-process counter, two base-36 digits), so test processes
// running in parallel never collide. Namespaces "<tag>-<host name>"; root-side veth ends
// "<tag>v<xx>" (xx: the host's last address octet in hex); interface names stay within Linux's 15
// characters. Create() first removes leftovers of test processes that no longer exist (killed
// before their destructor ran: names carry the pid) and any leftover with this network's own names.
//
// Cuts: Block(from, to) drops every packet host `from` sends to host `to`'s address, silently, as
// a broken link would: a permanent neighbour (ARP) entry in `from` maps `to`'s address to a MAC
// address that no interface has, so the frames are flooded by the bridge and discarded by every
// receiver. (tc filters would do it too, but this kernel has no classifier modules; a blackhole
// route makes connect() fail at once with EINVAL, which looks like a down host, not a partition.)
// A one-way block still breaks TCP both ways for new connections (the handshake needs both
// directions); on connections already open, `to`'s data still reaches `from`'s application, but
// nothing comes back. The test process is never cut off: it reaches every host, and every host
// reaches it.
//
// Lifecycle: Create() → AddHost()... → Block()/Unblock() any time → destructor, which deletes
// every namespace (and with it its veth pair) and the bridge. Processes still running in a
// namespace keep it alive after the destructor (but cut off from the bridge): stop the daemons
// first.
//
// Not thread-safe; the caller serializes. Const accessors may be read from any thread once the
// host they name exists.

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

// Runs the `ip` program (iproute2, found in /usr/sbin, /sbin, /usr/bin or /bin; no shell, no
// PATH) with `args` and waits for it. Returns its standard output. NOT_FOUND if there is no `ip`
// program; INTERNAL naming the command line, how it ended and its standard error if it did not
// exit with code 0.
absl::StatusOr<std::string> RunIpCommand(const std::vector<std::string>& args);

class VirtualNetwork {
 public:
  // OK if this process can build a VirtualNetwork: it is root, `ip` exists, and a probe namespace
  // with a veth pair can be made (and is removed again). FAILED_PRECONDITION saying why not.
  static absl::Status Available();

  // Creates the bridge on a free subnet. FAILED_PRECONDITION if namespaces cannot be made here
  // (as Available() says) or no free /24 is found; the `ip` error otherwise. Nothing is left
  // behind on error.
  static absl::StatusOr<std::unique_ptr<VirtualNetwork>> Create();

  ~VirtualNetwork();
  VirtualNetwork(const VirtualNetwork&) = delete;
  VirtualNetwork& operator=(const VirtualNetwork&) = delete;

  // Adds a host: namespace "<tag>-<name>" with lo up and eth0 at the next free address of the
  // subnet. Returns the host's index (0, 1, ... in order of creation). INVALID_ARGUMENT for an
  // empty name or one with '/'; RESOURCE_EXHAUSTED past 253 hosts; the `ip` error otherwise (the
  // half-made host is removed).
  absl::StatusOr<int> AddHost(const std::string& name);

  // Drops every packet host `from` sends to host `to` (no-op if already blocked).
  // INVALID_ARGUMENT for a bad index or from == to; the `ip` error otherwise.
  absl::Status Block(int from, int to);
  // Lets them through again (no-op if not blocked). Same errors as Block().
  absl::Status Unblock(int from, int to);
  // Unblock() of every block; returns the first error (and keeps trying the others).
  absl::Status UnblockAll();
  bool IsBlocked(int from, int to) const { return blocked_.count({from, to}) > 0; }

  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  // REQUIRES: 0 <= host < num_hosts().
  // The host's IPv4 address ("10.A.B.C").
  const std::string& address(int host) const { return hosts_[host].address; }
  // The namespace's name (for `ip netns exec`) and its file (for setns(2)).
  const std::string& netns_name(int host) const { return hosts_[host].netns; }
  std::string netns_path(int host) const;
  // The bridge's address: the test process's address on the network.
  const std::string& gateway_address() const { return gateway_; }
  const std::string& bridge_name() const { return bridge_; }
  // "10.A.B.0/24".
  std::string subnet() const;

 private:
  struct Host {
    std::string name;
    std::string netns;
    std::string veth;  // The root-namespace end.
    std::string address;
  };

  VirtualNetwork(std::string tag, std::string subnet_prefix);
  // Runs the commands that make host `h` (already in hosts_).
  absl::Status SetUpHost(const Host& h);
  absl::Status CheckPair(int from, int to) const;

  // Constant after construction.
  const std::string tag_;
  const std::string prefix_;  // "10.A.B."
  const std::string bridge_;
  const std::string gateway_;

  std::vector<Host> hosts_;
  std::set<std::pair<int, int>> blocked_;  // (from, to)
};

}  // namespace basalt
