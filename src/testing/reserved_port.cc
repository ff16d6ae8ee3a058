#include "testing/reserved_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/env.h"
#include "common/strings.h"

namespace basalt {

absl::StatusOr<ReservedPort> ReservedPort::Reserve(const std::string& host) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(StrCat("not an IPv4 address: \"", host, "\""));
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return PosixError("socket", errno);
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    return PosixError(StrCat("reserving a port on ", host), err);
  }
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    return PosixError("getsockname", err);
  }
  return ReservedPort(fd, host, ntohs(addr.sin_port));
}

ReservedPort::ReservedPort(int fd, std::string host, uint16_t port)
    : fd_(fd), host_(std::move(host)), port_(port) {}

ReservedPort::ReservedPort(ReservedPort&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      host_(std::move(other.host_)),
      port_(std::exchange(other.port_, 0)) {}

ReservedPort& ReservedPort::operator=(ReservedPort&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
    host_ = std::move(other.host_);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

ReservedPort::~ReservedPort() { Release(); }

void ReservedPort::Release() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string ReservedPort::address() const { return StrCat(host_, ":", port_); }

}  // namespace basalt
