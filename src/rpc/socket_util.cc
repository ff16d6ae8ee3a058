#include "rpc/socket_util.h"

#include <cstring>

namespace basalt {

std::string ErrnoText(int err) {
  char buf[128];
  // GNU strerror_r returns a pointer to the message (possibly not `buf`).
  return strerror_r(err, buf, sizeof(buf));
}

void AdvanceIov(iovec** iov, int* iovcnt, size_t n) {
  while (*iovcnt > 0 && n >= (*iov)->iov_len) {
    n -= (*iov)->iov_len;
    ++*iov;
    --*iovcnt;
  }
  if (n > 0) {
    (*iov)->iov_base = static_cast<char*>((*iov)->iov_base) + n;
    (*iov)->iov_len -= n;
  }
}

}  // namespace basalt
