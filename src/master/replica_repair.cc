#include "master/replica_repair.h"

#include <algorithm>

#include "common/strings.h"

namespace basalt {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::optional<RepairChange> DecideRepair(const RepairInput& in, PlacementPolicy* policy) {
  using Kind = RepairChange::Kind;
  auto failed = [&](const std::string& p) { return p != in.leader && in.failed.contains(p); };
  std::vector<std::string> healthy_voters;
  std::vector<std::string> failed_voters;
  for (const std::string& v : in.voters) (failed(v) ? failed_voters : healthy_voters).push_back(v);
  std::vector<std::string> healthy_learners;
  for (const std::string& l : in.learners) {
    // A failed learner helps nobody: it goes first.
    if (failed(l)) return RepairChange{Kind::kRemove, l, "the learner failed"};
    healthy_learners.push_back(l);
  }
  const int have = static_cast<int>(healthy_voters.size());
  const int want = in.num_replicas;
  // Enough healthy voters: drop failed ones (their replacements are in), then any learner this
  // master added is surplus only if it is healthy and unneeded, which operators may intend: kept.
  if (have >= want) {
    if (!failed_voters.empty()) {
      return RepairChange{Kind::kRemove, failed_voters.front(),
                          StrCat("the voter failed and ", have, " healthy voters remain")};
    }
    return std::nullopt;
  }
  // Too few healthy voters. A learner on the way is promoted (the leader does it once the
  // learner caught up; this covers a leader that changed meanwhile and lost that intent).
  if (!healthy_learners.empty()) {
    return RepairChange{Kind::kPromoteLearner, healthy_learners.front(),
                        StrCat("only ", have, " healthy voters of ", want)};
  }
  if (!in.prepare_replacement_before_eviction && !failed_voters.empty() &&
      static_cast<int>(in.voters.size()) > 1) {
    return RepairChange{Kind::kRemove, failed_voters.front(),
                        "the voter failed (evicted before its replacement is added)"};
  }
  // At most one replacement at a time: this step is reached only with no learner in the group.
  std::vector<PlacementPolicy::Candidate> candidates;
  for (const PlacementPolicy::Candidate& c : in.candidates) {
    if (!Contains(in.voters, c.uuid) && !Contains(in.learners, c.uuid)) candidates.push_back(c);
  }
  if (candidates.empty()) return std::nullopt;
  absl::StatusOr<std::vector<std::string>> chosen = policy->PlaceTablet(&candidates, 1);
  if (!chosen.ok() || chosen->empty()) return std::nullopt;
  return RepairChange{Kind::kAddLearner, chosen->front(),
                      StrCat("only ", have, " healthy voters of ", want)};
}

}  // namespace basalt
