#include "tests/chaos_nemesis_util.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/tserver.pb.h"
#include "testing/wait.h"
#include "tests/cli_test_util.h"

namespace basalt::chaos {

Nemesis::Nemesis(ExternalMiniCluster* cluster, NemesisOptions options)
    : cluster_(cluster), options_(std::move(options)), table_name_(options_.table_name) {}

Nemesis::~Nemesis() { JoinBackground(); }

absl::Status Nemesis::Run(absl::Duration duration) {
  absl::Status s = client::ClientBuilder()
                       .add_master_server_addr(cluster_->master_addresses())
                       .default_admin_operation_timeout(std::chrono::seconds(20))
                       .Build(&client_);
  if (!s.ok()) return s;
  {
    std::shared_ptr<client::Table> table;
    s = WaitFor(absl::Seconds(60), "opening the table",
                [&] { return client_->OpenTable(options_.table_name, &table); });
    if (!s.ok()) return s;
    table_id_ = table->id();
  }
  start_ = absl::Now();
  const absl::Time end = start_ + duration;
  Random rnd(options_.seed);
  rnd_ = &rnd;
  auto interval = [&] {
    return options_.min_interval +
           absl::Milliseconds(rnd.Uniform(static_cast<uint64_t>(
               absl::ToInt64Milliseconds(options_.max_interval - options_.min_interval) + 1)));
  };
  absl::Time next_action = absl::Now() + interval();
  for (absl::Time now = absl::Now(); now < end; now = absl::Now()) {
    HealDue(now);
    if (now >= next_action) {
      Act();
      next_action = absl::Now() + interval();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  rnd_ = nullptr;

  // Heal first: an alter or move in flight may be waiting for a daemon to come back.
  if (!cut_daemons_.empty()) {
    Log("heal the network");
    Fail(cluster_->Heal());
    cut_daemons_.clear();
  }
  for (const Fault& f : faults_) Fail(HealFault(f));
  faults_.clear();
  JoinBackground();
  // A rename that failed (timed out) may have happened nevertheless.
  Fail(ResolveTableName(absl::Seconds(60)));
  client_.reset();
  absl::MutexLock l(&mu_);
  return status_;
}

std::vector<std::string> Nemesis::action_log() const {
  absl::MutexLock l(&mu_);
  return log_;
}

std::string Nemesis::table_name() const {
  absl::MutexLock l(&mu_);
  return table_name_;
}

void Nemesis::Log(const std::string& what) {
  const std::string line =
      absl::StrFormat("+%.1fs %s", absl::ToDoubleSeconds(absl::Now() - start_), what);
  LOG(INFO) << "nemesis: " << line;
  absl::MutexLock l(&mu_);
  log_.push_back(line);
}

void Nemesis::Fail(const absl::Status& s) {
  if (s.ok()) return;
  Log(StrCat("ERROR: ", s.ToString()));
  absl::MutexLock l(&mu_);
  if (status_.ok()) status_ = s;
}

absl::Duration Nemesis::FaultLength() {
  return options_.min_fault +
         absl::Milliseconds(rnd_->Uniform(static_cast<uint64_t>(
             absl::ToInt64Milliseconds(options_.max_fault - options_.min_fault) + 1)));
}

void Nemesis::HealDue(absl::Time now) {
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (it->heal_at > now) {
      ++it;
      continue;
    }
    const Fault f = *it;
    it = faults_.erase(it);
    Fail(HealFault(f));
  }
  if (!cut_daemons_.empty() && cut_heal_at_ <= now) {
    Log("heal the network");
    Fail(cluster_->Heal());
    cut_daemons_.clear();
  }
}

absl::Status Nemesis::HealFault(const Fault& f) {
  if (f.kind == FaultKind::kPaused) {
    Log(StrCat("SIGCONT ", f.daemon->name()));
    return f.daemon->Resume();
  }
  Log(StrCat("restart ", f.daemon->name()));
  return f.daemon->Restart();
}

bool Nemesis::Faulted(const ExternalDaemon* d) const {
  for (const Fault& f : faults_) {
    if (f.daemon == d) return true;
  }
  return std::find(cut_daemons_.begin(), cut_daemons_.end(), d) != cut_daemons_.end();
}

std::vector<ExternalDaemon*> Nemesis::Healthy(bool masters) const {
  std::vector<ExternalDaemon*> out;
  const int n = masters ? cluster_->num_masters() : cluster_->num_tablet_servers();
  for (int i = 0; i < n; ++i) {
    ExternalDaemon* d = masters ? cluster_->master(i) : cluster_->tablet_server(i);
    if (!Faulted(d) && d->IsRunning() && !d->IsPaused()) out.push_back(d);
  }
  return out;
}

int Nemesis::FaultedTabletServers() const {
  return cluster_->num_tablet_servers() - static_cast<int>(Healthy(false).size());
}

void Nemesis::Act() {
  // Candidate actions and their weights, given the faults in effect.
  enum Action { kKillTs, kPauseTs, kKillMaster, kPauseMaster, kLoseQuorum, kAlter, kMove, kCut };
  std::vector<std::pair<Action, int>> candidates;
  const int faulted_ts = FaultedTabletServers();
  const bool master_ok = static_cast<int>(Healthy(true).size()) == cluster_->num_masters();
  if (faulted_ts < 2) {
    candidates.push_back({kKillTs, 3});
    candidates.push_back({kPauseTs, 3});
  }
  if (master_ok) {
    candidates.push_back({kKillMaster, 1});
    candidates.push_back({kPauseMaster, 1});
  }
  if (faulted_ts == 0) candidates.push_back({kLoseQuorum, 1});
  // Alters and moves need the master (the CLI asks it for the tablet's replicas).
  if (!background_busy_ && options_.alters && master_ok) candidates.push_back({kAlter, 2});
  if (!background_busy_ && options_.moves && faulted_ts < 2 && master_ok) {
    candidates.push_back({kMove, 1});
  }
  if (options_.partitions && cut_daemons_.empty() && faulted_ts < 2 && master_ok) {
    candidates.push_back({kCut, 3});
  }
  int total = 0;
  for (const auto& c : candidates) total += c.second;
  if (total == 0) return;
  int pick = static_cast<int>(rnd_->Uniform(total));
  Action action = candidates[0].first;
  for (const auto& c : candidates) {
    if (pick < c.second) {
      action = c.first;
      break;
    }
    pick -= c.second;
  }
  auto any = [&](bool masters) {
    std::vector<ExternalDaemon*> healthy = Healthy(masters);
    return healthy.empty() ? nullptr : healthy[rnd_->Uniform(healthy.size())];
  };
  switch (action) {
    case kKillTs:
      if (ExternalDaemon* d = any(false)) Kill(d);
      break;
    case kPauseTs:
      if (ExternalDaemon* d = any(false)) Pause(d);
      break;
    case kKillMaster:
      if (ExternalDaemon* d = any(true)) Kill(d);
      break;
    case kPauseMaster:
      if (ExternalDaemon* d = any(true)) Pause(d);
      break;
    case kLoseQuorum:
      LoseQuorum();
      break;
    case kAlter:
      StartAlter();
      break;
    case kMove:
      StartMove();
      break;
    case kCut:
      Cut();
      break;
  }
}

void Nemesis::Kill(ExternalDaemon* d) {
  const absl::Duration length = FaultLength();
  Log(absl::StrFormat("kill -9 %s (restart in %.1f s)", d->name(), absl::ToDoubleSeconds(length)));
  d->Kill();
  faults_.push_back({d, FaultKind::kKilled, absl::Now() + length});
}

void Nemesis::Pause(ExternalDaemon* d) {
  const absl::Duration length = FaultLength();
  Log(absl::StrFormat("SIGSTOP %s for %.1f s", d->name(), absl::ToDoubleSeconds(length)));
  absl::Status s = d->Pause();
  if (!s.ok()) {
    Fail(s);
    return;
  }
  faults_.push_back({d, FaultKind::kPaused, absl::Now() + length});
}

void Nemesis::LoseQuorum() {
  std::vector<ExternalDaemon*> healthy = Healthy(false);
  if (healthy.size() < 2) return;
  const size_t a = rnd_->Uniform(healthy.size());
  size_t b = rnd_->Uniform(healthy.size() - 1);
  if (b >= a) ++b;
  const absl::Duration length = FaultLength();
  Log(absl::StrFormat("lose a quorum: kill -9 %s and %s (restart in %.1f s)", healthy[a]->name(),
                      healthy[b]->name(), absl::ToDoubleSeconds(length)));
  for (ExternalDaemon* d : {healthy[a], healthy[b]}) {
    d->Kill();
    faults_.push_back({d, FaultKind::kKilled, absl::Now() + length});
  }
}

void Nemesis::Cut() {
  std::vector<const ExternalDaemon*> everyone;
  for (int i = 0; i < cluster_->num_masters(); ++i) everyone.push_back(cluster_->master(i));
  for (int i = 0; i < cluster_->num_tablet_servers(); ++i) {
    everyone.push_back(cluster_->tablet_server(i));
  }
  const absl::Duration length = FaultLength();
  const uint64_t kind = rnd_->Uniform(cluster_->num_masters() > 1 ? 3 : 2);
  ExternalDaemon* d = kind == 2 ? Healthy(true)[rnd_->Uniform(Healthy(true).size())]
                                : Healthy(false)[rnd_->Uniform(Healthy(false).size())];
  absl::Status s;
  if (kind == 1) {
    Log(absl::StrFormat("cut %s's traffic to every other daemon, one way, for %.1f s", d->name(),
                        absl::ToDoubleSeconds(length)));
    for (const ExternalDaemon* other : everyone) {
      if (other != d && s.ok()) s = cluster_->CutOneWay(d, other);
    }
  } else {
    Log(absl::StrFormat("isolate %s from every other daemon for %.1f s", d->name(),
                        absl::ToDoubleSeconds(length)));
    s = cluster_->Isolate(d);
  }
  cut_daemons_.push_back(d);
  cut_heal_at_ = absl::Now() + length;
  Fail(s);
}

absl::Status Nemesis::ResolveTableName(absl::Duration timeout) {
  return WaitFor(timeout, StrCat("the name of table ", table_id_), [&]() -> absl::Status {
    std::vector<std::string> names;
    BASALT_RETURN_IF_ERROR(client_->ListTables(&names));
    for (const std::string& name : names) {
      std::shared_ptr<client::Table> table;
      if (!client_->OpenTable(name, &table).ok() || table->id() != table_id_) continue;
      absl::MutexLock l(&mu_);
      table_name_ = name;
      return absl::OkStatus();
    }
    return absl::NotFoundError("no table has that id");
  });
}

void Nemesis::InBackground(std::function<void()> action) {
  JoinBackground();
  background_busy_ = true;
  background_ = std::thread([this, action = std::move(action)] {
    action();
    background_busy_ = false;
  });
}

void Nemesis::JoinBackground() {
  if (background_.joinable()) background_.join();
}

void Nemesis::StartAlter() {
  const int step = alter_step_++;
  const int n = step / 4;
  const std::string table = table_name();
  auto alterer = client_->NewTableAlterer(table);
  alterer->wait(false);
  std::string what;
  std::string new_name;
  switch (step % 4) {
    case 0:
      alterer->AddColumn(StrCat("c", n))->Type(client::ColumnSchema::INT32)->Nullable();
      what = StrCat("add column c", n);
      break;
    case 1:
      alterer->AlterColumn(StrCat("c", n))->RenameTo(StrCat("r", n));
      what = StrCat("rename column c", n, " to r", n);
      break;
    case 2:
      alterer->DropColumn(StrCat("r", n));
      what = StrCat("drop column r", n);
      break;
    default:
      new_name = StrCat(options_.table_name, "_", n + 1);
      alterer->RenameTo(new_name);
      what = StrCat("rename table ", table, " to ", new_name);
      break;
  }
  Log(StrCat("alter: ", what));
  // The alterer borrows the client, which outlives the background thread (joined first).
  InBackground([this, alterer = std::shared_ptr<client::TableAlterer>(std::move(alterer)), what,
                new_name] {
    absl::Status s = alterer->Alter();
    Log(StrCat("alter: ", what, ": ", s.ok() ? "done" : s.ToString()));
    if (s.ok() && !new_name.empty()) {
      absl::MutexLock l(&mu_);
      table_name_ = new_name;
    } else if (!new_name.empty()) {
      // It may have happened nevertheless: later alters must use the name it has.
      absl::Status found = ResolveTableName(absl::Seconds(10));
      Log(StrCat("alter: the table is now called ", table_name(), found.ok() ? "" : " (unsure)"));
    }
  });
}

void Nemesis::StartMove() {
  // Replicas of the table's tablets on the healthy servers.
  std::vector<ExternalDaemon*> healthy = Healthy(false);
  std::map<std::string, std::vector<ExternalDaemon*>> hosts;  // tablet id → servers
  for (ExternalDaemon* d : healthy) {
    pb::ListTabletsResponsePB listing;
    const int idx = cluster_->TabletServerIndexByUuid(d->uuid());
    if (!cluster_->ListTablets(idx, &listing).ok()) continue;
    for (const auto& t : listing.tablets()) {
      if (t.table_id() == table_id_ && t.state() == pb::TABLET_RUNNING) {
        hosts[t.tablet_id()].push_back(d);
      }
    }
  }
  if (hosts.empty()) return;
  auto it = hosts.begin();
  std::advance(it, rnd_->Uniform(hosts.size()));
  const std::string tablet = it->first;
  ExternalDaemon* from = it->second[rnd_->Uniform(it->second.size())];
  std::vector<ExternalDaemon*> targets;
  for (ExternalDaemon* d : healthy) {
    if (std::find(it->second.begin(), it->second.end(), d) == it->second.end()) {
      targets.push_back(d);
    }
  }
  if (targets.empty()) return;
  ExternalDaemon* to = targets[rnd_->Uniform(targets.size())];
  const std::string what =
      StrCat("move tablet ", tablet, "'s replica from ", from->name(), " to ", to->name());
  Log(what);
  std::vector<std::string> args = {
      "tablet", "change_config", "move_replica", cluster_->master_addresses(),
      tablet,   from->uuid(),    to->uuid(),     "--timeout_ms=20000"};
  InBackground([this, args, what] {
    CliResult r = RunBasalt(args, options_.scratch_dir);
    Log(StrCat(what, ": ", r.rc == 0 ? "done" : StrCat("failed (rc ", r.rc, "): ", r.err)));
  });
}

}  // namespace basalt::chaos
