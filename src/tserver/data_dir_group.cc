#include "tserver/data_dir_group.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

namespace basalt {

std::vector<int> ChooseDataDirGroup(const std::vector<bool>& failed,
                                    const std::vector<int>& tablets, int target) {
  CHECK_EQ(failed.size(), tablets.size());
  std::vector<std::pair<int, int>> healthy;  // (tablets, position)
  for (size_t i = 0; i < failed.size(); ++i) {
    if (!failed[i]) healthy.emplace_back(tablets[i], static_cast<int>(i));
  }
  std::sort(healthy.begin(), healthy.end());
  const size_t n = target <= 0 ? healthy.size() : std::min(healthy.size(), size_t(target));
  std::vector<int> group;
  for (size_t i = 0; i < n; ++i) group.push_back(healthy[i].second);
  std::sort(group.begin(), group.end());
  return group;
}

}  // namespace basalt
