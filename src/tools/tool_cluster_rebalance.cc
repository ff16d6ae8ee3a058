// `basalt cluster rebalance`: moves replicas until the replica counts of the eligible tablet
// servers (live, not in maintenance mode) differ by at most one (docs/cli.md "cluster rebalance").
//
// It reads the cluster (the master's tablet servers and tables, then ListTablets on every live
// server; PlaceTablet of rebalance_plan.h makes each tablet's placement and health), then starts
// every move PickMove allows, each on a thread of its own (MoveReplica of replica_move.h, the
// code of `tablet change_config move_replica`). Whenever a move ends it reads the cluster again,
// counts the moves still running as done, and starts what PickMove now allows. It ends when no
// move runs and PickMove has none: balanced, or blocked by tablets that are not healthy, which it
// waits --timeout_ms for before giving up. A failed move stops it: nothing new starts, the running
// moves finish, and the error names the tablet, both servers and the tablet's replicas as they
// are then.
//
// Progress goes to stderr, one line at a time, each move's lines prefixed "[move N] "; the
// summary (moves done, replicas per server before and after) to stdout.

#include <gflags/gflags.h>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/master_rpc.h"
#include "tools/rebalance_plan.h"
#include "tools/replica_move.h"
#include "tools/tablet_rpc.h"
#include "tools/tool_common.h"

DEFINE_int32(max_moves_per_server, 5,
             "How many replica moves cluster rebalance runs at once that involve any one tablet "
             "server (as source or destination); at least 1.");
DEFINE_bool(output_replica_distribution_details, false,
            "Whether cluster rebalance also prints the replica counts per tablet server of each "
            "table.");

namespace basalt::tools {

namespace {

// While only unhealthy tablets could move, how often to look again.
constexpr absl::Duration kUnhealthyPoll = absl::Seconds(1);

// The cluster as one read saw it.
struct ClusterSnapshot {
  pb::ListTabletServersResponsePB servers;
  ClusterPlacement placement;
  // Tablet servers outside the balance and why: "tablet server U (addr) is not live".
  std::vector<std::string> left_out;
};

std::string ServerName(const pb::ListTabletServersResponsePB::ServerPB& s) {
  return StrCat("tablet server ", s.uuid(), " (", TabletServerAddress(s), ")");
}

// "U (host:port)" for a uuid of the snapshot's listing.
std::string Describe(const ClusterSnapshot& snap, const std::string& uuid) {
  const auto* s = FindTabletServer(snap.servers, uuid);
  return StrCat(uuid, " (", s == nullptr ? "address unknown" : TabletServerAddress(*s), ")");
}

// Reads the cluster: ListTabletServers and ListTables (master), ListTablets on each live server
// (sequentially, each within --timeout_ms). A live server that does not answer is left out.
// The master calls' errors.
absl::StatusOr<ClusterSnapshot> LoadSnapshot(const std::string& masters) {
  ClusterSnapshot snap;
  BASALT_ASSIGN_OR_RETURN(snap.servers, ListTabletServers(masters));
  pb::ListTablesResponsePB tables;
  BASALT_RETURN_IF_ERROR(CallMaster(masters, &pb::MasterService::Stub::ListTables,
                                    pb::ListTablesRequestPB(), &tables));
  std::map<std::string, int> replication_factor;
  for (const auto& t : tables.tables()) replication_factor[t.name()] = t.num_replicas();

  std::set<std::string> answered;
  std::map<std::string, std::vector<ReplicaReport>> reports;  // By tablet id.
  for (const auto& s : snap.servers.servers()) {
    if (!s.live()) {
      snap.left_out.push_back(StrCat(ServerName(s), " is not live"));
      continue;
    }
    auto listing = ListTabletsOn(TabletServerAddress(s), OperationDeadline());
    if (!listing.ok()) {
      snap.left_out.push_back(
          StrCat(ServerName(s), " did not answer (", listing.status().message(), ")"));
      continue;
    }
    answered.insert(s.uuid());
    // A server in maintenance mode answers: its replicas count for their tablets' health.
    if (s.maintenance_mode()) {
      snap.left_out.push_back(StrCat(ServerName(s), " is in maintenance mode"));
    } else {
      snap.placement.servers.push_back(s.uuid());
    }
    for (auto& t : *listing->mutable_tablets()) {
      if (t.state() == pb::TABLET_DELETED) continue;  // A tombstone is not a replica.
      const std::string id = t.tablet_id();
      reports[id].push_back(ReplicaReport{s.uuid(), std::move(t)});
    }
  }
  for (const auto& [id, r] : reports) {
    auto rf = replication_factor.find(r.front().status.table_name());
    snap.placement.tablets.push_back(
        PlaceTablet(id, r, rf == replication_factor.end() ? 0 : rf->second, answered));
  }
  return snap;
}

// "24 replicas on 5 tablet servers, 4 to 5 each".
std::string Spread(const std::map<std::string, int>& counts) {
  int total = 0;
  int lo = counts.empty() ? 0 : counts.begin()->second;
  int hi = lo;
  for (const auto& [uuid, n] : counts) {
    total += n;
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  return StrCat(total, " replicas on ", counts.size(), " tablet servers, ",
                lo == hi ? StrCat(lo) : StrCat(lo, " to ", hi), " each");
}

// One ended move, as its thread reports it.
struct EndedMove {
  int number = 0;
  ReplicaMove move;
  absl::Status status;
  absl::Duration took;
};

// Runs moves on threads of its own. Start() and WaitForEnded() from the thread that owns the
// runner; Print() from any thread. The destructor joins every thread, so it waits for the moves
// still running (each step of a move has --timeout_ms).
// Thread-safe as described.
class MoveRunner {
 public:
  MoveRunner(std::string masters, std::ostream* err) : masters_(std::move(masters)), err_(err) {}
  ~MoveRunner() {
    for (auto& t : threads_) t.join();
  }
  MoveRunner(const MoveRunner&) = delete;
  MoveRunner& operator=(const MoveRunner&) = delete;

  // Starts move number `number` on a new thread; its lines go to Print with the "[move N] " prefix.
  void Start(int number, const ReplicaMove& move) {
    threads_.emplace_back([this, number, move] {
      const std::string prefix = StrCat("[move ", number, "] ");
      auto print = [this, prefix](const std::string& line) { Print(StrCat(prefix, line)); };
      const absl::Time start = absl::Now();
      absl::Status s =
          MoveReplica(masters_, move.tablet_id, move.from, move.to, MoveLog{print, print});
      absl::MutexLock l(&mu_);
      ended_.push_back(EndedMove{number, move, std::move(s), absl::Now() - start});
    });
  }

  // Blocks until a move started here has ended (since the last call); returns those that have.
  // REQUIRES: a started move has not been returned yet.
  std::vector<EndedMove> WaitForEnded() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(
        +[](std::vector<EndedMove>* ended) { return !ended->empty(); }, &ended_));
    return std::exchange(ended_, {});
  }

  // Writes `line` (ending in '\n') to the error stream, whole.
  void Print(const std::string& line) ABSL_LOCKS_EXCLUDED(print_mu_) {
    absl::MutexLock l(&print_mu_);
    *err_ << line << std::flush;
  }

 private:
  // Constant after construction.
  const std::string masters_;
  std::ostream* const err_;
  // The owning thread's only.
  std::vector<std::thread> threads_;

  absl::Mutex mu_;
  std::vector<EndedMove> ended_ ABSL_GUARDED_BY(mu_);
  // Serializes lines on err_; never held together with mu_.
  absl::Mutex print_mu_;
};

// The error of a failed move: the move, its error, and the tablet's replicas as they are now.
absl::Status MoveError(const std::string& masters, const ClusterSnapshot& snap,
                       const EndedMove& ended) {
  const ReplicaMove& m = ended.move;
  std::string table;
  for (const auto& t : snap.placement.tablets) {
    if (t.tablet_id == m.tablet_id) table = StrCat(" (table ", t.table_name, ")");
  }
  auto view = LoadView(masters, m.tablet_id);
  const std::string now =
      view.ok() ? StrCat("its replicas now: ", DescribeConfig(view->cstate.committed_config(),
                                                              view->cstate.leader_uuid()))
                : StrCat("its replicas could not be read (", view.status().message(),
                         "): check with basalt cluster ksck");
  return absl::Status(ended.status.code(),
                      StrCat("move ", ended.number, " of tablet ", m.tablet_id, table, " from ",
                             Describe(snap, m.from), " to ", Describe(snap, m.to), " failed: ",
                             ended.status.message(), ". Tablet ", m.tablet_id, ": ", now));
}

// The moves of one rebalancing, from the first snapshot until the cluster is balanced, a move
// fails, or only unhealthy tablets could move for --timeout_ms. Run() once.
// Not thread-safe; the caller serializes (its moves run on the runner's threads).
class MoveScheduler {
 public:
  MoveScheduler(std::string masters, ClusterSnapshot snap, MoveRunner* runner)
      : masters_(std::move(masters)), runner_(runner), snap_(std::move(snap)) {}

  // Returns once no move runs; error() then says why it stopped early (OK: balanced).
  void Run() {
    while (true) {
      if (error_.ok()) StartAllowedMoves();
      if (!running_.empty()) {
        CollectEnded();
      } else if (!error_.ok() || IsBalanced(ReplicaCounts(snap_.placement)) || !WaitIfBlocked()) {
        return;
      }
      if (error_.ok()) Reload();
    }
  }

  int done() const { return done_; }
  const absl::Status& error() const { return error_; }

 private:
  // Starts every move PickMove allows now, counting each as done in the placement.
  void StartAllowedMoves() {
    while (auto m = PickMove(snap_.placement, in_flight_, FLAGS_max_moves_per_server)) {
      const int number = ++started_;
      runner_->Print(StrCat("[move ", number, "] tablet ", m->tablet_id, " from ",
                            Describe(snap_, m->from), " to ", Describe(snap_, m->to),
                            ": starting (", running_.size() + 1, " running)\n"));
      in_flight_.Add(*m);
      ApplyMove(*m, &snap_.placement);
      running_[number] = *m;
      runner_->Start(number, *m);
      blocked_since_ = absl::InfiniteFuture();
    }
  }

  // Waits for moves to end and records them; the first failure becomes error().
  void CollectEnded() {
    for (const EndedMove& e : runner_->WaitForEnded()) {
      running_.erase(e.number);
      in_flight_.Remove(e.move);
      const std::string took = absl::StrFormat("%.1f s", absl::ToDoubleSeconds(e.took));
      if (e.status.ok()) {
        ++done_;
        runner_->Print(StrCat("[move ", e.number, "] done in ", took, "\n"));
        continue;
      }
      runner_->Print(
          StrCat("[move ", e.number, "] failed after ", took, ": ", e.status.message(), "\n"));
      if (!error_.ok()) continue;
      error_ = MoveError(masters_, snap_, e);
      if (!running_.empty()) {
        runner_->Print(StrCat("Stopping: waiting for the ", running_.size(),
                              " move(s) still running to end\n"));
      }
    }
  }

  // Unbalanced with nothing running and nothing allowed: only unhealthy tablets could move. They
  // may be healthy soon (an election, a replica starting), so this waits a poll and returns true
  // to look again, until --timeout_ms has passed since it first found nothing to move; then it
  // sets error() and returns false.
  bool WaitIfBlocked() {
    const absl::Time now = absl::Now();
    const std::string unhealthy = absl::StrJoin(UnhealthyTablets(snap_.placement), "; ");
    if (blocked_since_ == absl::InfiniteFuture()) {
      blocked_since_ = now;
      runner_->Print(StrCat("Waiting up to --timeout_ms=", OperationTimeout().count(),
                            " for tablets that are not healthy: ", unhealthy, "\n"));
    } else if (now - blocked_since_ >= absl::FromChrono(OperationTimeout())) {
      error_ = absl::FailedPreconditionError(
          StrCat("the cluster is not balanced (", Spread(ReplicaCounts(snap_.placement)),
                 ") and only tablets that are not healthy could move, for --timeout_ms=",
                 OperationTimeout().count(), ": ", unhealthy, " (see basalt cluster ksck)"));
      return false;
    }
    absl::SleepFor(kUnhealthyPoll);
    return true;
  }

  // Reads the cluster again, with the moves still running counted as done.
  void Reload() {
    auto fresh = LoadSnapshot(masters_);
    if (!fresh.ok()) {
      error_ = PrependToStatus(fresh.status(), "reading the cluster between moves");
      return;
    }
    snap_ = *std::move(fresh);
    for (const auto& [number, m] : running_) ApplyMove(m, &snap_.placement);
  }

  // Constant after construction.
  const std::string masters_;
  MoveRunner* const runner_;  // Outlives this.

  ClusterSnapshot snap_;  // The latest read, moves running counted as done.
  MovesInFlight in_flight_;
  std::map<int, ReplicaMove> running_;  // By move number.
  int started_ = 0;
  int done_ = 0;
  absl::Status error_;
  // When nothing could move for the first time since a move last started.
  absl::Time blocked_since_ = absl::InfiniteFuture();
};

// Prints one table of replicas per server: uuid, address, and the counts (before and after, or
// one column when `after` is null). Rows: the servers either count has, by address.
void PrintCounts(const ClusterSnapshot& snap, const std::map<std::string, int>& before,
                 const std::map<std::string, int>* after, std::ostream* out) {
  std::map<std::string, std::string> rows;  // Address -> uuid.
  for (const auto* counts : {&before, after}) {
    if (counts == nullptr) continue;
    for (const auto& [uuid, n] : *counts) {
      const auto* s = FindTabletServer(snap.servers, uuid);
      rows[s == nullptr ? uuid : TabletServerAddress(*s)] = uuid;
    }
  }
  auto count = [](const std::map<std::string, int>& counts, const std::string& uuid) {
    auto it = counts.find(uuid);
    return it == counts.end() ? Cell::Null() : Cell::Number(StrCat(it->second));
  };
  std::vector<std::string> headers = {"uuid", "rpc_address"};
  if (after == nullptr) {
    headers.push_back("replicas");
  } else {
    headers.insert(headers.end(), {"before", "after"});
  }
  TableWriter w(TableWriter::kTable, headers, out);
  for (const auto& [address, uuid] : rows) {
    std::vector<Cell> row = {Cell::String(uuid), Cell::String(address), count(before, uuid)};
    if (after != nullptr) row.push_back(count(*after, uuid));
    w.AddRow(std::move(row));
  }
  w.Finish();
}

// The distribution: the whole cluster, then (with --output_replica_distribution_details) each
// table. `after` null: one snapshot only.
void PrintDistribution(const ClusterSnapshot& before, const ClusterSnapshot* after,
                       std::ostream* out) {
  const ClusterSnapshot& names = after != nullptr ? *after : before;
  const auto after_counts =
      after != nullptr ? ReplicaCounts(after->placement) : std::map<std::string, int>();
  *out << "\nReplicas per tablet server:\n";
  PrintCounts(names, ReplicaCounts(before.placement), after != nullptr ? &after_counts : nullptr,
              out);
  if (!FLAGS_output_replica_distribution_details) return;
  const auto tables_before = ReplicaCountsByTable(before.placement);
  const auto tables_after = after != nullptr ? ReplicaCountsByTable(after->placement)
                                             : std::map<std::string, std::map<std::string, int>>();
  std::set<std::string> tables;
  for (const auto* m : {&tables_before, &tables_after}) {
    for (const auto& [name, counts] : *m) tables.insert(name);
  }
  const std::map<std::string, int> none;
  for (const std::string& table : tables) {
    *out << "\nReplicas of table " << table << " per tablet server:\n";
    auto b = tables_before.find(table);
    auto a = tables_after.find(table);
    PrintCounts(names, b == tables_before.end() ? none : b->second,
                after == nullptr ? nullptr : (a == tables_after.end() ? &none : &a->second), out);
  }
}

absl::Status Rebalance(const ActionContext& ctx) {
  if (FLAGS_max_moves_per_server < 1) {
    return absl::InvalidArgumentError(
        StrCat("--max_moves_per_server must be at least 1 (got ", FLAGS_max_moves_per_server, ")"));
  }
  const std::string& masters = ctx.args[0];
  const absl::Time start = absl::Now();
  BASALT_ASSIGN_OR_RETURN(ClusterSnapshot before, LoadSnapshot(masters));
  for (const auto& l : before.left_out) {
    *ctx.err << "Leaving out " << l << ": its replicas are neither counted nor moved\n";
  }
  const std::map<std::string, int> counts = ReplicaCounts(before.placement);
  if (IsBalanced(counts)) {
    *ctx.out << "The cluster is balanced (" << Spread(counts) << "); nothing to move\n";
    PrintDistribution(before, nullptr, ctx.out);
    return absl::OkStatus();
  }
  *ctx.err << "Rebalancing " << Spread(counts) << ", at most " << FLAGS_max_moves_per_server
           << " moves at a time per tablet server\n";
  MoveRunner runner(masters, ctx.err);
  MoveScheduler planner(masters, before, &runner);
  planner.Run();  // Returns with no move running.
  const absl::Status& error = planner.error();
  const std::string moved =
      absl::StrFormat("Moved %d replica%s in %.1f s", planner.done(),
                      planner.done() == 1 ? "" : "s", absl::ToDoubleSeconds(absl::Now() - start));
  auto after = LoadSnapshot(masters);
  if (!after.ok()) {
    *ctx.out << moved << "\n";
    PrintDistribution(before, nullptr, ctx.out);
    if (!error.ok()) return error;
    return PrependToStatus(after.status(), "reading the cluster after the moves");
  }
  const std::map<std::string, int> after_counts = ReplicaCounts(after->placement);
  *ctx.out << moved << "; the cluster is "
           << (IsBalanced(after_counts) ? "balanced" : "not balanced") << " ("
           << Spread(after_counts) << ")\n";
  PrintDistribution(before, &*after, ctx.out);
  return error;
}

}  // namespace

Action ClusterRebalanceAction() {
  return {"rebalance",
          "Move replicas until every tablet server holds about as many as the others",
          "Moves replicas until the replica counts of the live tablet servers that are not in "
          "maintenance mode differ by at most one (servers left out are named on stderr). Each "
          "move is what tablet change_config move_replica does: add a replica as VOTER on a less "
          "loaded server that holds none of the tablet, wait until it is a VOTER, move "
          "leadership away if needed, remove the replica on the more loaded server. Moves of "
          "different tablets run in parallel, one per tablet, at most --max_moves_per_server "
          "involving any one server; replicas that do not lead are moved first; a tablet that "
          "is not healthy (not exactly one leader, a replica not RUNNING, a learner, fewer "
          "voters than its replication factor) is never moved. Progress goes to stderr; a "
          "summary (moves done, replicas per server before and after) to stdout. A failed move "
          "stops the rebalancing (the moves running finish) with an error naming the tablet, the "
          "servers and the tablet's replicas then.",
          {MasterAddressesArg()},
          {"max_moves_per_server", "output_replica_distribution_details", "timeout_ms"},
          Rebalance};
}

}  // namespace basalt::tools
