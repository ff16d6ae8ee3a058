#pragma once

// Small helpers over raw POSIX file descriptors (pipes between a process and the children it
// forks), for the code that cannot go through Env: the daemon launchers of the test harness
// (testing/external_daemon.cc) and of `basalt local` (tools/local_cluster.cc).
// Thread-safe (they keep no state).

#include <sys/types.h>

#include <cstddef>

namespace basalt {

// One read(2) of up to `n` bytes into `buf`, retried while it is interrupted by a signal
// (EINTR). Returns what read(2) returns: bytes read, 0 at EOF, -1 on another error (errno set).
ssize_t ReadRetryingEintr(int fd, void* buf, size_t n);

// Reads one int that another process wrote to the pipe `fd` with a single write(2) (atomic,
// since sizeof(int) < PIPE_BUF), retrying on EINTR. Returns the value, or 0 at EOF (the writer
// closed the pipe without writing), on a short read or on an error.
int ReadIntFromPipe(int fd);

}  // namespace basalt
