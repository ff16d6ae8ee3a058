#pragma once

// ResourceMetrics: named counters of a scanner or session. Basalt's client does not count
// per-operation resources yet, so the metrics handed out by KuduScanner and KuduSession are
// empty; Increment works for callers that keep their own. Thread-safe.

#include <cstdint>
#include <map>
#include <string>

#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"

namespace kudu {
namespace client {

class KUDU_EXPORT ResourceMetrics {
 public:
  ResourceMetrics();
  ~ResourceMetrics();

  // A copy of every counter.
  std::map<std::string, int64_t> Get() const;
  ATTRIBUTE_DEPRECATED("will become private")
  void Increment(const std::string& name, int64_t amount);
  // 0 for an unknown name.
  int64_t GetMetric(const std::string& name) const;

 private:
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(ResourceMetrics);
};

}  // namespace client
}  // namespace kudu
