#include "common/fd_util.h"

#include <unistd.h>

#include <cerrno>

namespace basalt {

ssize_t ReadRetryingEintr(int fd, void* buf, size_t n) {
  ssize_t r;
  do {
    r = read(fd, buf, n);
  } while (r < 0 && errno == EINTR);
  return r;
}

int ReadIntFromPipe(int fd) {
  int value = 0;
  const ssize_t n = ReadRetryingEintr(fd, &value, sizeof(value));
  return n == static_cast<ssize_t>(sizeof(value)) ? value : 0;
}

}  // namespace basalt
