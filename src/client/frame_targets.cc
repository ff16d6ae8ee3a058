#include "client/frame_targets.h"

#include <utility>

#include <glog/logging.h>
#include <google/protobuf/message_lite.h>

#include "absl/time/clock.h"
#include "rpc/frame_channel.h"

namespace basalt::client::internal {

FrameTargets::~FrameTargets() = default;

void FrameTargets::Learn(const std::string& address, const std::string& frame_address) {
  if (!enabled_) return;
  absl::MutexLock l(&mu_);
  if (frame_address.empty()) {
    targets_.erase(address);
    return;
  }
  Target& t = targets_[address];
  if (t.frame_address == frame_address) return;
  t.frame_address = frame_address;
  t.channel = std::make_shared<FrameChannel>(frame_address, /*max_idle=*/16, reply_spin_);
  t.grpc_only_until = absl::InfinitePast();
}

std::optional<absl::Status> FrameTargets::Call(const std::string& address, int method,
                                               const google::protobuf::MessageLite& request,
                                               absl::Time deadline, std::string* response,
                                               FrameCancel* cancel) {
  if (!enabled_) return std::nullopt;
  std::shared_ptr<FrameChannel> channel;
  {
    absl::MutexLock l(&mu_);
    auto it = targets_.find(address);
    if (it == targets_.end() || absl::Now() < it->second.grpc_only_until) return std::nullopt;
    channel = it->second.channel;
  }
  std::string bytes;
  if (!request.SerializeToString(&bytes)) {
    return absl::InternalError("the request cannot be serialized");
  }
  absl::Status s = channel->Call(static_cast<uint8_t>(method), bytes, deadline, response, cancel);
  // Nothing was sent (refused, unreachable, or no connection within FrameChannel::
  // kConnectTimeout): this server's calls go over gRPC for a while, and this one too unless its
  // time is up.
  if (s.GetPayload(kFrameConnectFailedUrl).has_value()) {
    // At most one line per server per kRetryAfter: the port is not tried again before.
    LOG(WARNING) << "tablet server " << address
                 << ": its frame RPC port cannot be connected; calls go over gRPC for "
                 << absl::FormatDuration(kRetryAfter) << ": " << s;
    {
      absl::MutexLock l(&mu_);
      auto it = targets_.find(address);
      if (it != targets_.end() && it->second.channel == channel) {
        it->second.grpc_only_until = absl::Now() + kRetryAfter;
      }
    }
    if (absl::Now() < deadline) return std::nullopt;
  }
  return s;
}

}  // namespace basalt::client::internal
