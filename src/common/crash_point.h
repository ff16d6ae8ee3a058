#pragma once

// Crash points: named places in the code where a test can make a real process die at once, as
// `kill -9` would, to check what the next start finds on disk (tests/block_gc_crash_test.cc).
//
//   MaybeCrashAt("block_manager_after_finalize");
//
// does nothing unless the process was started with --fault_crash_at_point naming that point:
// "NAME" dies the first time the point is passed, "NAME:N" the N-th time (N >= 1). The process
// logs one line naming the point, flushes the log and sends itself SIGKILL: no destructor, atexit
// handler or buffered write runs, exactly as if it were killed from outside at that instant.
//
// The points of the code base (grep MaybeCrashAt) are listed in docs/cfile_blocks.md ("Crash
// points"). A point costs a test of the flag for emptiness when no point is armed. The flag is
// read, never cached, so a test may set it before a death test (the flag is set before threads
// start in a daemon, and never changed after).
//
// Thread-safe: the hit count is an atomic, so with "NAME:N" exactly one thread dies at the N-th
// pass, whichever threads pass the point.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <gflags/gflags_declare.h>

DECLARE_string(fault_crash_at_point);

namespace basalt {

// A parsed --fault_crash_at_point value.
struct CrashPointSpec {
  std::string name;
  int64_t hit = 1;  // Die at this pass of the point (1 = the first).
};

// Parses "NAME" or "NAME:N". nullopt for an empty name, a malformed or non-positive N.
std::optional<CrashPointSpec> ParseCrashPointSpec(std::string_view value);

// Kills the process (SIGKILL) if `point` is the one --fault_crash_at_point arms and this is the
// pass it names; otherwise returns at once.
void MaybeCrashAt(std::string_view point);

}  // namespace basalt
