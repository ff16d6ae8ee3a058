#pragma once

// Which data directories a new tablet replica's blocks go to (docs/tserver.md "Data
// directories"). A tablet keeps its blocks in a group of the server's data directories so that
// one failed directory fails only the tablets of its groups; a larger group spreads a tablet's
// I/O over more disks. New groups take the healthy directories with the fewest tablets.

#include <vector>

namespace basalt {

// The group for a new tablet: the `target` directories (0 or more than there are: all of them)
// that have not failed with the fewest tablets (`tablets[i]` for directory i), ties broken by
// position; sorted. Empty if every directory failed. REQUIRES: failed.size() == tablets.size().
std::vector<int> ChooseDataDirGroup(const std::vector<bool>& failed,
                                    const std::vector<int>& tablets, int target);

}  // namespace basalt
