#include "tools/rebalance_plan.h"

#include <algorithm>
#include <tuple>

#include "common/strings.h"

namespace basalt::tools {

namespace {

bool Holds(const TabletPlacement& t, const std::string& uuid) {
  return std::find(t.replicas.begin(), t.replicas.end(), uuid) != t.replicas.end();
}

// The eligible servers ordered by count, ascending (`ascending`) or descending, ties by uuid.
std::vector<std::string> ByCount(const std::map<std::string, int>& counts, bool ascending) {
  std::vector<std::string> order;
  for (const auto& [uuid, n] : counts) order.push_back(uuid);
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return ascending ? counts.at(a) < counts.at(b) : counts.at(a) > counts.at(b);
  });
  return order;
}

// A candidate move and how good it is: larger scores are better, compared in order (rules in the
// header).
struct Candidate {
  const TabletPlacement* tablet = nullptr;
  std::string from;
  std::string to;
  // (count difference of the two servers, the leader is elsewhere, the table's difference).
  std::tuple<int, bool, int> score;
};

// Whether `c` beats `best` (an empty best loses to anything); equal scores keep the smaller
// tablet id, then the candidate found first.
bool Better(const Candidate& c, const Candidate& best) {
  if (best.tablet == nullptr) return true;
  if (c.score != best.score) return c.score > best.score;
  return c.tablet->tablet_id < best.tablet->tablet_id;
}

// The best tablet to move from `from` to `to`, if it beats *best: then *best becomes that move.
void ConsiderPair(const ClusterPlacement& placement,
                  const std::map<std::string, std::map<std::string, int>>& by_table,
                  const MovesInFlight& in_flight, const std::string& from, const std::string& to,
                  int difference, Candidate* best) {
  for (const TabletPlacement& t : placement.tablets) {
    if (!t.unhealthy.empty() || in_flight.tablets.count(t.tablet_id) > 0) continue;
    if (!Holds(t, from) || Holds(t, to)) continue;
    const auto& table = by_table.at(t.table_name);
    Candidate c{&t, from, to, {difference, t.leader_uuid != from, table.at(from) - table.at(to)}};
    if (Better(c, *best)) *best = std::move(c);
  }
}

}  // namespace

TabletPlacement PlaceTablet(const std::string& tablet_id, const std::vector<ReplicaReport>& reports,
                            int replication_factor, const std::set<std::string>& answered) {
  TabletPlacement t;
  t.tablet_id = tablet_id;
  const ReplicaReport* leader = nullptr;
  int leaders = 0;
  for (const auto& r : reports) {
    if (r.status.role() != pb::LEADER) continue;
    ++leaders;
    leader = &r;
  }
  t.table_name = (leader != nullptr ? *leader : reports.front()).status.table_name();
  if (leaders != 1) {
    for (const auto& r : reports) t.replicas.push_back(r.ts_uuid);
    t.unhealthy = StrCat(leaders, " replicas report LEADER (want exactly 1)");
    return t;
  }
  t.leader_uuid = leader->ts_uuid;
  // The members as the leader sees them; the other replicas that report in are evicted ones
  // waiting for their tombstone.
  std::vector<std::string> problems;
  int voters = 0;
  for (const auto& peer : leader->status.config().peers()) {
    t.replicas.push_back(peer.uuid());
    const std::string who = StrCat("replica on ", peer.uuid());
    if (peer.member_type() != pb::RaftPeerPB::VOTER) {
      problems.push_back(StrCat(who, " is a NON_VOTER (a configuration change is under way)"));
      continue;
    }
    ++voters;
    if (answered.count(peer.uuid()) == 0) {
      problems.push_back(StrCat(who, ": its tablet server is not live or did not answer"));
      continue;
    }
    auto it = std::find_if(reports.begin(), reports.end(),
                           [&](const ReplicaReport& r) { return r.ts_uuid == peer.uuid(); });
    if (it == reports.end()) {
      problems.push_back(StrCat(who, " is missing"));
    } else if (it->status.state() != pb::TABLET_RUNNING) {
      problems.push_back(StrCat(who, " is ", pb::TabletStatePB_Name(it->status.state())));
    }
  }
  if (replication_factor == 0) {
    t.unhealthy = "its table is not listed by the master";
  } else if (!problems.empty()) {
    t.unhealthy = problems.front();
  } else if (voters < replication_factor) {
    t.unhealthy = StrCat(voters, " voters, fewer than the replication factor ", replication_factor);
  }
  return t;
}

std::map<std::string, int> ReplicaCounts(const ClusterPlacement& placement) {
  std::map<std::string, int> counts;
  for (const auto& s : placement.servers) counts[s] = 0;
  for (const auto& t : placement.tablets) {
    for (const auto& r : t.replicas) {
      auto it = counts.find(r);
      if (it != counts.end()) ++it->second;
    }
  }
  return counts;
}

std::map<std::string, std::map<std::string, int>> ReplicaCountsByTable(
    const ClusterPlacement& placement) {
  std::map<std::string, std::map<std::string, int>> by_table;
  for (const auto& t : placement.tablets) {
    auto& counts = by_table[t.table_name];
    if (counts.empty()) {
      for (const auto& s : placement.servers) counts[s] = 0;
    }
    for (const auto& r : t.replicas) {
      auto it = counts.find(r);
      if (it != counts.end()) ++it->second;
    }
  }
  return by_table;
}

bool IsBalanced(const std::map<std::string, int>& counts) {
  if (counts.empty()) return true;
  const auto [lo, hi] =
      std::minmax_element(counts.begin(), counts.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
  return hi->second - lo->second <= 1;
}

void MovesInFlight::Add(const ReplicaMove& move) {
  tablets.insert(move.tablet_id);
  ++per_server[move.from];
  ++per_server[move.to];
}

void MovesInFlight::Remove(const ReplicaMove& move) {
  tablets.erase(move.tablet_id);
  for (const std::string* s : {&move.from, &move.to}) {
    if (--per_server[*s] <= 0) per_server.erase(*s);
  }
}

std::optional<ReplicaMove> PickMove(const ClusterPlacement& placement,
                                    const MovesInFlight& in_flight, int max_moves_per_server) {
  const std::map<std::string, int> counts = ReplicaCounts(placement);
  const auto by_table = ReplicaCountsByTable(placement);
  auto busy = [&](const std::string& uuid) {
    auto it = in_flight.per_server.find(uuid);
    return it != in_flight.per_server.end() && it->second >= max_moves_per_server;
  };
  const std::vector<std::string> targets = ByCount(counts, /*ascending=*/true);
  Candidate best;
  for (const std::string& from : ByCount(counts, /*ascending=*/false)) {
    // Sources come most loaded first: once even the least loaded target is too close, or cannot
    // beat the best difference found, neither can the rest.
    const int most = counts.at(from) - counts.at(targets.front());
    if (most < 2 || (best.tablet != nullptr && most < std::get<0>(best.score))) break;
    if (busy(from)) continue;
    for (const std::string& to : targets) {
      const int difference = counts.at(from) - counts.at(to);
      if (difference < 2 || (best.tablet != nullptr && difference < std::get<0>(best.score))) {
        break;
      }
      if (!busy(to)) ConsiderPair(placement, by_table, in_flight, from, to, difference, &best);
    }
  }
  if (best.tablet == nullptr) return std::nullopt;
  return ReplicaMove{best.tablet->tablet_id, best.from, best.to};
}

void ApplyMove(const ReplicaMove& move, ClusterPlacement* placement) {
  for (TabletPlacement& t : placement->tablets) {
    if (t.tablet_id != move.tablet_id) continue;
    auto it = std::find(t.replicas.begin(), t.replicas.end(), move.from);
    if (it == t.replicas.end()) return;
    if (Holds(t, move.to)) {
      t.replicas.erase(it);
    } else {
      *it = move.to;
    }
    if (t.leader_uuid == move.from) t.leader_uuid.clear();
    return;
  }
}

std::vector<std::string> UnhealthyTablets(const ClusterPlacement& placement) {
  const std::set<std::string> eligible(placement.servers.begin(), placement.servers.end());
  std::vector<std::string> out;
  for (const auto& t : placement.tablets) {
    if (t.unhealthy.empty()) continue;
    if (std::none_of(t.replicas.begin(), t.replicas.end(),
                     [&](const std::string& r) { return eligible.count(r) > 0; })) {
      continue;
    }
    out.push_back(StrCat("tablet ", t.tablet_id, " (table ", t.table_name, "): ", t.unhealthy));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace basalt::tools
