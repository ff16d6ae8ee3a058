#include "common/envelope.h"

#include <gtest/gtest.h>

#include <string>

namespace basalt {
namespace {
namespace envelope_test_file {

TEST(EnvelopeTest, RoundTripsAndEveryDamageIsDataLoss) {
  const std::string sealed = SealEnvelope("TESTMAG1", "the payload");
  absl::StatusOr<std::string_view> open = OpenEnvelope(sealed, "TESTMAG1", "/f", "test");
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(*open, "the payload");
  EXPECT_EQ(*OpenEnvelope(SealEnvelope("TESTMAG1", ""), "TESTMAG1", "/f", "test"), "");
  for (size_t i = 0; i < sealed.size(); ++i) {
    std::string bad = sealed;
    bad[i] ^= 0x01;
    absl::StatusOr<std::string_view> s = OpenEnvelope(bad, "TESTMAG1", "/f", "test");
    EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
    EXPECT_NE(s.status().message().find("/f"), std::string_view::npos) << s.status();
  }
  for (size_t len = 0; len < sealed.size(); ++len) {
    EXPECT_FALSE(OpenEnvelope(sealed.substr(0, len), "TESTMAG1", "/f", "test").ok()) << len;
  }
  absl::StatusOr<std::string_view> other = OpenEnvelope(sealed, "OTHERMG1", "/f", "other");
  EXPECT_NE(other.status().message().find("not a other file"), std::string_view::npos)
      << other.status();
}

}  // namespace envelope_test_file
}  // namespace
}  // namespace basalt
