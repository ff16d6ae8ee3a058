#include "tablet/memory_budget.h"

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/metrics.h"
#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace memory_budget_test_file {

constexpr int64_t kLimit = 1000;  // pressure 600, soft 800.

// A ManualClock (kAdvance) that runs a hook at each sleep, standing in for the flushes that free
// memory while a write waits.
class HookClock : public ManualClock {
 public:
  void SleepForMicros(int64_t micros) override {
    ++sleeps_;
    if (hook_) hook_();
    ManualClock::SleepForMicros(micros);
  }
  std::function<void()> hook_;
  int sleeps_ = 0;
};

class MemoryBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryBudgetOptions options;
    options.limit_bytes = kLimit;
    options.max_write_delay = absl::Milliseconds(100);
    options.clock = &clock_;
    options.write_delay_seconds = &delays_;
    absl::StatusOr<std::unique_ptr<MemoryBudget>> budget = MemoryBudget::Create(options);
    BASALT_ASSERT_OK(budget);
    budget_ = std::move(*budget);
    consumer_ = budget_->RegisterConsumer("tablet-a");
  }
  void TearDown() override { consumer_.reset(); }

  int64_t ElapsedMicros() { return clock_.MonotonicMicros() - ManualClock::kDefaultStartMicros; }

  HookClock clock_;
  Histogram delays_{{0.01, 0.05, 0.1}};
  std::unique_ptr<MemoryBudget> budget_;
  std::unique_ptr<MemoryBudget::Consumer> consumer_;
};

TEST(MemoryBudgetParseTest, MeminfoTotal) {
  absl::StatusOr<int64_t> bytes = ParseMeminfoTotalBytes(
      "MemTotal:       16314748 kB\nMemFree:          123456 kB\nMemAvailable: 1 kB\n");
  BASALT_ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, int64_t{16314748} * 1024);
  // Not the first line.
  bytes = ParseMeminfoTotalBytes("MemFree: 5 kB\nMemTotal: 7 kB");
  BASALT_ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, 7 * 1024);
}

TEST(MemoryBudgetParseTest, MalformedMeminfoIsInvalidArgument) {
  for (const char* text : {"", "MemFree: 5 kB\n", "MemTotal: kB\n", "MemTotal: 12\n",
                           "MemTotal: -4 kB\n", "MemTotal: 0 kB\n", "MemTotal: 12x kB\n",
                           "MemTotal: 99999999999999999999999 kB\n", "MemTotal: 1 MB\n"}) {
    absl::StatusOr<int64_t> bytes = ParseMeminfoTotalBytes(text);
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(MemoryBudgetParseTest, DefaultLimitIsEightyPercentOfThisMachine) {
  absl::StatusOr<int64_t> physical = PhysicalMemoryBytes();
  BASALT_ASSERT_OK(physical);
  EXPECT_GT(*physical, 16 << 20);
  EXPECT_EQ(DefaultMemoryLimitBytes(), *physical * 80 / 100);
  absl::StatusOr<std::unique_ptr<MemoryBudget>> budget = MemoryBudget::Create({});
  BASALT_ASSERT_OK(budget);
  EXPECT_EQ((*budget)->limit_bytes(), DefaultMemoryLimitBytes());
  EXPECT_EQ((*budget)->pressure_bytes(), (*budget)->limit_bytes() * 60 / 100);
}

TEST(MemoryBudgetParseTest, InvalidOptions) {
  auto create = [](auto mutate) {
    MemoryBudgetOptions options;
    options.limit_bytes = kLimit;
    mutate(options);
    return MemoryBudget::Create(options).status().code();
  };
  using O = MemoryBudgetOptions;
  EXPECT_EQ(create([](O& o) { o.limit_bytes = -1; }), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(create([](O& o) { o.soft_limit_percentage = 101; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(create([](O& o) { o.pressure_percentage = -1; }), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(create([](O& o) { o.pressure_percentage = 90; }), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(create([](O& o) { o.max_write_delay = absl::Milliseconds(-1); }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(create([](O& o) {}), absl::StatusCode::kOk);
}

TEST_F(MemoryBudgetTest, ConsumersSumAndReleaseOnDestruction) {
  std::unique_ptr<MemoryBudget::Consumer> b = budget_->RegisterConsumer("tablet-b");
  consumer_->Set(100);
  b->Set(250);
  EXPECT_EQ(budget_->consumption(), 350);
  consumer_->Set(40);  // A flush freed memory.
  EXPECT_EQ(budget_->consumption(), 290);
  std::vector<MemoryBudget::ConsumerUsage> usage = budget_->ListConsumers();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].name, "tablet-a");
  EXPECT_EQ(usage[0].bytes, 40);
  EXPECT_EQ(usage[1].name, "tablet-b");
  EXPECT_EQ(usage[1].bytes, 250);
  b.reset();
  EXPECT_EQ(budget_->consumption(), 40);
  EXPECT_EQ(budget_->ListConsumers().size(), 1u);
}

TEST_F(MemoryBudgetTest, PressureMark) {
  EXPECT_EQ(budget_->pressure_bytes(), 600);
  EXPECT_EQ(budget_->soft_limit_bytes(), 800);
  consumer_->Set(599);
  EXPECT_FALSE(budget_->UnderPressure());
  consumer_->Set(600);
  EXPECT_TRUE(budget_->UnderPressure());
  EXPECT_DOUBLE_EQ(budget_->UsedPercentage(), 60.0);
}

TEST_F(MemoryBudgetTest, WriteDelayGrowsFromSoftToHardLimit) {
  const auto delay_at = [&](int64_t used) {
    consumer_->Set(used);
    return budget_->WriteDelay();
  };
  EXPECT_EQ(delay_at(0), absl::ZeroDuration());
  EXPECT_EQ(delay_at(799), absl::ZeroDuration());
  EXPECT_EQ(delay_at(800), absl::ZeroDuration());
  EXPECT_EQ(delay_at(900), absl::Milliseconds(25));  // f = 0.5 -> 100 ms * 0.25.
  EXPECT_EQ(delay_at(1000), absl::Milliseconds(100));
  EXPECT_EQ(delay_at(5000), absl::Milliseconds(100));
  absl::Duration previous = absl::ZeroDuration();
  for (int64_t used = 800; used <= 1000; used += 10) {
    const absl::Duration d = delay_at(used);
    EXPECT_GE(d, previous) << used;
    EXPECT_LE(d, absl::Milliseconds(100)) << used;
    previous = d;
  }
  EXPECT_GT(delay_at(990), absl::Milliseconds(90));
}

TEST_F(MemoryBudgetTest, AdmitWriteSleepsTheDelay) {
  consumer_->Set(700);
  BASALT_EXPECT_OK(budget_->AdmitWrite());
  EXPECT_EQ(ElapsedMicros(), 0);
  EXPECT_EQ(budget_->GetStats().writes_delayed, 0);

  consumer_->Set(900);
  BASALT_EXPECT_OK(budget_->AdmitWrite());
  EXPECT_EQ(ElapsedMicros(), 25000);
  MemoryBudget::Stats stats = budget_->GetStats();
  EXPECT_EQ(stats.writes_delayed, 1);
  EXPECT_EQ(stats.writes_rejected, 0);
  EXPECT_EQ(stats.total_delay_micros, 25000);
  // The histogram an operator sees (basalt_tserver_write_delay_seconds) has the one delay.
  EXPECT_EQ(delays_.count(), 1u);
  EXPECT_DOUBLE_EQ(delays_.sum(), 0.025);
  EXPECT_EQ(delays_.CumulativeCount(0), 0u);  // <= 10 ms
  EXPECT_EQ(delays_.CumulativeCount(1), 1u);  // <= 50 ms
}

TEST_F(MemoryBudgetTest, HardLimitRefusesOnlyWhenNothingWasFreed) {
  int wakeups = 0;
  const int id = budget_->AddPressureListener([&] { ++wakeups; });
  consumer_->Set(1000);
  EXPECT_EQ(wakeups, 1);  // Crossing the pressure mark.

  absl::Status s = budget_->AdmitWrite();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(wakeups, 2);  // The flushers were woken before refusing.
  EXPECT_EQ(ElapsedMicros(), 100000);
  EXPECT_EQ(budget_->GetStats().writes_rejected, 1);
  EXPECT_EQ(delays_.count(), 1u);  // The wait before the refusal is a delay too.
  EXPECT_DOUBLE_EQ(delays_.sum(), 0.1);

  // A flush frees memory while the write waits: the write goes through.
  clock_.hook_ = [&] { consumer_->Set(700); };
  BASALT_EXPECT_OK(budget_->AdmitWrite());
  EXPECT_EQ(budget_->GetStats().writes_rejected, 1);
  EXPECT_EQ(budget_->GetStats().writes_delayed, 1);
  budget_->RemovePressureListener(id);
}

TEST_F(MemoryBudgetTest, ListenersCalledOnUpwardCrossingsOnly) {
  std::vector<int> calls(2, 0);
  const int a = budget_->AddPressureListener([&] { ++calls[0]; });
  const int b = budget_->AddPressureListener([&] { ++calls[1]; });
  std::unique_ptr<MemoryBudget::Consumer> other = budget_->RegisterConsumer("tablet-b");
  consumer_->Set(500);
  EXPECT_EQ(calls[0], 0);
  other->Set(100);  // 600: crosses through another consumer.
  EXPECT_EQ(calls[0], 1);
  EXPECT_EQ(calls[1], 1);
  consumer_->Set(900);  // Still above: no new call.
  EXPECT_EQ(calls[0], 1);
  consumer_->Set(100);  // Below again.
  budget_->RemovePressureListener(b);
  consumer_->Set(550);  // Crosses again.
  EXPECT_EQ(calls[0], 2);
  EXPECT_EQ(calls[1], 1);
  budget_->RemovePressureListener(a);
  other.reset();
}

TEST(MemoryBudgetEdgeTest, SoftLimitEqualToHardLimitNeverDelaysBelowIt) {
  MemoryBudgetOptions options;
  options.limit_bytes = kLimit;
  options.soft_limit_percentage = 100;
  auto budget = MemoryBudget::Create(options);
  BASALT_ASSERT_OK(budget);
  auto consumer = (*budget)->RegisterConsumer("t");
  consumer->Set(999);
  EXPECT_EQ((*budget)->WriteDelay(), absl::ZeroDuration());
  consumer->Set(1000);
  EXPECT_EQ((*budget)->WriteDelay(), options.max_write_delay);
}

TEST_F(MemoryBudgetTest, ConcurrentUpdatesSumExactly) {
  const uint64_t seed = SeedFromEnvOrTime();
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<MemoryBudget::Consumer>> consumers;
  for (int i = 0; i < kThreads; ++i) consumers.push_back(budget_->RegisterConsumer("c"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Random rng(seed + t);
      for (int i = 0; i < 20000; ++i) {
        // Every thread updates every consumer, so Set() also races with itself.
        consumers[(t + i) % kThreads]->Set(static_cast<int64_t>(rng.Uniform(1 << 20)));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  int64_t sum = 0;
  for (const auto& c : consumers) sum += c->bytes();
  EXPECT_EQ(budget_->consumption(), sum + consumer_->bytes()) << "seed " << seed;
  consumers.clear();
  EXPECT_EQ(budget_->consumption(), consumer_->bytes());
}

}  // namespace memory_budget_test_file
}  // namespace
}  // namespace basalt
