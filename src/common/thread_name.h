#pragma once

#include <string_view>

namespace basalt {

// Names the calling thread for `top -H`, `perf report --sort comm` and /proc/<pid>/task/*/comm.
// Linux keeps 15 bytes; a longer name is cut. Threads otherwise inherit their creator's name, so
// a tablet's Raft and WAL threads, started from an RPC handler, would all show as gRPC's.
void SetCurrentThreadName(std::string_view name);

}  // namespace basalt
