#include "testing/netns.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "absl/time/clock.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/external_daemon.h"

extern char** environ;

namespace basalt {
namespace {

// Every name this file makes starts with this, then the pid, then 'x' (see the header).
constexpr std::string_view kNamePrefix = "bs";
// Taken by every test process while it removes leftovers, picks a subnet and claims it (the
// bridge's address makes the claim visible to the others).
constexpr char kLockPath[] = "/tmp/basalt-netns.lock";
// The MAC address that Block() sends a host's packets to: locally administered, unicast, and
// owned by no interface (veth addresses are random; a clash has odds of 2^-46).
constexpr char kNowhereMac[] = "02:00:00:00:00:01";
constexpr int kPrefixLength = 24;

// The `ip` program, or empty.
const std::string& IpProgram() {
  static const std::string* const path = [] {
    for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
      if (access(p, X_OK) == 0) return new std::string(p);
    }
    return new std::string();
  }();
  return *path;
}

std::string CommandLine(const std::vector<std::string>& args) {
  std::string out = "ip";
  for (const std::string& a : args) StrAppend(&out, " ", a);
  return out;
}

// Reads `fds` (pipes) until EOF on all of them, appending to *outs. Errors end the read early.
void DrainPipes(int fds[2], std::string* outs[2]) {
  pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
  int open_count = 2;
  char buf[4096];
  while (open_count > 0) {
    int r = poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        p[i].fd = -1;  // poll() ignores negative descriptors.
        --open_count;
        continue;
      }
      outs[i]->append(buf, static_cast<size_t>(n));
    }
  }
}

// Runs the `ip` program (posix_spawn: safe in a process with other threads; no shell, so no
// argument is ever interpreted) and collects its output and wait status.
absl::Status RunIp(const std::vector<std::string>& args, std::string* out, std::string* err,
                   int* wait_status) {
  const std::string& ip = IpProgram();
  if (ip.empty()) return absl::NotFoundError("no `ip` program (iproute2) in /usr/sbin or /sbin");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return PosixError("pipe2", errno);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return PosixError("pipe2", e);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> argv_storage = {ip};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, ip.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc == 0) {
    int fds[2] = {out_pipe[0], err_pipe[0]};
    std::string* outs[2] = {out, err};
    DrainPipes(fds, outs);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (rc != 0) return PosixError(StrCat("spawning ", CommandLine(args)), rc);
  while (waitpid(pid, wait_status, 0) < 0) {
    if (errno != EINTR) return PosixError(StrCat("waiting for ", CommandLine(args)), errno);
  }
  return absl::OkStatus();
}

// A unique tag per VirtualNetwork (and per probe) of this process: "bs<pid>x<cc>".
std::string NextTag() {
  static std::atomic<int> counter{0};
  constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  const int c = counter.fetch_add(1) % (36 * 36);
  return StrCat(kNamePrefix, getpid(), "x", std::string(1, kDigits[c / 36]),
                std::string(1, kDigits[c % 36]));
}

// A whole decimal number (no sign, no spaces).
bool ParseInt(std::string_view s, int* out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

// The pieces of `s` between `separators` (empty pieces dropped).
std::vector<std::string_view> Split(std::string_view s, std::string_view separators) {
  std::vector<std::string_view> pieces;
  while (!s.empty()) {
    const size_t end = std::min(s.find_first_of(separators), s.size());
    if (end > 0) pieces.push_back(s.substr(0, end));
    s.remove_prefix(std::min(end + 1, s.size()));
  }
  return pieces;
}

// The pid in a name this file made ("bs<pid>x..."), or nullopt for any other name.
std::optional<pid_t> PidOfName(std::string_view name) {
  if (name.substr(0, kNamePrefix.size()) != kNamePrefix) return std::nullopt;
  name.remove_prefix(kNamePrefix.size());
  const size_t x = name.find('x');
  if (x == 0 || x == std::string_view::npos) return std::nullopt;
  int pid = 0;
  if (!ParseInt(name.substr(0, x), &pid) || pid <= 0) return std::nullopt;
  return pid;
}

bool ProcessExists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// Entry names of a directory (empty if it cannot be read).
std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

// Removes namespaces and root-namespace links that (a) a process that no longer exists made, or
// (b) carry `own_tag` (a leftover of a killed process that had our pid). Best effort: failures
// are logged. REQUIRES: the lock file is held (two processes must not remove the same objects).
void RemoveLeftovers(const std::string& own_tag) {
  auto is_leftover = [&](const std::string& name) {
    std::optional<pid_t> pid = PidOfName(name);
    if (!pid.has_value()) return false;
    if (*pid == getpid()) return name.rfind(own_tag, 0) == 0;
    return !ProcessExists(*pid);
  };
  // Namespaces first: deleting one destroys its veth pair.
  for (const std::string& ns : ListDir("/run/netns")) {
    if (!is_leftover(ns)) continue;
    LOG(INFO) << "removing leftover network namespace " << ns;
    auto s = RunIpCommand({"netns", "delete", ns});
    if (!s.ok()) LOG(WARNING) << s.status();
  }
  for (const std::string& link : ListDir("/sys/class/net")) {
    if (!is_leftover(link)) continue;
    LOG(INFO) << "removing leftover interface " << link;
    auto s = RunIpCommand({"link", "delete", link});
    if (!s.ok()) LOG(WARNING) << s.status();
  }
}

// An IPv4 prefix, from "a.b.c.d" (/32) or "a.b.c.d/n".
struct Ipv4Prefix {
  uint32_t addr = 0;
  int len = 32;
};

std::optional<Ipv4Prefix> ParsePrefix(std::string_view token) {
  Ipv4Prefix p;
  const size_t slash = token.find('/');
  if (slash != std::string_view::npos) {
    if (!ParseInt(token.substr(slash + 1), &p.len) || p.len > 32) {
      return std::nullopt;
    }
    token = token.substr(0, slash);
  }
  if (std::count(token.begin(), token.end(), '.') != 3) return std::nullopt;
  const std::vector<std::string_view> parts = Split(token, ".");
  if (parts.size() != 4) return std::nullopt;  // An empty part ("1..2.3").
  for (std::string_view part : parts) {
    int v = 0;
    if (!ParseInt(part, &v) || v > 255) return std::nullopt;
    p.addr = (p.addr << 8) | static_cast<uint32_t>(v);
  }
  return p;
}

bool Overlap(const Ipv4Prefix& a, const Ipv4Prefix& b) {
  const int len = std::min(a.len, b.len);
  const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
  return ((a.addr ^ b.addr) & mask) == 0;
}

// A /24 in 10.160.0.0-10.254.255.0 that no IPv4 address, route or gateway of the machine
// overlaps ("default" routes aside). REQUIRES: the lock file is held, so that no other test
// process claims the same one meanwhile.
absl::StatusOr<std::string> ChooseSubnet() {
  BASALT_ASSIGN_OR_RETURN(std::string routes,
                          RunIpCommand({"-4", "-o", "route", "show", "table", "all"}));
  BASALT_ASSIGN_OR_RETURN(std::string addrs, RunIpCommand({"-4", "-o", "addr", "show"}));
  std::vector<Ipv4Prefix> taken;
  const std::string all = StrCat(routes, " ", addrs);
  // `-o` output separates what would be lines with backslashes.
  for (std::string_view token : Split(all, " \t\n\\")) {
    if (auto p = ParsePrefix(token); p.has_value()) taken.push_back(*p);
  }
  // Different processes start from different places (pid and clock), so they rarely even try
  // the same subnet.
  uint64_t x = static_cast<uint64_t>(getpid()) * 0x9E3779B97F4A7C15ull ^
               static_cast<uint64_t>(absl::GetCurrentTimeNanos());
  for (int attempt = 0; attempt < 200; ++attempt) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    const int a = 160 + static_cast<int>(x % 95);
    const int b = static_cast<int>((x >> 16) % 256);
    Ipv4Prefix candidate{
        (10u << 24) | (static_cast<uint32_t>(a) << 16) | (static_cast<uint32_t>(b) << 8),
        kPrefixLength};
    bool free = true;
    for (const Ipv4Prefix& t : taken) free = free && !Overlap(t, candidate);
    if (free) return StrCat("10.", a, ".", b, ".");
  }
  return absl::FailedPreconditionError(
      "no free /24 in 10.160.0.0-10.254.255.0 for a test network (200 candidates overlap a "
      "route or address of this machine)");
}

// An exclusive flock on kLockPath for the object's lifetime.
class ScopedFileLock {
 public:
  static absl::StatusOr<ScopedFileLock> Acquire() {
    int fd = open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return PosixError(StrCat("open ", kLockPath), errno);
    while (flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return PosixError(StrCat("flock ", kLockPath), e);
    }
    return ScopedFileLock(fd);
  }
  ScopedFileLock(ScopedFileLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ScopedFileLock& operator=(ScopedFileLock&&) = delete;
  ~ScopedFileLock() {
    if (fd_ >= 0) close(fd_);  // Releases the lock.
  }

 private:
  explicit ScopedFileLock(int fd) : fd_(fd) {}
  int fd_;
};

// Logs (does not return) the error of a clean-up command.
void BestEffort(const std::vector<std::string>& args) {
  auto s = RunIpCommand(args);
  if (!s.ok()) LOG(WARNING) << "cleaning up the test network: " << s.status();
}

}  // namespace

absl::StatusOr<std::string> RunIpCommand(const std::vector<std::string>& args) {
  std::string out, err;
  int wait_status = 0;
  BASALT_RETURN_IF_ERROR(RunIp(args, &out, &err, &wait_status));
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return out;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  return absl::InternalError(
      StrCat("`", CommandLine(args), "` ", DescribeWaitStatus(wait_status), ": ", err));
}

absl::Status VirtualNetwork::Available() {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        StrCat("network namespaces need root; this process runs as uid ", geteuid()));
  }
  if (IpProgram().empty()) {
    return absl::FailedPreconditionError("no `ip` program (iproute2) in /usr/sbin or /sbin");
  }
  // The real thing, in small: a namespace with one end of a veth pair in it.
  const std::string tag = NextTag();
  const std::string ns = StrCat(tag, "-probe");
  const std::string veth = StrCat(tag, "vp");
  absl::Status s = RunIpCommand({"netns", "add", ns}).status();
  if (s.ok()) {
    s = RunIpCommand({"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns})
            .status();
    if (s.ok()) BestEffort({"link", "delete", veth});
    BestEffort({"netns", "delete", ns});
  }
  if (!s.ok()) {
    return absl::FailedPreconditionError(
        StrCat("cannot make network namespaces here: ", s.message()));
  }
  return absl::OkStatus();
}

VirtualNetwork::VirtualNetwork(std::string tag, std::string subnet_prefix)
    : tag_(std::move(tag)),
      prefix_(std::move(subnet_prefix)),
      bridge_(StrCat(tag_, "br")),
      gateway_(StrCat(prefix_, "1")) {}

absl::StatusOr<std::unique_ptr<VirtualNetwork>> VirtualNetwork::Create() {
  BASALT_RETURN_IF_ERROR(Available());
  const std::string tag = NextTag();
  BASALT_ASSIGN_OR_RETURN(ScopedFileLock lock, ScopedFileLock::Acquire());
  RemoveLeftovers(tag);
  BASALT_ASSIGN_OR_RETURN(std::string prefix, ChooseSubnet());
  BASALT_RETURN_IF_ERROR(
      RunIpCommand({"link", "add", StrCat(tag, "br"), "type", "bridge"}).status());
  // From here on the destructor deletes the bridge if a step fails.
  auto net = std::unique_ptr<VirtualNetwork>(new VirtualNetwork(tag, prefix));
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"addr", "add", StrCat(net->gateway_, "/", kPrefixLength), "dev", net->bridge_},
           {"link", "set", net->bridge_, "up"}}) {
    BASALT_RETURN_IF_ERROR(RunIpCommand(args).status());
  }
  LOG(INFO) << "test network " << net->subnet() << " on bridge " << net->bridge_;
  return net;
}

VirtualNetwork::~VirtualNetwork() {
  for (const Host& h : hosts_) {
    // The veth first: it goes at once even if a process still holds the namespace.
    BestEffort({"link", "delete", h.veth});
    BestEffort({"netns", "delete", h.netns});
  }
  BestEffort({"link", "delete", bridge_});
}

std::string VirtualNetwork::netns_path(int host) const {
  return StrCat("/run/netns/", hosts_[host].netns);
}

std::string VirtualNetwork::subnet() const { return StrCat(prefix_, "0/", kPrefixLength); }

absl::StatusOr<int> VirtualNetwork::AddHost(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(StrCat("bad host name \"", name, "\""));
  }
  const int octet = 2 + num_hosts();  // .1 is the bridge.
  if (octet > 254) return absl::ResourceExhaustedError("a test network holds at most 253 hosts");
  Host h;
  h.name = name;
  h.netns = StrCat(tag_, "-", name);
  char hex[3];
  snprintf(hex, sizeof(hex), "%02x", octet);
  h.veth = StrCat(tag_, "v", hex);
  h.address = StrCat(prefix_, octet);
  absl::Status s = SetUpHost(h);
  if (!s.ok()) {
    BestEffort({"link", "delete", h.veth});
    BestEffort({"netns", "delete", h.netns});
    return s;
  }
  hosts_.push_back(std::move(h));
  return num_hosts() - 1;
}

absl::Status VirtualNetwork::SetUpHost(const Host& h) {
  const std::string cidr = StrCat(h.address, "/", kPrefixLength);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"netns", "add", h.netns},
           // The namespace end is created inside the namespace: no name clash in the root one.
           {"link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns},
           {"link", "set", h.veth, "master", bridge_},
           {"link", "set", h.veth, "up"},
           {"-n", h.netns, "addr", "add", cidr, "dev", "eth0"},
           {"-n", h.netns, "link", "set", "eth0", "up"},
           // A host reaches its own address through lo.
           {"-n", h.netns, "link", "set", "lo", "up"}}) {
    BASALT_RETURN_IF_ERROR(RunIpCommand(args).status());
  }
  return absl::OkStatus();
}

absl::Status VirtualNetwork::CheckPair(int from, int to) const {
  if (from < 0 || from >= num_hosts() || to < 0 || to >= num_hosts() || from == to) {
    return absl::InvalidArgumentError(
        StrCat("bad host pair (", from, ", ", to, ") of ", num_hosts(), " hosts"));
  }
  return absl::OkStatus();
}

absl::Status VirtualNetwork::Block(int from, int to) {
  BASALT_RETURN_IF_ERROR(CheckPair(from, to));
  if (IsBlocked(from, to)) return absl::OkStatus();
  // Permanent: ARP traffic from `to` cannot overwrite it.
  BASALT_RETURN_IF_ERROR(
      RunIpCommand({"-n", hosts_[from].netns, "neigh", "replace", hosts_[to].address, "lladdr",
                    kNowhereMac, "dev", "eth0", "nud", "permanent"})
          .status());
  blocked_.insert({from, to});
  return absl::OkStatus();
}

absl::Status VirtualNetwork::Unblock(int from, int to) {
  BASALT_RETURN_IF_ERROR(CheckPair(from, to));
  if (!IsBlocked(from, to)) return absl::OkStatus();
  // The next packet resolves the address again (ARP).
  BASALT_RETURN_IF_ERROR(
      RunIpCommand({"-n", hosts_[from].netns, "neigh", "delete", hosts_[to].address, "dev", "eth0"})
          .status());
  blocked_.erase({from, to});
  return absl::OkStatus();
}

absl::Status VirtualNetwork::UnblockAll() {
  absl::Status first;
  const std::set<std::pair<int, int>> blocked = blocked_;
  for (const auto& [from, to] : blocked) {
    absl::Status s = Unblock(from, to);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace basalt
