#include "consensus/raft_config.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "common/coding.h"
#include "common/strings.h"

namespace basalt {
namespace {

// First byte of an encoded configuration. Version 2 adds the promote list; a configuration
// without one is still written as version 1 (the same bytes as before it existed).
constexpr uint8_t kConfigFormatVersion = 1;
constexpr uint8_t kConfigFormatVersionWithPromote = 2;

bool Contains(const std::vector<PeerId>& sorted, const PeerId& peer) {
  return std::binary_search(sorted.begin(), sorted.end(), peer);
}

void SortUnique(std::vector<PeerId>* ids) {
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
}

void Insert(std::vector<PeerId>* sorted, const PeerId& peer) {
  sorted->insert(std::lower_bound(sorted->begin(), sorted->end(), peer), peer);
}

void Erase(std::vector<PeerId>* sorted, const PeerId& peer) {
  auto it = std::lower_bound(sorted->begin(), sorted->end(), peer);
  if (it != sorted->end() && *it == peer) sorted->erase(it);
}

void PutIds(std::string* dst, const std::vector<PeerId>& ids) {
  PutVarint32(dst, static_cast<uint32_t>(ids.size()));
  for (const PeerId& id : ids) PutLengthPrefixed(dst, id);
}

bool GetIds(std::string_view* input, std::vector<PeerId>* ids) {
  uint32_t n = 0;
  if (!GetVarint32(input, &n) || n > input->size()) return false;
  ids->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view id;
    if (!GetLengthPrefixed(input, &id)) return false;
    ids->emplace_back(id);
  }
  return true;
}

}  // namespace

bool IsVoter(const RaftConfig& config, const PeerId& peer) { return Contains(config.voters, peer); }

bool IsLearner(const RaftConfig& config, const PeerId& peer) {
  return Contains(config.learners, peer);
}

absl::Status ValidateConfig(const RaftConfig& config) {
  if (config.voters.empty()) return absl::InvalidArgumentError("configuration has no voters");
  for (const auto* ids : {&config.voters, &config.learners}) {
    if (!std::is_sorted(ids->begin(), ids->end()) ||
        std::adjacent_find(ids->begin(), ids->end()) != ids->end()) {
      return absl::InvalidArgumentError(
          StrCat("configuration lists are not sorted and unique: ", ConfigToString(config)));
    }
    for (const PeerId& id : *ids) {
      if (id.empty()) return absl::InvalidArgumentError("configuration has an empty peer id");
    }
  }
  for (const PeerId& id : config.learners) {
    if (Contains(config.voters, id)) {
      return absl::InvalidArgumentError(StrCat("peer ", id, " is both voter and learner"));
    }
  }
  if (!std::is_sorted(config.promote.begin(), config.promote.end()) ||
      std::adjacent_find(config.promote.begin(), config.promote.end()) != config.promote.end()) {
    return absl::InvalidArgumentError("promote list is not sorted and unique");
  }
  for (const PeerId& id : config.promote) {
    if (!Contains(config.learners, id)) {
      return absl::InvalidArgumentError(StrCat("peer ", id, " is to be promoted but no learner"));
    }
  }
  return absl::OkStatus();
}

RaftConfig NormalizeConfig(RaftConfig config) {
  SortUnique(&config.voters);
  SortUnique(&config.learners);
  SortUnique(&config.promote);
  return config;
}

absl::StatusOr<RaftConfig> ApplyConfigChange(const RaftConfig& config, const ConfigChange& change) {
  RaftConfig next = config;
  switch (change.type) {
    case ConfigChange::Type::kAddLearner:
      if (change.peer.empty() || IsMember(config, change.peer)) {
        return absl::FailedPreconditionError(
            StrCat("cannot add learner '", change.peer, "': empty id or already a member"));
      }
      Insert(&next.learners, change.peer);
      if (change.promote) Insert(&next.promote, change.peer);
      return next;
    case ConfigChange::Type::kPromoteLearner:
      if (!IsLearner(config, change.peer)) {
        return absl::FailedPreconditionError(
            StrCat("cannot promote ", change.peer, ": not a learner"));
      }
      Erase(&next.learners, change.peer);
      Erase(&next.promote, change.peer);
      Insert(&next.voters, change.peer);
      return next;
    case ConfigChange::Type::kRemovePeer:
      if (!IsMember(config, change.peer)) {
        return absl::FailedPreconditionError(
            StrCat("cannot remove ", change.peer, ": not a member"));
      }
      if (IsVoter(config, change.peer) && config.voters.size() == 1) {
        return absl::FailedPreconditionError("cannot remove the last voter");
      }
      Erase(&next.voters, change.peer);
      Erase(&next.learners, change.peer);
      Erase(&next.promote, change.peer);
      return next;
    case ConfigChange::Type::kDemoteVoter:
      if (!IsVoter(config, change.peer)) {
        return absl::FailedPreconditionError(
            StrCat("cannot demote ", change.peer, ": not a voter"));
      }
      if (config.voters.size() == 1) {
        return absl::FailedPreconditionError("cannot demote the last voter");
      }
      Erase(&next.voters, change.peer);
      Insert(&next.learners, change.peer);
      return next;
  }
  return absl::InvalidArgumentError("unknown config change type");
}

std::string EncodeConfig(const RaftConfig& config) {
  std::string out;
  const bool promote = !config.promote.empty();
  out.push_back(
      static_cast<char>(promote ? kConfigFormatVersionWithPromote : kConfigFormatVersion));
  PutIds(&out, config.voters);
  PutIds(&out, config.learners);
  if (promote) PutIds(&out, config.promote);
  return out;
}

absl::StatusOr<RaftConfig> DecodeConfig(std::string_view data) {
  const uint8_t version = data.empty() ? 0 : static_cast<uint8_t>(data[0]);
  if (version != kConfigFormatVersion && version != kConfigFormatVersionWithPromote) {
    return absl::DataLossError("config entry: missing or unknown format version byte");
  }
  data.remove_prefix(1);
  RaftConfig config;
  if (!GetIds(&data, &config.voters) || !GetIds(&data, &config.learners) ||
      (version == kConfigFormatVersionWithPromote && !GetIds(&data, &config.promote))) {
    return absl::DataLossError("config entry: truncated peer list");
  }
  if (version == kConfigFormatVersionWithPromote && config.promote.empty()) {
    return absl::DataLossError("config entry: version 2 with an empty promote list");
  }
  if (!data.empty()) return absl::DataLossError("config entry: trailing bytes");
  absl::Status s = ValidateConfig(config);
  if (!s.ok()) return absl::DataLossError(StrCat("config entry: ", s.message()));
  return config;
}

std::string ConfigToString(const RaftConfig& config) {
  return StrCat(
      "voters={", absl::StrJoin(config.voters, ","), "} learners={",
      absl::StrJoin(config.learners, ","), "}",
      config.promote.empty() ? "" : StrCat(" promote={", absl::StrJoin(config.promote, ","), "}"));
}

}  // namespace basalt
