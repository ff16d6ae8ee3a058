#include "tablet/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/metrics.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

namespace {
bool ValidatePercentage(const char* flag, int32_t value) {
  if (value >= 0 && value <= 100) return true;
  LOG(ERROR) << "--" << flag << " must be a percentage in [0, 100], not " << value;
  return false;
}
}  // namespace

DEFINE_int64(memory_limit_bytes, 0,
             "Sets the limit on the memory that tablets may hold in their in-memory stores "
             "(MemRowSets and DeltaMemStores), in bytes. 0 means 80% of the machine's physical "
             "memory (or of its cgroup memory limit, when lower).");
DEFINE_validator(memory_limit_bytes, [](const char*, int64_t value) { return value >= 0; });
DEFINE_int32(memory_pressure_percentage, 60,
             "Sets the percentage of --memory_limit_bytes above which the maintenance manager "
             "gives priority to flushes that free the most memory.");
DEFINE_validator(memory_pressure_percentage, &ValidatePercentage);
DEFINE_int32(memory_limit_soft_percentage, 80,
             "Sets the percentage of --memory_limit_bytes above which writes are delayed, more "
             "the closer memory use gets to the limit.");
DEFINE_validator(memory_limit_soft_percentage, &ValidatePercentage);
DEFINE_int32(memory_limit_max_write_delay_ms, 100,
             "Sets the delay of a write batch when memory use reaches --memory_limit_bytes, and "
             "how long a write waits at the limit for flushes before it is refused as "
             "retriable.");
DEFINE_validator(memory_limit_max_write_delay_ms,
                 [](const char*, int32_t value) { return value >= 0; });

namespace basalt {
namespace {

std::optional<int64_t> ReadCgroupMemoryMax() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  int64_t value;
  // "max" means unlimited; anything else that is not a positive number is ignored.
  if (!absl::SimpleAtoi(text, &value) || value <= 0) return std::nullopt;
  return value;
}

// Bytes from a percentage of `limit`, without overflow for any limit.
int64_t PercentOf(int64_t limit, int percentage) {
  return static_cast<int64_t>(static_cast<__int128>(limit) * percentage / 100);
}

}  // namespace

MemoryBudgetOptions MemoryBudgetOptions::FromFlags() {
  MemoryBudgetOptions options;
  options.limit_bytes = FLAGS_memory_limit_bytes;
  options.pressure_percentage = FLAGS_memory_pressure_percentage;
  options.soft_limit_percentage = FLAGS_memory_limit_soft_percentage;
  options.max_write_delay = absl::Milliseconds(FLAGS_memory_limit_max_write_delay_ms);
  return options;
}

absl::StatusOr<int64_t> ParseMeminfoTotalBytes(std::string_view meminfo) {
  for (absl::string_view line : absl::StrSplit(ToAbsl(meminfo), '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    // "MemTotal:       16314748 kB"
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) break;
    line = absl::StripAsciiWhitespace(line);
    int64_t kib;
    if (!absl::SimpleAtoi(line, &kib) || kib <= 0 || kib > (int64_t{1} << 52)) break;
    return kib * 1024;
  }
  return absl::InvalidArgumentError("/proc/meminfo has no valid \"MemTotal: <n> kB\" line");
}

absl::StatusOr<int64_t> PhysicalMemoryBytes() {
  std::optional<int64_t> bytes;
  std::ifstream in("/proc/meminfo");
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<int64_t> parsed = ParseMeminfoTotalBytes(text.str());
    if (parsed.ok()) {
      bytes = *parsed;
    } else {
      LOG(WARNING) << parsed.status() << "; falling back to sysconf";
    }
  }
  if (!bytes) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) {
      return absl::InternalError("cannot read the physical memory size (/proc/meminfo, sysconf)");
    }
    bytes = static_cast<int64_t>(pages) * page_size;
  }
  if (std::optional<int64_t> cgroup = ReadCgroupMemoryMax()) bytes = std::min(*bytes, *cgroup);
  return *bytes;
}

int64_t DefaultMemoryLimitBytes() {
  absl::StatusOr<int64_t> physical = PhysicalMemoryBytes();
  CHECK(physical.ok()) << physical.status();
  return PercentOf(*physical, 80);
}

// ---- MemoryBudget::Consumer ---------------------------------------------------------------------

MemoryBudget::Consumer::~Consumer() {
  budget_->Adjust(-bytes_.exchange(0, std::memory_order_relaxed));
  budget_->UnregisterConsumer(this);
}

void MemoryBudget::Consumer::Set(int64_t bytes) {
  DCHECK_GE(bytes, 0);
  const int64_t old = bytes_.exchange(bytes, std::memory_order_relaxed);
  if (old != bytes) budget_->Adjust(bytes - old);
}

// ---- MemoryBudget -------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<MemoryBudget>> MemoryBudget::Create(
    const MemoryBudgetOptions& options) {
  if (options.limit_bytes < 0) {
    return absl::InvalidArgumentError(StrCat("negative memory limit: ", options.limit_bytes));
  }
  for (int pct : {options.pressure_percentage, options.soft_limit_percentage}) {
    if (pct < 0 || pct > 100) {
      return absl::InvalidArgumentError(StrCat("memory percentage outside [0, 100]: ", pct));
    }
  }
  if (options.pressure_percentage > options.soft_limit_percentage) {
    return absl::InvalidArgumentError(
        StrCat("memory pressure percentage ", options.pressure_percentage,
               " is above the soft limit percentage ", options.soft_limit_percentage));
  }
  if (options.max_write_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("negative max write delay");
  }
  const int64_t limit = options.limit_bytes == 0 ? DefaultMemoryLimitBytes() : options.limit_bytes;
  return std::unique_ptr<MemoryBudget>(new MemoryBudget(options, limit));
}

MemoryBudget* MemoryBudget::Process() {
  static MemoryBudget* const budget = [] {
    absl::StatusOr<std::unique_ptr<MemoryBudget>> created =
        Create(MemoryBudgetOptions::FromFlags());
    // The flag validators reject most bad values; a pressure mark above the soft limit stops the
    // process here, with the reason.
    CHECK(created.ok()) << created.status();
    LOG(INFO) << "Memory limit for tablets' in-memory stores: " << (*created)->limit_bytes()
              << " bytes";
    return created->release();
  }();
  return budget;
}

MemoryBudget::MemoryBudget(const MemoryBudgetOptions& options, int64_t limit_bytes)
    : limit_bytes_(limit_bytes),
      pressure_bytes_(PercentOf(limit_bytes, options.pressure_percentage)),
      soft_limit_bytes_(PercentOf(limit_bytes, options.soft_limit_percentage)),
      max_write_delay_(options.max_write_delay),
      clock_(options.clock != nullptr ? options.clock : Clock::Default()),
      write_delay_seconds_(options.write_delay_seconds) {}

MemoryBudget::~MemoryBudget() {
  absl::MutexLock l(&mu_);
  CHECK(consumers_.empty()) << consumers_.size() << " memory consumers outlive their budget";
}

std::unique_ptr<MemoryBudget::Consumer> MemoryBudget::RegisterConsumer(std::string name) {
  std::unique_ptr<Consumer> consumer(new Consumer(this, std::move(name)));
  absl::MutexLock l(&mu_);
  consumers_.push_back(consumer.get());
  return consumer;
}

void MemoryBudget::UnregisterConsumer(Consumer* consumer) {
  absl::MutexLock l(&mu_);
  auto it = std::find(consumers_.begin(), consumers_.end(), consumer);
  CHECK(it != consumers_.end());
  consumers_.erase(it);
}

int MemoryBudget::AddPressureListener(std::function<void()> listener) {
  absl::MutexLock l(&listeners_mu_);
  const int id = next_listener_id_++;
  listeners_.emplace_back(id, std::move(listener));
  return id;
}

void MemoryBudget::RemovePressureListener(int id) {
  absl::MutexLock l(&listeners_mu_);
  auto it = std::find_if(listeners_.begin(), listeners_.end(),
                         [id](const auto& entry) { return entry.first == id; });
  CHECK(it != listeners_.end()) << "no pressure listener " << id;
  listeners_.erase(it);
}

void MemoryBudget::Adjust(int64_t delta) {
  const int64_t before = total_.fetch_add(delta, std::memory_order_relaxed);
  // No DCHECK on `after`: concurrent Set() calls on one consumer may land their deltas out of
  // order, so the total can dip transiently (even below 0) before it settles.
  const int64_t after = before + delta;
  if (before < pressure_bytes_ && after >= pressure_bytes_) NotifyPressure();
}

void MemoryBudget::NotifyPressure() {
  absl::MutexLock l(&listeners_mu_);
  for (const auto& [id, listener] : listeners_) listener();
}

double MemoryBudget::UsedPercentage() const {
  return limit_bytes_ == 0 ? 100.0 : 100.0 * static_cast<double>(consumption()) / limit_bytes_;
}

absl::Duration MemoryBudget::WriteDelay() const {
  const int64_t used = consumption();
  if (used < soft_limit_bytes_) return absl::ZeroDuration();
  if (used >= limit_bytes_) return max_write_delay_;
  // soft <= used < hard, so hard > soft here.
  const double f = static_cast<double>(used - soft_limit_bytes_) /
                   static_cast<double>(limit_bytes_ - soft_limit_bytes_);
  return max_write_delay_ * (f * f);
}

absl::Status MemoryBudget::AdmitWrite() {
  if (consumption() >= limit_bytes_) {
    // Last resort: make sure the flushers know, give them one max delay to free memory.
    NotifyPressure();
    clock_->SleepForMicros(absl::ToInt64Microseconds(max_write_delay_));
    total_delay_micros_.fetch_add(absl::ToInt64Microseconds(max_write_delay_),
                                  std::memory_order_relaxed);
    if (write_delay_seconds_ != nullptr) write_delay_seconds_->ObserveDuration(max_write_delay_);
    if (consumption() >= limit_bytes_) {
      writes_rejected_.fetch_add(1, std::memory_order_relaxed);
      const std::string message = absl::StrFormat(
          "tablet memory limit reached (%d of %d bytes used by in-memory stores); retry later",
          consumption(), limit_bytes_);
      if (const int64_t n = refusal_log_.Record(absl::Now()); n > 0) {
        LOG(WARNING) << "write refused: " << message << LogThrottle::Times(n);
      }
      return absl::UnavailableError(message);
    }
    writes_delayed_.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }
  const absl::Duration delay = WriteDelay();
  if (delay > absl::ZeroDuration()) {
    const int64_t micros = absl::ToInt64Microseconds(delay);
    writes_delayed_.fetch_add(1, std::memory_order_relaxed);
    total_delay_micros_.fetch_add(micros, std::memory_order_relaxed);
    if (write_delay_seconds_ != nullptr) write_delay_seconds_->ObserveDuration(delay);
    if (const int64_t n = delay_log_.Record(absl::Now()); n > 0) {
      LOG(WARNING) << "write delayed " << absl::FormatDuration(delay) << ": " << consumption()
                   << " of " << limit_bytes_ << " bytes used by in-memory stores (delays start at "
                   << soft_limit_bytes_ << ", --memory_limit_soft_percentage)"
                   << LogThrottle::Times(n);
    }
    clock_->SleepForMicros(micros);
  }
  return absl::OkStatus();
}

MemoryBudget::Stats MemoryBudget::GetStats() const {
  return Stats{consumption(),
               limit_bytes_,
               pressure_bytes_,
               soft_limit_bytes_,
               writes_delayed_.load(std::memory_order_relaxed),
               writes_rejected_.load(std::memory_order_relaxed),
               total_delay_micros_.load(std::memory_order_relaxed)};
}

std::vector<MemoryBudget::ConsumerUsage> MemoryBudget::ListConsumers() const {
  absl::MutexLock l(&mu_);
  std::vector<ConsumerUsage> out;
  out.reserve(consumers_.size());
  for (const Consumer* c : consumers_) out.push_back({c->name(), c->bytes()});
  return out;
}

}  // namespace basalt
