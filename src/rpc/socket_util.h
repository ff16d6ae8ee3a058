#pragma once

// Small helpers for the frame transport's socket code (frame_server.cc, frame_channel.cc).

#include <sys/uio.h>

#include <cstddef>
#include <string>

namespace basalt {

// strerror of `err`, thread-safe.
std::string ErrnoText(int err);

// Drops the first `n` bytes (already sent) from the front of an iovec array: *iov and *iovcnt
// move past the vectors sent whole, and the first one left is trimmed.
// REQUIRES: n <= the bytes the array holds.
void AdvanceIov(iovec** iov, int* iovcnt, size_t n);

}  // namespace basalt
