#include "consensus/transport.h"

#include <utility>

namespace basalt {

void Transport::SendBatch(const std::string& group_id, std::vector<RaftMessage> messages) {
  for (RaftMessage& m : messages) Send(group_id, std::move(m));
}

}  // namespace basalt
