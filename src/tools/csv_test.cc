#include "tools/csv.h"
#include "common/status_test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace basalt::tools {
namespace {
namespace csv_test_file {

// All records of `data` as (value, quoted) lists; fails the test on a parse error.
std::vector<std::vector<std::pair<std::string, bool>>> ReadAll(std::string_view data) {
  CsvReader r(data);
  std::vector<std::vector<std::pair<std::string, bool>>> out;
  std::vector<CsvField> fields;
  while (true) {
    auto more = r.Next(&fields);
    BASALT_EXPECT_OK(more);
    if (!more.ok() || !*more) break;
    out.emplace_back();
    for (const auto& f : fields) out.back().emplace_back(f.value, f.quoted);
  }
  return out;
}

using Rec = std::vector<std::pair<std::string, bool>>;

TEST(CsvReaderTest, PlainFieldsAndLineEndings) {
  EXPECT_EQ(ReadAll("a,b\r\n1,2\n3,\n"), (std::vector<Rec>{{{"a", false}, {"b", false}},
                                                           {{"1", false}, {"2", false}},
                                                           {{"3", false}, {"", false}}}));
  EXPECT_EQ(ReadAll("x"), (std::vector<Rec>{{{"x", false}}}));
  EXPECT_EQ(ReadAll(""), std::vector<Rec>{});
  EXPECT_EQ(ReadAll("a,"), (std::vector<Rec>{{{"a", false}, {"", false}}}));
}

TEST(CsvReaderTest, QuotedFields) {
  EXPECT_EQ(ReadAll("\"a,b\",\"say \"\"hi\"\"\",\"\"\n\"two\nlines\",z\n"),
            (std::vector<Rec>{{{"a,b", true}, {"say \"hi\"", true}, {"", true}},
                              {{"two\nlines", true}, {"z", false}}}));
}

TEST(CsvReaderTest, RecordLinesCountEmbeddedLineBreaks) {
  CsvReader r("h\n\"a\nb\"\nc\n");
  std::vector<CsvField> f;
  ASSERT_TRUE(*r.Next(&f));
  EXPECT_EQ(r.record_line(), 1);
  ASSERT_TRUE(*r.Next(&f));
  EXPECT_EQ(r.record_line(), 2);
  ASSERT_TRUE(*r.Next(&f));
  EXPECT_EQ(r.record_line(), 4);
  EXPECT_FALSE(*r.Next(&f));
}

TEST(CsvReaderTest, MalformedInputIsACleanErrorNamingTheLine) {
  struct Case {
    std::string data;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a\nb\"c\n", "line 2: quote inside an unquoted field"},
      {"a\n\"b\"c\n", "line 2: unexpected text after a closing quote"},
      {"a\nb\n\"open,\nmore", "line 3: quoted field is not closed"},
  };
  for (const auto& c : cases) {
    CsvReader r(c.data);
    std::vector<CsvField> f;
    absl::Status s;
    while (true) {
      auto more = r.Next(&f);
      if (!more.ok()) {
        s = more.status();
        break;
      }
      if (!*more) break;
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.data;
    EXPECT_NE(std::string(s.message()).find(c.error), std::string::npos) << s;
  }
}

// Every prefix of a valid file either parses or fails cleanly (no crash, no hang).
TEST(CsvReaderTest, TruncatedInputNeverCrashes) {
  const std::string data = "k,\"v,\"\"x\"\"\"\r\n1,\"a\nb\"\n2,c\n";
  for (size_t n = 0; n <= data.size(); ++n) {
    CsvReader r(std::string_view(data).substr(0, n));
    std::vector<CsvField> f;
    for (int i = 0; i < 10; ++i) {
      auto more = r.Next(&f);
      if (!more.ok() || !*more) break;
    }
  }
}

}  // namespace csv_test_file
}  // namespace
}  // namespace basalt::tools
