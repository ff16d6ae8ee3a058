#include "consensus/transport.h"

#include <utility>

#include "common/strings.h"

namespace basalt {

void Transport::SendBatch(const std::string& group_id, std::vector<RaftMessage> messages) {
  for (RaftMessage& m : messages) Send(group_id, std::move(m));
}

absl::Status Transport::Register(const std::string& group_id, const PeerId& peer,
                                 RaftMessageHandler handler, RaftBatchHandler) {
  return Register(group_id, peer, std::move(handler));
}

absl::Status Transport::RegisterVoter(const std::string& group_id, const PeerId&,
                                      RaftMessageHandler) {
  return absl::UnimplementedError(StrCat("this transport cannot register a voter for ", group_id));
}

}  // namespace basalt
