#include "master/placement_policy.h"

#include <algorithm>
#include <utility>

#include "common/strings.h"

namespace basalt {

PlacementPolicy::PlacementPolicy(uint64_t seed) : rng_(seed) {}

absl::StatusOr<std::vector<std::string>> PlacementPolicy::PlaceTablet(
    std::vector<Candidate>* candidates, int num_replicas) {
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(StrCat("cannot place ", num_replicas, " replicas"));
  }
  if (static_cast<size_t>(num_replicas) > candidates->size()) {
    return absl::InvalidArgumentError(StrCat("cannot place ", num_replicas, " replicas on ",
                                             candidates->size(), " live tablet servers"));
  }
  // Indexes of the candidates still free for this tablet; chosen ones are swapped out.
  std::vector<size_t> free(candidates->size());
  for (size_t i = 0; i < free.size(); ++i) free[i] = i;
  std::vector<std::string> chosen;
  for (int r = 0; r < num_replicas; ++r) {
    size_t pos = rng_.Uniform(free.size());
    if (free.size() > 1) {
      size_t other = rng_.Uniform(free.size() - 1);
      if (other >= pos) ++other;  // Distinct from the first pick.
      if ((*candidates)[free[other]].load < (*candidates)[free[pos]].load) pos = other;
    }
    Candidate& c = (*candidates)[free[pos]];
    ++c.load;
    chosen.push_back(c.uuid);
    free[pos] = free.back();
    free.pop_back();
  }
  return chosen;
}

void PlacementPolicy::PutLeaderFirst(std::vector<std::string>* replicas,
                                     std::map<std::string, int64_t>* leaders) {
  if (replicas->empty()) return;
  auto fewest = replicas->begin();
  for (auto it = replicas->begin(); it != replicas->end(); ++it) {
    if ((*leaders)[*it] < (*leaders)[*fewest]) fewest = it;
  }
  std::rotate(replicas->begin(), fewest, fewest + 1);
  ++(*leaders)[replicas->front()];
}

}  // namespace basalt
