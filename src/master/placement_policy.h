#pragma once

// PlacementPolicy: chooses the tablet servers of a new tablet's replicas (DESIGN.md section 6;
// docs/master.md "Placement"). Power of two choices: for each replica, pick two distinct
// candidates at random among the live servers not yet holding a replica of the tablet and take
// the one with fewer replicas (ties: the first pick). Each choice increases the chosen server's
// load, so placing many tablets in a row spreads them. A tablet never gets two replicas on one
// server. PutLeaderFirst then orders a tablet's replicas so that its first leader (the first
// listed) spreads too.
//
// Not thread-safe; the caller serializes (the catalog manager places under its DDL lock).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/random.h"

namespace basalt {

class PlacementPolicy {
 public:
  struct Candidate {
    std::string uuid;
    int64_t load = 0;  // Replicas assigned to the server.
  };

  // `seed` makes the choices reproducible (tests); production passes a time-derived seed.
  explicit PlacementPolicy(uint64_t seed);

  // Picks `num_replicas` distinct servers from `candidates` for one tablet and adds one to the
  // load of each chosen candidate. INVALID_ARGUMENT if num_replicas < 1 or there are fewer
  // candidates than replicas. Returns the chosen uuids in choice order.
  absl::StatusOr<std::vector<std::string>> PlaceTablet(std::vector<Candidate>* candidates,
                                                       int num_replicas);

  // Moves to the front of a new tablet's `replicas` the one leading the fewest tablets by
  // `leaders` (ties: the earliest), and counts it there. The first replica listed campaigns at
  // once when the tablet starts (CreateTabletRequestPB.config), so it is the tablet's first
  // leader: without this every new tablet was led by the server with the smallest uuid.
  static void PutLeaderFirst(std::vector<std::string>* replicas,
                             std::map<std::string, int64_t>* leaders);

 private:
  Random rng_;
};

}  // namespace basalt
