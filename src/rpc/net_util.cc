#include "rpc/net_util.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "proto/common.pb.h"

namespace basalt {

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return StrCat("[", host, "]:", port);
  return StrCat(host, ":", port);
}

void HostPort::ToPB(pb::HostPortPB* pb) const {
  pb->set_host(host);
  pb->set_port(port);
}

HostPort HostPort::FromPB(const pb::HostPortPB& pb) {
  return HostPort{pb.host(), static_cast<uint16_t>(pb.port())};
}

absl::StatusOr<HostPort> ParseHostPort(std::string_view s, uint16_t default_port) {
  std::string_view in = s;
  while (!in.empty() && (in.front() == ' ' || in.front() == '\t')) in.remove_prefix(1);
  while (!in.empty() && (in.back() == ' ' || in.back() == '\t')) in.remove_suffix(1);
  HostPort hp;
  hp.port = default_port;
  std::string_view port_str;
  if (!in.empty() && in.front() == '[') {
    in.remove_prefix(1);
    size_t close = in.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("bad address '", s, "': missing ']'"));
    }
    hp.host = std::string(in.substr(0, close));
    in.remove_prefix(close + 1);
    if (!in.empty()) {
      if (in.front() != ':') return absl::InvalidArgumentError(StrCat("bad address '", s, "'"));
      in.remove_prefix(1);
      port_str = in;
      if (port_str.empty()) {
        return absl::InvalidArgumentError(StrCat("bad address '", s, "': empty port"));
      }
    }
  } else {
    size_t colon = in.rfind(':');
    if (colon != std::string_view::npos && in.find(':') != colon) {
      return absl::InvalidArgumentError(
          StrCat("bad address '", s, "': put IPv6 addresses in brackets"));
    }
    if (colon == std::string_view::npos) {
      hp.host = std::string(in);
    } else {
      hp.host = std::string(in.substr(0, colon));
      port_str = in.substr(colon + 1);
      if (port_str.empty()) {
        return absl::InvalidArgumentError(StrCat("bad address '", s, "': empty port"));
      }
    }
  }
  if (hp.host.empty()) {
    return absl::InvalidArgumentError(StrCat("bad address '", s, "': empty host"));
  }
  if (!port_str.empty()) {
    uint32_t port = 0;
    if (!absl::SimpleAtoi(ToAbsl(port_str), &port) || port > 65535) {
      return absl::InvalidArgumentError(
          StrCat("bad address '", s, "': port must be a number in 0..65535"));
    }
    hp.port = static_cast<uint16_t>(port);
  }
  return hp;
}

absl::StatusOr<std::vector<HostPort>> ParseHostPortList(std::string_view s, uint16_t default_port) {
  std::vector<HostPort> out;
  for (absl::string_view part : absl::StrSplit(ToAbsl(s), ',', absl::SkipWhitespace())) {
    absl::StatusOr<HostPort> hp =
        ParseHostPort(std::string_view(part.data(), part.size()), default_port);
    if (!hp.ok()) return hp.status();
    out.push_back(*std::move(hp));
  }
  if (out.empty()) return absl::InvalidArgumentError("empty address list");
  return out;
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxRpcMessageBytes);
  args.SetMaxSendMessageSize(kMaxRpcMessageBytes);
  // The minimum is also the timeout of one connection attempt.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

void ConfigureServerBuilder(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(kMaxRpcMessageBytes);
  builder->SetMaxSendMessageSize(kMaxRpcMessageBytes);
  // The synchronous server keeps at most max_pollers idle threads: a thread that finishes a call
  // while that many poll exits, and one is started again when the next calls come. gRPC's
  // default (2) made a server answering a few concurrent clients create and destroy a thread
  // every few calls; idle pollers cost only a blocked thread each.
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 16);
}

}  // namespace basalt
