#include "tablet/compaction_policy.h"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <tuple>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "tablet/rowset_tree.h"

DEFINE_int32(tablet_compaction_budget_mb, 128,
             "Limits the input of one rowset merge compaction to this many megabytes.");
DEFINE_double(tablet_compaction_minimum_improvement, 0.01,
              "Skips a rowset merge compaction that would lower the average number of rowsets a "
              "key lookup consults by less than this.");

namespace basalt {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// Knapsack capacity in weight units: the budget is split into at most this many units, so the
// search stays O(n^2 * kMaxBudgetUnits) whatever the budget.
constexpr uint64_t kMaxBudgetUnits = 1024;
// Differences of qualities below this are floating-point noise.
constexpr double kEpsilon = 1e-9;

// Estimates how far a key lies between a rowset's min and max key, in [0, 1], from the first 8
// bytes after the common prefix of min and max (as Kudu does). Degenerate ranges (min and max
// equal in those bytes) put every key below max at 0 and max at 1.
class KeyInterpolator {
 public:
  KeyInterpolator(std::string_view min_key, std::string_view max_key) : max_key_(max_key) {
    const size_t limit = std::min(min_key.size(), max_key.size());
    while (common_ < limit && min_key[common_] == max_key[common_]) ++common_;
    min_int_ = Tail(min_key);
    max_int_ = Tail(max_key);
  }

  // REQUIRES: min_key <= key <= max_key.
  double Position(std::string_view key) const {
    if (min_int_ == max_int_) return key == max_key_ ? 1.0 : 0.0;
    const uint64_t t = std::clamp(Tail(key), min_int_, max_int_);
    return static_cast<double>(t - min_int_) / static_cast<double>(max_int_ - min_int_);
  }

 private:
  uint64_t Tail(std::string_view key) const {
    return KeyPrefix64(key.substr(std::min(common_, key.size())));
  }

  std::string_view max_key_;
  size_t common_ = 0;
  uint64_t min_int_ = 0;
  uint64_t max_int_ = 0;
};

// A rowset boundary for the CDF sweep.
struct Endpoint {
  std::string_view key;
  bool is_stop;  // Starts sort before stops at the same key: both rowsets contain the key.
  int rowset;
};

// The sweep of ComputeRowSetKeySpans over the rowset boundaries in key order. Between two
// boundary keys, each active rowset (one whose range contains the step) contributes its bytes
// times the fraction of its range the step covers, and every active rowset's cdf_max advances by
// the step's bytes. What a rowset has not contributed by its max key (rounding, degenerate ranges)
// is placed at that key, inside every rowset that contains the key.
class CdfSweep {
 public:
  CdfSweep(std::span<const CompactionCandidate> rowsets, std::vector<KeyInterpolator> interp)
      : rowsets_(rowsets),
        interp_(std::move(interp)),
        spans_(rowsets.size()),
        done_(rowsets.size(), 0.0) {}

  // Processes all the endpoints at one key (sorted: starts first).
  void ProcessKey(std::span<const Endpoint> group) {
    double step = 0;
    for (int r : active_) {
      const double pos = std::max(done_[r], interp_[r].Position(group[0].key));
      step += Size(r) * (pos - done_[r]);
      done_[r] = pos;
    }
    Advance(step);
    for (const Endpoint& e : group) {
      if (e.is_stop) continue;
      spans_[e.rowset] = {total_, total_};
      active_.push_back(e.rowset);
    }
    double rest = 0;
    for (const Endpoint& e : group) {
      if (e.is_stop) rest += Size(e.rowset) * (1.0 - done_[e.rowset]);
    }
    Advance(rest);
    for (const Endpoint& e : group) {
      if (e.is_stop) active_.erase(std::find(active_.begin(), active_.end(), e.rowset));
    }
  }

  // Returns the spans normalized to [0, 1].
  std::vector<RowSetKeySpan> Finish() {
    if (total_ > 0) {
      for (RowSetKeySpan& s : spans_) {
        s.cdf_min = std::min(s.cdf_min / total_, 1.0);
        s.cdf_max = std::min(s.cdf_max / total_, 1.0);
      }
    }
    return std::move(spans_);
  }

 private:
  // Empty rowsets count as one byte, so every rowset has a place in the CDF.
  double Size(int r) const {
    return static_cast<double>(std::max<uint64_t>(rowsets_[r].size_bytes, 1));
  }
  void Advance(double bytes) {
    total_ += bytes;
    for (int r : active_) spans_[r].cdf_max += bytes;
  }

  const std::span<const CompactionCandidate> rowsets_;
  const std::vector<KeyInterpolator> interp_;
  std::vector<RowSetKeySpan> spans_;  // Unnormalized (bytes) until Finish().
  std::vector<double> done_;          // Fraction of each rowset's bytes placed so far.
  std::vector<int> active_;
  double total_ = 0;
};

// Indices of `c` sorted by (min key, max key, id): the canonical order.
std::vector<int> SortByMin(std::span<const CompactionCandidate> c) {
  std::vector<int> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::tie(c[a].min_key, c[a].max_key, c[a].id) <
           std::tie(c[b].min_key, c[b].max_key, c[b].id);
  });
  return order;
}

std::vector<int> SortByMax(std::span<const CompactionCandidate> c) {
  std::vector<int> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::tie(c[a].max_key, c[a].min_key, c[a].id) <
           std::tie(c[b].max_key, c[b].min_key, c[b].id);
  });
  return order;
}

}  // namespace

std::vector<RowSetKeySpan> ComputeRowSetKeySpans(std::span<const CompactionCandidate> rowsets) {
  const int n = static_cast<int>(rowsets.size());
  std::vector<Endpoint> endpoints;
  endpoints.reserve(2 * n);
  std::vector<KeyInterpolator> interp;
  interp.reserve(n);
  for (int i = 0; i < n; ++i) {
    DCHECK_LE(rowsets[i].min_key, rowsets[i].max_key);
    endpoints.push_back({rowsets[i].min_key, false, i});
    endpoints.push_back({rowsets[i].max_key, true, i});
    interp.emplace_back(rowsets[i].min_key, rowsets[i].max_key);
  }
  std::sort(endpoints.begin(), endpoints.end(), [](const Endpoint& a, const Endpoint& b) {
    return std::tie(a.key, a.is_stop, a.rowset) < std::tie(b.key, b.is_stop, b.rowset);
  });
  CdfSweep sweep(rowsets, std::move(interp));
  for (size_t e = 0; e < endpoints.size();) {
    size_t g = e;
    while (g < endpoints.size() && endpoints[g].key == endpoints[e].key) ++g;
    sweep.ProcessKey(std::span<const Endpoint>(&endpoints[e], g - e));
    e = g;
  }
  return sweep.Finish();
}

double AverageRowSetHeight(std::span<const CompactionCandidate> rowsets) {
  double sum = 0;
  for (const RowSetKeySpan& s : ComputeRowSetKeySpans(rowsets)) sum += s.width();
  return sum;
}

CompactionPolicyOptions CompactionPolicyOptions::FromFlags() {
  CompactionPolicyOptions o;
  o.budget_bytes = static_cast<uint64_t>(std::max(FLAGS_tablet_compaction_budget_mb, 0)) * kMiB;
  o.minimum_improvement = FLAGS_tablet_compaction_minimum_improvement;
  return o;
}

namespace {

// One run of the search (see BudgetedCompactionPolicy): the state shared by all left edges.
class Search {
 public:
  // Sets of quality below `threshold` are not of interest (they only serve as pruning bounds).
  Search(std::span<const CompactionCandidate> c, uint64_t budget_bytes, double threshold)
      : c_(c),
        spans_(ComputeRowSetKeySpans(c)),
        by_min_(SortByMin(c)),
        by_max_(SortByMax(c)),
        best_quality_(std::max(0.0, threshold - 2 * kEpsilon)) {
    const uint64_t unit = std::max(kMiB, (budget_bytes + kMaxBudgetUnits - 1) / kMaxBudgetUnits);
    capacity_ = static_cast<int>(budget_bytes / unit);
    weights_.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      weights_[i] = std::max<uint64_t>(1, (c[i].size_bytes + unit - 1) / unit);
    }
    // For the fractional-knapsack bounds: the most width per unit of weight first.
    by_density_.resize(c.size());
    std::iota(by_density_.begin(), by_density_.end(), 0);
    std::sort(by_density_.begin(), by_density_.end(), [&](int a, int b) {
      const double da = spans_[a].width() / weights_[a];
      const double db = spans_[b].width() / weights_[b];
      return da != db ? da > db : c_[a].id < c_[b].id;
    });
  }

  // Returns the chosen indices: the best set of quality above the threshold, or none.
  std::vector<int> Run() {
    if (capacity_ == 0) return {};
    for (size_t k = 0; k < by_min_.size(); ++k) {
      // A later left edge with the same min key only considers a subset of the unions.
      if (k > 0 && c_[by_min_[k]].min_key == c_[by_min_[k - 1]].min_key) continue;
      TryLeftEdge(by_min_[k]);
    }
    return best_set_;
  }

  const std::vector<RowSetKeySpan>& spans() const { return spans_; }

 private:
  bool RightOf(int i, int left) const { return c_[i].min_key >= c_[left].min_key; }

  // The best width sum any set of rowsets right of `left` can reach within the budget (fractional
  // knapsack, an upper bound of the 0/1 one).
  double UpperBound(int left) const {
    double value = 0;
    uint64_t room = capacity_;
    for (int i : by_density_) {
      if (room == 0) break;
      if (!RightOf(i, left) || weights_[i] > static_cast<uint64_t>(capacity_)) continue;
      const uint64_t take = std::min(room, weights_[i]);
      value += spans_[i].width() * static_cast<double>(take) / static_cast<double>(weights_[i]);
      room -= take;
    }
    return value;
  }

  void TryLeftEdge(int left) {
    const double bound = UpperBound(left);
    if (bound - spans_[left].width() <= best_quality_ + kEpsilon) return;
    dp_.assign(capacity_ + 1, 0.0);
    items_.clear();
    take_.clear();
    for (int i : by_max_) {
      if (!RightOf(i, left)) continue;
      const double union_width =
          std::max(spans_[left].cdf_max, spans_[i].cdf_max) - spans_[left].cdf_min;
      if (bound - union_width <= best_quality_ + kEpsilon) break;  // Only grows from here.
      AddItem(i);
      const double quality = dp_[capacity_] - union_width;
      if (quality > best_quality_ + kEpsilon) {
        best_quality_ = quality;
        best_set_ = Reconstruct();
      }
    }
  }

  // Adds rowset `i` to the incremental 0/1 knapsack, recording its decisions.
  void AddItem(int i) {
    const int w = static_cast<int>(std::min<uint64_t>(weights_[i], capacity_ + 1));
    items_.push_back(i);
    take_.resize(items_.size() * (capacity_ + 1), 0);
    uint8_t* row = &take_[(items_.size() - 1) * (capacity_ + 1)];
    const double value = spans_[i].width();
    for (int cap = capacity_; cap >= w; --cap) {
      if (dp_[cap - w] + value > dp_[cap]) {
        dp_[cap] = dp_[cap - w] + value;
        row[cap] = 1;
      }
    }
  }

  std::vector<int> Reconstruct() const {
    std::vector<int> chosen;
    int cap = capacity_;
    for (size_t k = items_.size(); k-- > 0;) {
      if (take_[k * (capacity_ + 1) + cap]) {
        chosen.push_back(items_[k]);
        cap -= static_cast<int>(weights_[items_[k]]);
      }
    }
    return chosen;
  }

  // Constant after construction.
  const std::span<const CompactionCandidate> c_;
  const std::vector<RowSetKeySpan> spans_;
  const std::vector<int> by_min_;
  const std::vector<int> by_max_;
  std::vector<int> by_density_;
  std::vector<uint64_t> weights_;  // In budget units.
  int capacity_ = 0;               // The budget in units.

  // The knapsack of the current left edge: dp_[cap] is the best width sum within `cap` units;
  // take_ has one row of capacity_ + 1 decisions per item in items_.
  std::vector<double> dp_;
  std::vector<int> items_;
  std::vector<uint8_t> take_;

  double best_quality_ = 0;
  std::vector<int> best_set_;
};

}  // namespace

BudgetedCompactionPolicy::BudgetedCompactionPolicy(CompactionPolicyOptions options)
    : options_(options) {}

CompactionSelection BudgetedCompactionPolicy::PickRowSets(
    std::span<const CompactionCandidate> candidates) const {
  CompactionSelection result;
  if (candidates.size() < 2) return result;
  // Work on the canonical order so the result does not depend on the caller's order, not even
  // through floating-point rounding.
  std::vector<CompactionCandidate> sorted;
  sorted.reserve(candidates.size());
  for (int i : SortByMin(candidates)) sorted.push_back(candidates[i]);
  candidates = sorted;
  Search search(candidates, options_.budget_bytes, options_.minimum_improvement);
  const std::vector<int> chosen = search.Run();
  if (chosen.size() < 2) return result;
  // The exact quality of the chosen set (the search may have measured it against a wider union).
  const std::vector<RowSetKeySpan>& spans = search.spans();
  double widths = 0;
  double lo = 1;
  double hi = 0;
  uint64_t bytes = 0;
  for (int i : chosen) {
    widths += spans[i].width();
    lo = std::min(lo, spans[i].cdf_min);
    hi = std::max(hi, spans[i].cdf_max);
    bytes += candidates[i].size_bytes;
  }
  const double quality = widths - (hi - lo);
  if (quality < options_.minimum_improvement) return result;
  CHECK_LE(bytes, options_.budget_bytes);
  for (int i : chosen) result.rowset_ids.push_back(candidates[i].id);
  std::sort(result.rowset_ids.begin(), result.rowset_ids.end());
  result.quality = quality;
  result.total_bytes = bytes;
  return result;
}

}  // namespace basalt
