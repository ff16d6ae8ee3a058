#pragma once

// Helpers of the WAL tests (log_test.cc, server_log_test.cc): entries whose contents are a
// function of (index, term, size), so any read can be checked without keeping what was written,
// and crash images of a log directory.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/env_memory.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/raft_types.h"

namespace basalt {

inline std::string TestEntryData(uint64_t index, uint64_t term, size_t size) {
  std::string s = StrCat(index, ":", term, ":");
  while (s.size() < size) s.push_back(static_cast<char>('a' + (index * 7 + term + s.size()) % 26));
  return s;
}

// An entry of `size` data bytes; size 0: a size that is itself a function of (index, term).
inline LogEntry MakeTestEntry(uint64_t index, uint64_t term, size_t size = 0) {
  LogEntry e;
  e.index = index;
  e.term = term;
  e.type = index % 5 == 0 ? EntryType::kNoOp : EntryType::kNormal;
  e.timestamp = index * 1000 + term;
  e.data = TestEntryData(index, term, size == 0 ? 16 + (index * 37 + term * 11) % 120 : size);
  return e;
}

inline std::vector<LogEntry> MakeTestEntries(uint64_t first, size_t n, uint64_t term,
                                             size_t size = 0) {
  std::vector<LogEntry> out;
  for (size_t i = 0; i < n; ++i) out.push_back(MakeTestEntry(first + i, term, size));
  return out;
}

// The contents of every file in directory `dir` of `env`, by name (a crash image).
inline std::map<std::string, std::string> FilesIn(Env* env, const std::string& dir) {
  std::map<std::string, std::string> files;
  absl::StatusOr<std::vector<std::string>> names = env->GetChildren(dir);
  BASALT_EXPECT_OK(names);
  if (!names.ok()) return files;
  for (const std::string& name : *names) {
    BASALT_EXPECT_OK(ReadFileToString(env, JoinPath(dir, name), &files[name]));
  }
  return files;
}

// A memory env whose directory `dir` holds `files` (a crash image, maybe altered).
inline std::unique_ptr<MemoryEnv> EnvWithFiles(const std::string& dir,
                                               const std::map<std::string, std::string>& files) {
  auto env = std::make_unique<MemoryEnv>();
  BASALT_EXPECT_OK(env->CreateDirs(dir));
  for (const auto& [name, data] : files) {
    BASALT_EXPECT_OK(WriteStringToFile(env.get(), JoinPath(dir, name), data, false));
  }
  return env;
}

}  // namespace basalt
