#include "tools/local_cluster.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "common/fd_util.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "proto/master.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

extern char** environ;

namespace basalt::tools {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kClusterFile[] = "cluster.json";
constexpr int kFormatVersion = 1;
constexpr int kDefaultMasterPort = 7051;
constexpr int kFirstTabletServerPort = 7050;
// The well-known web ports are the RPC ports + 1000 (master 8051, tablet servers 8050, 8052...).
constexpr int kWebPortOffset = 1000;
// The tablet servers' well-known frame RPC ports (docs/frame_rpc.md): 9050, 9052, 9053, ...
// Picked with the other ports and written on the command line (so a restart keeps it), rather
// than left to the daemon's default (a port the kernel picks as it starts), which could take a
// port picked for a daemon that starts after it.
constexpr int kFramePortOffset = 2000;
// Masters after the first: 7151, 7251, ... (clear of the tablet servers' 7050, 7052, 7053, ...).
constexpr int kMasterPortStep = 100;
constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kStopTimeout = absl::Seconds(15);
constexpr absl::Duration kKillTimeout = absl::Seconds(5);
constexpr absl::Duration kRpcTimeout = absl::Seconds(2);
constexpr int kLogTailLines = 30;

// One daemon as recorded in cluster.json.
struct DaemonRecord {
  std::string name;  // "master-0", "ts-1"
  std::string kind;  // "master" or "tserver"
  int rpc_port = 0;
  int http_port = 0;  // --webserver_port
  int pid = 0;
  // The full command line; args[0] is the program.
  std::vector<std::string> args;
};

// The contents of cluster.json.
struct ClusterRecord {
  // True once the cluster has come up healthy; until then a start lays it out anew.
  bool came_up = false;
  std::string master_addresses;
  std::vector<DaemonRecord> daemons;
};

// ---- Paths ---------------------------------------------------------------------------------

std::string ClusterFile(const std::string& dir) { return JoinPath(dir, kClusterFile); }
std::string DaemonDir(const std::string& dir, const std::string& name) {
  return JoinPath(dir, name);
}
std::string LogPath(const std::string& dir, const std::string& name) {
  return JoinPath(DaemonDir(dir, name), StrCat(name, ".log"));
}
std::string InfoPath(const std::string& dir, const std::string& name) {
  return JoinPath(DaemonDir(dir, name), "info.json");
}
std::string Address(int port) { return StrCat("127.0.0.1:", port); }

absl::StatusOr<std::string> AbsoluteDir(const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("no cluster directory given (--dir)");
  }
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) return absl::InvalidArgumentError(StrCat("bad directory ", dir, ": ", ec.message()));
  return NormalizePath(p.lexically_normal().string());
}

// ---- cluster.json ---------------------------------------------------------------------------

std::string SerializeRecord(const ClusterRecord& r) {
  Struct root;
  auto& f = *root.mutable_fields();
  f["version"].set_number_value(kFormatVersion);
  f["came_up"].set_bool_value(r.came_up);
  f["master_addresses"].set_string_value(r.master_addresses);
  auto* daemons = f["daemons"].mutable_list_value();
  for (const DaemonRecord& d : r.daemons) {
    auto& df = *daemons->add_values()->mutable_struct_value()->mutable_fields();
    df["name"].set_string_value(d.name);
    df["kind"].set_string_value(d.kind);
    df["rpc_port"].set_number_value(d.rpc_port);
    df["http_port"].set_number_value(d.http_port);
    df["pid"].set_number_value(d.pid);
    auto* args = df["args"].mutable_list_value();
    for (const std::string& a : d.args) args->add_values()->set_string_value(a);
  }
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  // Printing a Struct we built cannot fail.
  (void)google::protobuf::util::MessageToJsonString(root, &out, opts);
  return out;
}

// Field accessors that fail with DATA_LOSS naming the field.
const Value* Field(const Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? nullptr : &it->second;
}

absl::StatusOr<std::string> StringField(const Struct& s, const std::string& name,
                                        const std::string& where) {
  const Value* v = Field(s, name);
  if (v == nullptr || v->kind_case() != Value::kStringValue) {
    return absl::DataLossError(StrCat(where, "\"", name, "\" is missing or not a string"));
  }
  return v->string_value();
}

absl::StatusOr<int> IntField(const Struct& s, const std::string& name, const std::string& where,
                             int min, int max) {
  const Value* v = Field(s, name);
  if (v == nullptr || v->kind_case() != Value::kNumberValue) {
    return absl::DataLossError(StrCat(where, "\"", name, "\" is missing or not a number"));
  }
  double d = v->number_value();
  if (d != static_cast<double>(static_cast<int64_t>(d)) || d < min || d > max) {
    return absl::DataLossError(
        StrCat(where, "\"", name, "\" is ", d, ", not an integer in ", min, "..", max));
  }
  return static_cast<int>(d);
}

absl::StatusOr<DaemonRecord> ParseDaemon(const Value& v, int index) {
  const std::string where = StrCat("daemons[", index, "].");
  if (v.kind_case() != Value::kStructValue) {
    return absl::DataLossError(StrCat("daemons[", index, "] is not an object"));
  }
  const Struct& s = v.struct_value();
  DaemonRecord d;
  BASALT_ASSIGN_OR_RETURN(d.name, StringField(s, "name", where));
  BASALT_ASSIGN_OR_RETURN(d.kind, StringField(s, "kind", where));
  BASALT_ASSIGN_OR_RETURN(d.rpc_port, IntField(s, "rpc_port", where, 1, 65535));
  BASALT_ASSIGN_OR_RETURN(d.http_port, IntField(s, "http_port", where, 1, 65535));
  BASALT_ASSIGN_OR_RETURN(d.pid, IntField(s, "pid", where, 0, 1 << 30));
  if (d.kind != "master" && d.kind != "tserver") {
    return absl::DataLossError(StrCat(where, "kind is \"", d.kind, "\", not master or tserver"));
  }
  if (d.name.empty() || d.name.find('/') != std::string::npos || d.name[0] == '.') {
    return absl::DataLossError(StrCat(where, "name \"", d.name, "\" is not a daemon name"));
  }
  const Value* args = Field(s, "args");
  if (args == nullptr || args->kind_case() != Value::kListValue ||
      args->list_value().values().empty()) {
    return absl::DataLossError(StrCat(where, "\"args\" is missing or not a non-empty list"));
  }
  for (const Value& a : args->list_value().values()) {
    if (a.kind_case() != Value::kStringValue) {
      return absl::DataLossError(StrCat(where, "args holds a value that is not a string"));
    }
    d.args.push_back(a.string_value());
  }
  return d;
}

absl::StatusOr<ClusterRecord> ParseRecord(const std::string& json) {
  Struct root;
  auto ps = google::protobuf::util::JsonStringToMessage(json, &root);
  if (!ps.ok()) {
    return absl::DataLossError(StrCat("not a JSON object: ", std::string(ps.message())));
  }
  BASALT_ASSIGN_OR_RETURN(int version, IntField(root, "version", "", 0, 1 << 30));
  if (version != kFormatVersion) {
    return absl::DataLossError(
        StrCat("format version ", version, " is not the supported ", kFormatVersion));
  }
  ClusterRecord r;
  const Value* came_up = Field(root, "came_up");
  if (came_up == nullptr || came_up->kind_case() != Value::kBoolValue) {
    return absl::DataLossError("\"came_up\" is missing or not a boolean");
  }
  r.came_up = came_up->bool_value();
  BASALT_ASSIGN_OR_RETURN(r.master_addresses, StringField(root, "master_addresses", ""));
  const Value* daemons = Field(root, "daemons");
  if (daemons == nullptr || daemons->kind_case() != Value::kListValue) {
    return absl::DataLossError("\"daemons\" is missing or not a list");
  }
  std::set<std::string> names;
  for (const Value& v : daemons->list_value().values()) {
    BASALT_ASSIGN_OR_RETURN(DaemonRecord d, ParseDaemon(v, static_cast<int>(r.daemons.size())));
    if (!names.insert(d.name).second) {
      return absl::DataLossError(StrCat("daemon ", d.name, " is listed twice"));
    }
    r.daemons.push_back(std::move(d));
  }
  if (r.daemons.empty() || r.daemons[0].kind != "master") {
    return absl::DataLossError("\"daemons\" does not start with a master");
  }
  return r;
}

absl::StatusOr<ClusterRecord> LoadRecord(const std::string& dir) {
  const std::string path = ClusterFile(dir);
  Env* env = Env::Default();
  if (!env->FileExists(path)) {
    return absl::NotFoundError(StrCat(path, " does not exist: no local cluster was started in ",
                                      dir, " (start one with `basalt local start --dir ", dir,
                                      "`)"));
  }
  std::string json;
  BASALT_RETURN_IF_ERROR_PREPEND(ReadFileToString(env, path, &json), StrCat("reading ", path));
  absl::StatusOr<ClusterRecord> r = ParseRecord(json);
  if (!r.ok()) {
    return absl::DataLossError(StrCat(
        path, " is malformed: ", r.status().message(),
        ". Check with `ps` whether daemons of this cluster still run and stop them by hand, then "
        "remove ",
        dir, " by hand (its data is lost) or repair the file"));
  }
  return r;
}

absl::Status SaveRecord(const std::string& dir, const ClusterRecord& r) {
  const std::string path = ClusterFile(dir);
  BASALT_RETURN_IF_ERROR_PREPEND(WriteFileAtomically(Env::Default(), path, SerializeRecord(r)),
                                 StrCat("writing ", path));
  return absl::OkStatus();
}

// ---- Processes ------------------------------------------------------------------------------

// The command line of `pid` from /proc, or empty if the process is gone or a zombie.
std::vector<std::string> ReadCmdline(int pid) {
  std::string data;
  if (pid <= 0 ||
      !ReadFileToString(Env::Default(), StrCat("/proc/", pid, "/cmdline"), &data).ok()) {
    return {};
  }
  std::vector<std::string> args;
  size_t start = 0;
  while (start < data.size()) {
    size_t end = data.find('\0', start);
    if (end == std::string::npos) end = data.size();
    args.push_back(data.substr(start, end - start));
    start = end + 1;
  }
  return args;
}

// True while the recorded pid is alive and still runs the recorded command line (pids are
// reused, so a bare kill(pid, 0) is not enough).
bool IsRunning(const DaemonRecord& d) {
  if (d.pid <= 0) return false;
  if (kill(d.pid, 0) != 0 && errno != EPERM) return false;
  return ReadCmdline(d.pid) == d.args;
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

int ReadInt(int fd) { return ReadIntFromPipe(fd); }

// In the forked children: only async-signal-safe calls until exec. The first child starts a new
// session and forks the daemon, reports its pid through `pid_fd` and exits, so the daemon is
// reparented to init and outlives the CLI. An exec failure's errno goes through `err_fd`.
[[noreturn]] void DetachAndExec(int log_fd, int null_fd, int pid_fd, int err_fd,
                                char* const* argv) {
  setsid();
  pid_t pid = fork();
  if (pid != 0) {
    int value = pid < 0 ? -errno : pid;
    ssize_t ignored = write(pid_fd, &value, sizeof(value));
    (void)ignored;
    _exit(0);
  }
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);  // Undo the CLI's SIG_IGNs.
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  // Descriptors the CLI inherited without close-on-exec stay out of the daemon.
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  execve(argv[0], argv, environ);
  int err = errno;
  ssize_t ignored = write(err_fd, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

// Starts `args` detached with its output appended to `log_path`; returns the daemon's pid.
absl::StatusOr<int> SpawnDetached(const std::string& name, std::vector<std::string> args,
                                  const std::string& log_path) {
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return PosixError(StrCat(name, ": opening its log ", log_path), errno);
  std::string header = StrCat("==== start ", absl::FormatTime(absl::Now()), ":");
  for (const std::string& a : args) StrAppend(&header, " ", a);
  WriteAll(log_fd, header + "\n");
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pid_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (null_fd < 0 || pipe2(pid_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    for (int fd : {log_fd, null_fd, pid_pipe[0], pid_pipe[1]}) {
      if (fd >= 0) close(fd);
    }
    return PosixError(StrCat(name, ": opening /dev/null or a pipe"), err);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = fork();
  if (child == 0) DetachAndExec(log_fd, null_fd, pid_pipe[1], err_pipe[1], argv.data());
  int fork_errno = errno;
  for (int fd : {log_fd, null_fd, pid_pipe[1], err_pipe[1]}) close(fd);
  int daemon_pid = 0, exec_errno = 0;
  if (child > 0) {
    daemon_pid = ReadInt(pid_pipe[0]);
    exec_errno = ReadInt(err_pipe[0]);  // EOF (0) once exec succeeded.
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(pid_pipe[0]);
  close(err_pipe[0]);
  if (child < 0) return PosixError(StrCat(name, ": fork"), fork_errno);
  if (daemon_pid <= 0) return PosixError(StrCat(name, ": second fork"), -daemon_pid);
  if (exec_errno != 0) return PosixError(StrCat(name, ": exec ", args[0]), exec_errno);
  return daemon_pid;
}

// The last lines of a daemon's log, framed by lines naming it, for error messages.
std::string LogTail(const std::string& dir, const std::string& name) {
  const std::string path = LogPath(dir, name);
  std::string data;
  absl::Status s = ReadFileToString(Env::Default(), path, &data);
  if (!s.ok()) return StrCat("(cannot read ", path, ": ", s.message(), ")");
  // Only this run's lines: from the latest "==== start" header on.
  size_t run = data.rfind("==== start");
  std::string_view tail(data);
  if (run != std::string::npos) tail.remove_prefix(run);
  if (!tail.empty() && tail.back() == '\n') tail.remove_suffix(1);
  size_t pos = tail.size();
  for (int lines = 0; pos > 0; --pos) {
    if (tail[pos - 1] == '\n' && ++lines == kLogTailLines) break;
  }
  return StrCat("---- last lines of ", path, " ----\n", tail.substr(pos), "\n---- end of ", name,
                "'s log ----");
}

// Calls `check` until it returns OK or `deadline` passes; returns its last status.
absl::Status PollUntil(absl::Time deadline, const std::function<absl::Status()>& check) {
  absl::Duration pause = absl::Milliseconds(10);
  while (true) {
    absl::Status s = check();
    if (s.ok() || absl::IsFailedPrecondition(s) || absl::Now() >= deadline) return s;
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(200));
  }
}

// Signals every running daemon of `r` with SIGTERM, waits for them to exit (SIGKILL after
// kStopTimeout). Only daemons still running their recorded command line are signalled.
absl::Status StopDaemons(const ClusterRecord& r, std::ostream* progress) {
  std::vector<const DaemonRecord*> running;
  for (const DaemonRecord& d : r.daemons) {
    if (IsRunning(d)) running.push_back(&d);
  }
  if (running.empty()) return absl::OkStatus();
  for (const DaemonRecord* d : running) {
    if (progress) *progress << "Stopping " << d->name << " (pid " << d->pid << ")\n";
    kill(d->pid, SIGTERM);
  }
  auto none_running = [&]() -> absl::Status {
    std::string names;
    for (const DaemonRecord* d : running) {
      if (IsRunning(*d)) StrAppend(&names, " ", d->name);
    }
    if (names.empty()) return absl::OkStatus();
    return absl::DeadlineExceededError(StrCat("still running:", names));
  };
  if (PollUntil(absl::Now() + kStopTimeout, none_running).ok()) return absl::OkStatus();
  for (const DaemonRecord* d : running) {
    if (!IsRunning(*d)) continue;
    if (progress) {
      *progress << d->name << " did not exit within " << absl::FormatDuration(kStopTimeout)
                << " of SIGTERM; sending SIGKILL\n";
    }
    kill(d->pid, SIGKILL);
  }
  absl::Status s = PollUntil(absl::Now() + kKillTimeout, none_running);
  if (!s.ok()) return absl::InternalError(StrCat(s.message(), " even after SIGKILL"));
  return absl::OkStatus();
}

// ---- Ports and layout -----------------------------------------------------------------------

// Binds 127.0.0.1:`port` (0: any) as gRPC would (SO_REUSEADDR) and returns the bound port, or 0
// if the port is taken.
int BindLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  int bound = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  close(fd);
  return bound;
}

// `preferred` if it is free and not yet taken, else a free port chosen by the kernel.
absl::StatusOr<int> PickPort(int preferred, std::set<int>* taken) {
  if (preferred > 0 && taken->count(preferred) == 0 && BindLoopback(preferred) == preferred) {
    taken->insert(preferred);
    return preferred;
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    int port = BindLoopback(0);
    if (port > 0 && taken->insert(port).second) return port;
  }
  return absl::ResourceExhaustedError("cannot find a free port on 127.0.0.1");
}

absl::StatusOr<std::string> ResolveBinDir(const std::string& configured) {
  if (!configured.empty()) return configured;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return absl::InternalError(
        StrCat("cannot read /proc/self/exe (", ec.message(), "); pass the bin directory"));
  }
  return exe.parent_path().string();
}

absl::Status CheckProgram(const std::string& path) {
  if (access(path.c_str(), X_OK) == 0) return absl::OkStatus();
  return absl::NotFoundError(StrCat(path, " does not exist or is not executable: build it ",
                                    "(ninja -C build ", BaseName(path),
                                    ") or point the bin directory at the built programs"));
}

// A daemon with its ports picked and its standard command line (the extra flags follow):
// `rpc_port` / `http_port` if free (0: none preferred), else free ports chosen by the kernel.
absl::StatusOr<DaemonRecord> NewDaemon(const std::string& dir, const std::string& exe,
                                       const std::string& name, const std::string& kind,
                                       int rpc_port, int http_port, std::set<int>* taken) {
  DaemonRecord d{name, kind};
  BASALT_ASSIGN_OR_RETURN(d.rpc_port, PickPort(rpc_port, taken));
  BASALT_ASSIGN_OR_RETURN(d.http_port, PickPort(http_port, taken));
  d.args = {exe, StrCat("--fs_data_dir=", JoinPath(DaemonDir(dir, name), "data")),
            StrCat("--rpc_bind_addresses=", Address(d.rpc_port)),
            StrCat("--webserver_port=", d.http_port),
            StrCat("--server_dump_info_path=", InfoPath(dir, name))};
  return d;
}

// A new layout from the options.
absl::StatusOr<ClusterRecord> NewLayout(const LocalClusterOptions& o, const std::string& dir,
                                        const std::string& bin_dir) {
  ClusterRecord r;
  std::set<int> taken;
  const bool well_known = o.master_rpc_port == 0;
  std::vector<DaemonRecord> masters;
  for (int i = 0; i < o.num_masters; ++i) {
    // The well-known layout: 7051, 7151, 7251, ...; else the given port, then free ones.
    const int port =
        well_known ? kDefaultMasterPort + kMasterPortStep * i : (i == 0 ? o.master_rpc_port : 0);
    BASALT_ASSIGN_OR_RETURN(
        DaemonRecord m, NewDaemon(dir, JoinPath(bin_dir, "basalt-master"), StrCat("master-", i),
                                  "master", port, well_known ? port + kWebPortOffset : 0, &taken));
    if (!well_known && i == 0 && m.rpc_port != o.master_rpc_port) {
      return absl::FailedPreconditionError(
          StrCat("master port ", o.master_rpc_port, " on 127.0.0.1 is in use; choose another"));
    }
    StrAppend(&r.master_addresses, i == 0 ? "" : ",", Address(m.rpc_port));
    masters.push_back(std::move(m));
  }
  for (DaemonRecord& m : masters) {
    // Several masters form one catalog group: each is told all of them (itself included).
    if (o.num_masters > 1) m.args.push_back(StrCat("--master_addresses=", r.master_addresses));
    m.args.insert(m.args.end(), o.extra_master_flags.begin(), o.extra_master_flags.end());
    r.daemons.push_back(std::move(m));
  }
  for (int i = 0; i < o.num_tablet_servers; ++i) {
    // The well-known layout: 7050, 7052, 7053, ... (7051 is the master's).
    const int port = well_known ? (i == 0 ? kFirstTabletServerPort : kDefaultMasterPort + i) : 0;
    BASALT_ASSIGN_OR_RETURN(
        DaemonRecord t, NewDaemon(dir, JoinPath(bin_dir, "basalt-tserver"), StrCat("ts-", i),
                                  "tserver", port, well_known ? port + kWebPortOffset : 0, &taken));
    BASALT_ASSIGN_OR_RETURN(const int frame_port,
                            PickPort(well_known ? port + kFramePortOffset : 0, &taken));
    t.args.push_back(StrCat("--frame_rpc_port=", frame_port));
    t.args.push_back(StrCat("--master_addresses=", r.master_addresses));
    t.args.insert(t.args.end(), o.extra_tserver_flags.begin(), o.extra_tserver_flags.end());
    r.daemons.push_back(std::move(t));
  }
  return r;
}

absl::Status ValidateOptions(const LocalClusterOptions& o) {
  if (o.num_masters < 1 || o.num_masters > 9) {
    return absl::InvalidArgumentError(
        StrCat("num_masters is ", o.num_masters, "; it must be in 1..9 (3 tolerates one failure)"));
  }
  if (o.num_tablet_servers < 1 || o.num_tablet_servers > 100) {
    return absl::InvalidArgumentError(
        StrCat("num_tablet_servers is ", o.num_tablet_servers, "; it must be in 1..100"));
  }
  if (o.master_rpc_port < 0 || o.master_rpc_port > 65535) {
    return absl::InvalidArgumentError(
        StrCat("master_rpc_port is ", o.master_rpc_port, "; it must be in 0..65535"));
  }
  return absl::OkStatus();
}

LocalClusterStatus MakeStatus(const std::string& dir, const ClusterRecord& r) {
  LocalClusterStatus st;
  st.master_addresses = r.master_addresses;
  for (const DaemonRecord& d : r.daemons) {
    st.daemons.push_back({d.name, d.pid, IsRunning(d), Address(d.rpc_port), LogPath(dir, d.name)});
  }
  return st;
}

// A restart runs the recorded command lines: they must name this directory's data (not that
// of a directory this one was copied or moved from).
absl::Status CheckRecordedDirs(const std::string& dir, const ClusterRecord& r) {
  for (const DaemonRecord& d : r.daemons) {
    const std::string flag = StrCat("--fs_data_dir=", JoinPath(DaemonDir(dir, d.name), "data"));
    if (std::find(d.args.begin(), d.args.end(), flag) == d.args.end()) {
      return absl::FailedPreconditionError(StrCat(
          ClusterFile(dir), " records ", d.name, " without ", flag,
          ": was the directory moved or copied? Move it back, or start a new cluster elsewhere"));
    }
  }
  return absl::OkStatus();
}

// ---- Starting -------------------------------------------------------------------------------

// Waits until daemon `d` (just spawned) has written an info file naming its pid and port.
// FAILED_PRECONDITION (stops the polling) if it is no longer running.
absl::Status CheckInfoFile(const std::string& dir, const DaemonRecord& d) {
  const std::string path = InfoPath(dir, d.name);
  if (!IsRunning(d)) {
    return absl::FailedPreconditionError(StrCat(d.name, " exited before writing ", path));
  }
  std::string json;
  absl::Status s = ReadFileToString(Env::Default(), path, &json);
  if (!s.ok()) return absl::UnavailableError(StrCat(d.name, " has not written ", path, " yet"));
  Struct info;
  if (!google::protobuf::util::JsonStringToMessage(json, &info).ok()) {
    return absl::UnavailableError(StrCat(path, " is not a JSON object"));
  }
  absl::StatusOr<int> pid = IntField(info, "pid", StrCat(path, ": "), 0, 1 << 30);
  absl::StatusOr<int> port = IntField(info, "rpc_port", StrCat(path, ": "), 0, 65535);
  if (!pid.ok() || !port.ok() || *pid != d.pid || *port != d.rpc_port) {
    return absl::FailedPreconditionError(
        StrCat(path, " does not name pid ", d.pid, " and port ", d.rpc_port, ": ", json));
  }
  return absl::OkStatus();
}

// The uuid a tablet server wrote to its info file (checked by CheckInfoFile before).
std::string InfoUuid(const std::string& dir, const DaemonRecord& d) {
  std::string json;
  Struct info;
  if (!ReadFileToString(Env::Default(), InfoPath(dir, d.name), &json).ok() ||
      !google::protobuf::util::JsonStringToMessage(json, &info).ok()) {
    return "";
  }
  return StringField(info, "uuid", "").value_or("");
}

// Asks the leader master whether every tablet server of `r` is live (followers refuse; a
// forming group has no leader for a moment).
absl::Status CheckTabletServersLive(const std::string& dir, const ClusterRecord& r,
                                    const std::vector<std::shared_ptr<grpc::Channel>>& channels) {
  pb::ListTabletServersResponsePB resp;
  absl::Status s;
  for (const auto& channel : channels) {
    auto stub = pb::MasterService::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
    s = FromGrpcStatus(stub->ListTabletServers(&ctx, pb::ListTabletServersRequestPB(), &resp));
    if (s.ok()) break;
  }
  BASALT_RETURN_IF_ERROR_PREPEND(s, "MasterService.ListTabletServers");
  std::set<std::string> live;
  for (const auto& ts : resp.servers()) {
    if (ts.live()) live.insert(ts.uuid());
  }
  std::string missing;
  for (const DaemonRecord& d : r.daemons) {
    if (d.kind != "tserver") continue;
    if (!IsRunning(d)) return absl::FailedPreconditionError(StrCat(d.name, " exited"));
    if (live.count(InfoUuid(dir, d)) == 0) StrAppend(&missing, " ", d.name);
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::UnavailableError(StrCat("the leader master does not list as live:", missing));
}

// The name of the daemon an error is about (the first daemon named in it), or empty.
std::string DaemonNamedIn(const ClusterRecord& r, const absl::Status& s) {
  size_t best = std::string::npos;
  std::string name;
  for (const DaemonRecord& d : r.daemons) {
    size_t pos = s.message().find(d.name);
    // At equal positions the longer name wins ("ts-10" over "ts-1").
    if (pos != std::string::npos &&
        (best == std::string::npos || pos < best || (pos == best && d.name.size() > name.size()))) {
      best = pos;
      name = d.name;
    }
  }
  return name;
}

// Spawns every daemon of `r` and waits until the cluster is healthy.
absl::Status LaunchAndWait(const std::string& dir, ClusterRecord* r, std::ostream* progress) {
  Env* env = Env::Default();
  for (const DaemonRecord& d : r->daemons) BASALT_RETURN_IF_ERROR(CheckProgram(d.args[0]));
  for (DaemonRecord& d : r->daemons) {
    BASALT_RETURN_IF_ERROR(env->CreateDirs(JoinPath(DaemonDir(dir, d.name), "data")));
    const std::string info = InfoPath(dir, d.name);
    if (env->FileExists(info)) BASALT_RETURN_IF_ERROR(env->DeleteFile(info));
    BASALT_ASSIGN_OR_RETURN(d.pid, SpawnDetached(d.name, d.args, LogPath(dir, d.name)));
    BASALT_RETURN_IF_ERROR(SaveRecord(dir, *r));
    if (progress) {
      *progress << "Started " << d.name << " (pid " << d.pid << ") on " << Address(d.rpc_port)
                << ", web http://" << Address(d.http_port) << ", log " << LogPath(dir, d.name)
                << "\n";
    }
  }
  const absl::Time deadline = absl::Now() + kStartTimeout;
  for (const DaemonRecord& d : r->daemons) {
    absl::Status s = PollUntil(deadline, [&] { return CheckInfoFile(dir, d); });
    if (absl::IsUnavailable(s)) {
      return absl::DeadlineExceededError(StrCat(d.name, " did not serve within ",
                                                absl::FormatDuration(kStartTimeout), ": ",
                                                s.message()));
    }
    if (absl::IsFailedPrecondition(s)) return absl::InternalError(s.message());
    if (!s.ok()) return s;
  }
  if (progress) *progress << "Waiting for the masters to list every tablet server as live\n";
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const DaemonRecord& d : r->daemons) {
    if (d.kind == "master") channels.push_back(NewChannel(Address(d.rpc_port)));
  }
  absl::Status s = PollUntil(deadline, [&] { return CheckTabletServersLive(dir, *r, channels); });
  if (absl::IsFailedPrecondition(s)) return absl::InternalError(s.message());
  if (!s.ok()) {
    return absl::DeadlineExceededError(
        StrCat("the masters did not list every tablet server as live within ",
               absl::FormatDuration(kStartTimeout), ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The cluster a start runs: the recorded one if it once came up (restarted as recorded, with the
// programs from `bin_dir`), else a new layout from the options. FAILED_PRECONDITION if a recorded
// daemon still runs.
absl::StatusOr<ClusterRecord> ClusterToStart(const LocalClusterOptions& options,
                                             const std::string& dir, const std::string& bin_dir,
                                             std::ostream* progress) {
  if (Env::Default()->FileExists(ClusterFile(dir))) {
    BASALT_ASSIGN_OR_RETURN(ClusterRecord r, LoadRecord(dir));
    for (const DaemonRecord& d : r.daemons) {
      if (IsRunning(d)) {
        return absl::FailedPreconditionError(
            StrCat("the cluster in ", dir, " is already running (", d.name, " is pid ", d.pid,
                   "); stop it first with `basalt local stop --dir ", dir, "`"));
      }
    }
    if (r.came_up) {
      BASALT_RETURN_IF_ERROR(CheckRecordedDirs(dir, r));
      const std::string master = JoinPath(bin_dir, "basalt-master");
      const std::string tserver = JoinPath(bin_dir, "basalt-tserver");
      for (DaemonRecord& d : r.daemons) d.args[0] = d.kind == "master" ? master : tserver;
      if (progress) {
        *progress << "Restarting the stopped cluster in " << dir << " from its data (its "
                  << r.daemons.size() << " daemons, ports and flags as recorded in "
                  << ClusterFile(dir) << "; destroy it to lay it out anew)\n";
      }
      return r;
    }
  }
  if (progress) *progress << "Starting a new local cluster in " << dir << "\n";
  return NewLayout(options, dir, bin_dir);
}

// Stops what a failed start started and explains the failure `s`.
absl::Status StartFailed(const std::string& dir, const ClusterRecord& r, const absl::Status& s) {
  std::string failed = DaemonNamedIn(r, s);
  StopDaemons(r, nullptr).IgnoreError();
  SaveRecord(dir, r).IgnoreError();
  std::string msg = StrCat("starting the local cluster in ", dir, " failed: ", s.message(),
                           "\nEvery daemon it started was stopped; logs are in ", dir, ".");
  if (!r.came_up) {
    StrAppend(&msg,
              " The cluster never came up, so the next start lays it out anew from its "
              "options: fix the cause and start again.");
  }
  if (!failed.empty()) StrAppend(&msg, "\n", LogTail(dir, failed));
  return absl::Status(s.code(), msg);
}

}  // namespace

absl::StatusOr<LocalClusterStatus> StartLocalCluster(const LocalClusterOptions& options,
                                                     std::ostream* progress) {
  BASALT_RETURN_IF_ERROR(ValidateOptions(options));
  BASALT_ASSIGN_OR_RETURN(const std::string dir, AbsoluteDir(options.dir));
  BASALT_ASSIGN_OR_RETURN(const std::string bin_dir, ResolveBinDir(options.bin_dir));
  BASALT_RETURN_IF_ERROR_PREPEND(Env::Default()->CreateDirs(dir), StrCat("creating ", dir));
  BASALT_ASSIGN_OR_RETURN(ClusterRecord r, ClusterToStart(options, dir, bin_dir, progress));
  BASALT_RETURN_IF_ERROR(SaveRecord(dir, r));
  absl::Status s = LaunchAndWait(dir, &r, progress);
  if (!s.ok()) return StartFailed(dir, r, s);
  r.came_up = true;
  BASALT_RETURN_IF_ERROR(SaveRecord(dir, r));
  if (progress) {
    *progress << "The local cluster is up. Master address: " << r.master_addresses << "\n";
  }
  return MakeStatus(dir, r);
}

absl::Status StopLocalCluster(const std::string& dir_arg, std::ostream* progress) {
  BASALT_ASSIGN_OR_RETURN(const std::string dir, AbsoluteDir(dir_arg));
  BASALT_ASSIGN_OR_RETURN(ClusterRecord r, LoadRecord(dir));
  BASALT_RETURN_IF_ERROR_PREPEND(StopDaemons(r, progress), StrCat("stopping the cluster in ", dir));
  if (progress) *progress << "The local cluster in " << dir << " is stopped\n";
  return absl::OkStatus();
}

absl::StatusOr<LocalClusterStatus> GetLocalClusterStatus(const std::string& dir_arg) {
  BASALT_ASSIGN_OR_RETURN(const std::string dir, AbsoluteDir(dir_arg));
  BASALT_ASSIGN_OR_RETURN(ClusterRecord r, LoadRecord(dir));
  return MakeStatus(dir, r);
}

absl::Status DestroyLocalCluster(const std::string& dir_arg, std::ostream* progress) {
  BASALT_ASSIGN_OR_RETURN(const std::string dir, AbsoluteDir(dir_arg));
  Env* env = Env::Default();
  if (!env->FileExists(dir)) {
    return absl::NotFoundError(StrCat(dir, " does not exist; there is nothing to destroy"));
  }
  if (!env->FileExists(ClusterFile(dir))) {
    return absl::FailedPreconditionError(
        StrCat("refusing to remove ", dir, ": it has no ", kClusterFile,
               ", so it is not a local cluster's directory (remove it by hand if you mean to)"));
  }
  BASALT_ASSIGN_OR_RETURN(ClusterRecord r, LoadRecord(dir));
  BASALT_RETURN_IF_ERROR_PREPEND(StopDaemons(r, progress),
                                 StrCat("stopping the cluster in ", dir, " (nothing removed)"));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    return absl::InternalError(StrCat("removing ", dir, ": ", ec.message(),
                                      " (its daemons are stopped; remove it by hand)"));
  }
  if (progress) *progress << "Removed " << dir << "\n";
  return absl::OkStatus();
}

}  // namespace basalt::tools
