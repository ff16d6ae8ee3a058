#include "tsdb/line_protocol.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"

namespace basalt::tsdb {
namespace {
namespace line_protocol_test_file {

constexpr Precision kNs = Precision::kNanoseconds;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr uint64_t kUint64Max = std::numeric_limits<uint64_t>::max();

using Tags = std::vector<std::pair<std::string, std::string>>;

// ---- Describing results, so that a mismatch prints readably ----------------------------------

std::string Describe(const FieldValue& v) {
  switch (v.type) {
    case FieldValue::kFloat:
      return absl::StrFormat("float %.17g", v.f);
    case FieldValue::kInteger:
      return StrCat("int ", v.i);
    case FieldValue::kUnsigned:
      return StrCat("uint ", v.u);
    case FieldValue::kString:
      return StrCat("string \"", absl::CEscape(v.s), "\"");
    case FieldValue::kBool:
      return v.b ? "bool true" : "bool false";
  }
  return "bad type";
}

// One point as one line: `line 1: "cpu" tag "k"="v" field "f"=float 1 at 5`.
std::string Describe(const Point& p) {
  std::string out = StrCat("line ", p.line, ": \"", absl::CEscape(p.measurement), "\"");
  for (const auto& [k, v] : p.tags) {
    StrAppend(&out, " tag \"", absl::CEscape(k), "\"=\"", absl::CEscape(v), "\"");
  }
  for (const auto& [k, v] : p.fields) {
    StrAppend(&out, " field \"", absl::CEscape(k), "\"=", Describe(v));
  }
  StrAppend(&out, p.timestamp_us.has_value() ? StrCat(" at ", *p.timestamp_us) : " no time");
  return out;
}

// Describe() of every point of `body`, or the error message alone.
std::vector<std::string> All(std::string_view body, Precision precision = kNs) {
  std::vector<Point> points;
  const absl::Status s = ParseLineProtocol(body, precision, &points);
  if (!s.ok()) return {std::string(s.message())};
  std::vector<std::string> out;
  for (const Point& p : points) out.push_back(Describe(p));
  return out;
}

// Describe() of the only point of `body`, or the error message.
std::string One(std::string_view body, Precision precision = kNs) {
  std::vector<std::string> all = All(body, precision);
  if (all.size() != 1) return StrCat(all.size(), " points");
  return all[0];
}

absl::StatusOr<Point> ParseOne(std::string_view body, Precision precision = kNs) {
  std::vector<Point> points;
  BASALT_RETURN_IF_ERROR(ParseLineProtocol(body, precision, &points));
  if (points.size() != 1) return absl::InternalError(StrCat(points.size(), " points"));
  return std::move(points[0]);
}

// The value of field v in the line "m v=<text>".
absl::StatusOr<FieldValue> ValueOf(std::string_view text) {
  BASALT_ASSIGN_OR_RETURN(Point p, ParseOne(StrCat("m v=", text)));
  return p.fields.at(0).second;
}

// The timestamp of the line "m v=1 <text>", or -999999 when it has none.
absl::StatusOr<int64_t> TimeOf(std::string_view text, Precision precision) {
  BASALT_ASSIGN_OR_RETURN(Point p, ParseOne(StrCat("m v=1 ", text), precision));
  return p.timestamp_us.value_or(-999999);
}

// The error message of parsing `body`, or "OK". An error must be INVALID_ARGUMENT and leave the
// output vector empty (it starts out non-empty here).
std::string ErrorOf(std::string_view body, Precision precision = kNs) {
  std::vector<Point> points(2);
  const absl::Status s = ParseLineProtocol(body, precision, &points);
  if (s.ok()) return "OK";
  if (s.code() != absl::StatusCode::kInvalidArgument) return StrCat("wrong code: ", s.ToString());
  if (!points.empty()) return StrCat("error, but ", points.size(), " points left");
  return std::string(s.message());
}

void ExpectFloat(std::string_view text, double want) {
  SCOPED_TRACE(text);
  const absl::StatusOr<FieldValue> v = ValueOf(text);
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->type, FieldValue::kFloat);
  EXPECT_EQ(v->f, want);
  EXPECT_EQ(std::signbit(v->f), std::signbit(want));
}

// ---- Lines, sections, tags and escapes ---------------------------------------------------------

TEST(LineProtocolTest, ParsesMeasurementTagsFieldsAndTimestamp) {
  EXPECT_EQ(One("cpu,host=a,region=west usage=0.5,count=3i,ok=t,name=\"x\",n=7u "
                "1700000000123456789"),
            "line 1: \"cpu\" tag \"host\"=\"a\" tag \"region\"=\"west\" field \"usage\"=float 0.5 "
            "field \"count\"=int 3 field \"ok\"=bool true field \"name\"=string \"x\" "
            "field \"n\"=uint 7 at 1700000000123456");
  EXPECT_EQ(One("cpu v=1"), "line 1: \"cpu\" field \"v\"=float 1 no time");
}

TEST(LineProtocolTest, EmptyBodiesHaveNoPoints) {
  for (std::string_view body : {"", "\n", "\r\n", "  \t\n", "# only a comment", "#\n#\n"}) {
    EXPECT_EQ(All(body), std::vector<std::string>{}) << absl::CEscape(ToAbsl(body));
  }
}

TEST(LineProtocolTest, TagsAreSortedByKeyInByteOrder) {
  absl::StatusOr<Point> p = ParseOne("cpu,z=1,a=2,B=3,\xc3\xa9=4,m=5,a0=6 v=1");
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->tags,
            (Tags{{"B", "3"}, {"a", "2"}, {"a0", "6"}, {"m", "5"}, {"z", "1"}, {"\xc3\xa9", "4"}}));
}

// Many tags (past the small-line insertion sort), given in reverse key order: sorted, and a
// repeated key is reported at its first repetition in line order, as for a few tags.
TEST(LineProtocolTest, ManyTagsSortAndReportRepeats) {
  constexpr int kTags = 5000;
  std::string body = "cpu";
  for (int i = kTags - 1; i >= 0; --i) body += absl::StrFormat(",k%05d=v%d", i, i);
  absl::StatusOr<Point> p = ParseOne(body + " f=1");
  BASALT_ASSERT_OK(p);
  ASSERT_EQ(p->tags.size(), static_cast<size_t>(kTags));
  for (int i = 0; i < kTags; ++i) {
    ASSERT_EQ(p->tags[i].first, absl::StrFormat("k%05d", i));
    ASSERT_EQ(p->tags[i].second, absl::StrFormat("v%d", i));
  }
  // k02500 again, then k00007 again: the first repetition in the line is k02500's.
  const std::string repeated = body + ",k02500=x,k00007=y f=1";
  const size_t column = repeated.find(",k02500=x") + 2;
  EXPECT_EQ(ErrorOf(repeated), StrCat("line 1, column ", column, ": duplicate tag key 'k02500'"));
}

TEST(LineProtocolTest, MeasurementEscapes) {
  EXPECT_EQ(One("c\\,p\\ u v=1"), "line 1: \"c,p u\" field \"v\"=float 1 no time");
  // '=' needs no escape in a measurement, so "\=" stays as written.
  EXPECT_EQ(One("c=p v=1"), "line 1: \"c=p\" field \"v\"=float 1 no time");
  EXPECT_EQ(One("c\\=p v=1"), "line 1: \"c\\\\=p\" field \"v\"=float 1 no time");
  // Any other escaped byte keeps its backslash, "\\" included; the byte after "\\" is read
  // afresh, so here the space ends the measurement.
  absl::StatusOr<Point> p = ParseOne("c\\xp\\\"\\\\ v=1");
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->measurement, "c\\xp\\\"\\\\");
  p = ParseOne("c\\\\\\ x v=1");  // c \\ "\ " x
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->measurement, "c\\\\ x");
  // Quotes and '#' after the first byte are ordinary bytes.
  p = ParseOne("c\"#\" v=1");
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->measurement, "c\"#\"");
}

TEST(LineProtocolTest, TagAndFieldKeyEscapes) {
  absl::StatusOr<Point> p = ParseOne("cpu,t\\,a\\=g\\ k=v\\,a\\=l\\ ue f\\,i\\=e\\ ld=1");
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->tags, (Tags{{"t,a=g k", "v,a=l ue"}}));
  EXPECT_EQ(p->fields.at(0).first, "f,i=e ld");

  p = ParseOne("cpu,t\\x=v\\\\,u=\"q\" f\\y=1,g\\\\=2");
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->tags, (Tags{{"t\\x", "v\\\\"}, {"u", "\"q\""}}));
  ASSERT_EQ(p->fields.size(), 2u);
  EXPECT_EQ(p->fields[0].first, "f\\y");
  EXPECT_EQ(p->fields[1].first, "g\\\\");
}

TEST(LineProtocolTest, BackslashBeforeALineEndIsLiteral) {
  // A line break cannot be escaped: the backslash stays, the line ends.
  EXPECT_EQ(ErrorOf("cpu,t=a\\\ncpu v=1"), "line 1, column 9: missing fields");
  EXPECT_EQ(ErrorOf("cpu,t=a\\\r\ncpu v=1"), "line 1, column 9: missing fields");
  EXPECT_EQ(ErrorOf("cpu v=1,f\\"), "line 1, column 11: missing '=' after field key");
  // "\ " is an escaped space, so the tag value runs on into the field.
  EXPECT_EQ(ErrorOf("cpu,t=a\\ v=1"), "line 1, column 11: unescaped '=' in tag value");
}

TEST(LineProtocolTest, BlanksAroundSections) {
  EXPECT_EQ(One(" \t cpu  \t v=1 \t 5 \t "), "line 1: \"cpu\" field \"v\"=float 1 at 0");
  EXPECT_EQ(One("cpu v=1 \t"), "line 1: \"cpu\" field \"v\"=float 1 no time");
  // Only a space separates sections; a tab right after a name or value is part of it.
  EXPECT_EQ(ErrorOf("cpu\tv=1"), "line 1, column 8: missing fields");
  EXPECT_EQ(ErrorOf("cpu v=1\t5"), "line 1, column 7: invalid number '1\\t5'");
  EXPECT_EQ(ErrorOf("cpu v=1 5\t"), "line 1, column 9: invalid timestamp '5\\t'");
}

TEST(LineProtocolTest, CommentsBlankLinesAndCrlf) {
  const std::string body =
      "# header, with \"quotes\" and = signs\n"
      "\n"
      "  \t\r\n"
      "  # indented comment\r\n"
      "cpu v=1 10\r\n"
      "\r\n"
      "cpu v=2\r\n"
      "cpu v=3\r";  // A '\r' that ends the body ends the line too.
  EXPECT_EQ(All(body, Precision::kMicroseconds),
            (std::vector<std::string>{"line 5: \"cpu\" field \"v\"=float 1 at 10",
                                      "line 7: \"cpu\" field \"v\"=float 2 no time",
                                      "line 8: \"cpu\" field \"v\"=float 3 no time"}));
  // A '\r' that is not before a line break is an ordinary byte.
  absl::StatusOr<Point> p = ParseOne("c\rpu,t=a\rb v=\"x\"\r\n");
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->measurement, "c\rpu");
  EXPECT_EQ(p->tags, (Tags{{"t", "a\rb"}}));
  // '#' starts a comment only at the start of a line.
  EXPECT_EQ(ErrorOf("cpu v=1 # not a comment"), "line 1, column 9: invalid timestamp '#'");
}

TEST(LineProtocolTest, PointsRecordTheirLine) {
  EXPECT_EQ(All("a v=1\n\nb v=2\n# c\nc v=\"x\ny\"\nd v=4"),
            (std::vector<std::string>{"line 1: \"a\" field \"v\"=float 1 no time",
                                      "line 3: \"b\" field \"v\"=float 2 no time",
                                      "line 5: \"c\" field \"v\"=string \"x\\ny\" no time",
                                      "line 7: \"d\" field \"v\"=float 4 no time"}));
}

// ---- Field values ------------------------------------------------------------------------------

TEST(LineProtocolTest, QuotedStrings) {
  absl::StatusOr<FieldValue> v = ValueOf(R"("a \"b\" c,d=e f\\g\h")");
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->type, FieldValue::kString);
  EXPECT_EQ(v->s, R"(a "b" c,d=e f\g\h)");
  v = ValueOf(R"("")");
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->type, FieldValue::kString);
  EXPECT_EQ(v->s, "");
  v = ValueOf("\"tab\there, # and \\n stay\"");
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->s, "tab\there, # and \\n stay");
  // "\\" is one backslash, so the quote after it closes the string.
  EXPECT_EQ(One(R"(m s="end\\" 5)", Precision::kMicroseconds),
            R"(line 1: "m" field "s"=string "end\\" at 5)");
  EXPECT_EQ(One(R"(m a="x",b="y,z" 7)", Precision::kMicroseconds),
            R"(line 1: "m" field "a"=string "x" field "b"=string "y,z" at 7)");
  // Strings look like other values only when unquoted.
  EXPECT_EQ(One(R"(m a="1i",b="true")"),
            R"(line 1: "m" field "a"=string "1i" field "b"=string "true" no time)");
}

TEST(LineProtocolTest, QuotedStringsMayHoldLineBreaks) {
  EXPECT_EQ(All("cpu s=\"a\nb\" 5000\ncpu s=\"c\r\nd\"\ncpu v=1"),
            (std::vector<std::string>{"line 1: \"cpu\" field \"s\"=string \"a\\nb\" at 5",
                                      "line 3: \"cpu\" field \"s\"=string \"c\\r\\nd\" no time",
                                      "line 5: \"cpu\" field \"v\"=float 1 no time"}));
  // Errors after such a string count its line breaks.
  EXPECT_EQ(ErrorOf("cpu s=\"a\nb\" 5x"), "line 2, column 4: invalid timestamp '5x'");
}

TEST(LineProtocolTest, StringLengthLimit) {
  const std::string max(kMaxStringFieldBytes, 'x');
  absl::StatusOr<FieldValue> v = ValueOf(StrCat("\"", max, "\""));
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->s, max);
  EXPECT_EQ(ErrorOf(StrCat("cpu s=\"", max, "y\"")),
            "line 1, column 7: string field value is longer than 65536 bytes");
  // The limit applies to the unescaped value: 65536 escaped quotes fit.
  std::string quotes;
  for (size_t i = 0; i < kMaxStringFieldBytes; ++i) quotes += "\\\"";
  v = ValueOf(StrCat("\"", quotes, "\""));
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->s, std::string(kMaxStringFieldBytes, '"'));
  // A long string without its closing quote is reported as unterminated.
  EXPECT_EQ(ErrorOf(StrCat("cpu s=\"", max, max)), "line 1, column 7: unterminated string");
}

TEST(LineProtocolTest, Floats) {
  ExpectFloat("1", 1);
  ExpectFloat("-1.5", -1.5);
  ExpectFloat("1e3", 1000);
  ExpectFloat("1.5E-2", 1.5e-2);
  ExpectFloat("1e+3", 1000);
  ExpectFloat(".5", 0.5);
  ExpectFloat("-.5", -0.5);
  ExpectFloat("1.", 1);
  ExpectFloat("007", 7);
  ExpectFloat("0", 0);
  ExpectFloat("-0", -0.0);
  ExpectFloat("0.1", 0.1);
  ExpectFloat("1.7976931348623157e308", std::numeric_limits<double>::max());
  ExpectFloat("-1.7976931348623157e308", -std::numeric_limits<double>::max());
  ExpectFloat("4.9406564584124654e-324", std::numeric_limits<double>::denorm_min());
  ExpectFloat("123456789012345678901234567890", 123456789012345678901234567890.0);
  // Too small to represent: a zero of the same sign, as in InfluxDB.
  ExpectFloat("1e-400", 0.0);
  ExpectFloat("-1e-400", -0.0);
  ExpectFloat("0.0000001e-999999999999", 0.0);
  ExpectFloat("0e999999", 0.0);
}

// Plain decimals (no exponent) of every length around the 15-digit fast path, with and without
// a sign and a point anywhere, read as the correctly rounded double strtod gives, bit for bit.
TEST(LineProtocolTest, PlainDecimalsRoundLikeStrtod) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  for (int round = 0; round < 20000; ++round) {
    const int digits = 1 + static_cast<int>(rng.Uniform(19));
    std::string text = rng.OneIn(2) ? "-" : "";
    std::string number;
    for (int d = 0; d < digits; ++d) number.push_back(static_cast<char>('0' + rng.Uniform(10)));
    const size_t point = rng.Uniform(static_cast<uint64_t>(digits) + 2);  // digits + 1: none.
    if (point <= number.size()) number.insert(point, ".");
    text += number;
    SCOPED_TRACE(StrCat("seed ", seed, " round ", round, ": ", text));
    const double want = std::strtod(text.c_str(), nullptr);
    const absl::StatusOr<FieldValue> v = ValueOf(text);
    BASALT_ASSERT_OK(v);
    ASSERT_EQ(v->type, FieldValue::kFloat);
    uint64_t got_bits, want_bits;
    std::memcpy(&got_bits, &v->f, sizeof(double));
    std::memcpy(&want_bits, &want, sizeof(double));
    ASSERT_EQ(got_bits, want_bits) << v->f << " against " << want;
  }
}

TEST(LineProtocolTest, BadFloats) {
  for (std::string_view text : {"1.2.3", "1e", "1e+", "1e3.5", "--1", "-", ".", "-.", ".e5", "1f",
                                "0x10", "1_000", "1ee3", "-+1", "1-"}) {
    EXPECT_EQ(ErrorOf(StrCat("m v=", text)),
              StrCat("line 1, column 5: invalid number '", text, "'"));
  }
  // No inf, nan or a leading '+': those are not numbers here.
  for (std::string_view text : {"inf", "nan", "NaN", "Inf", "infinity", "+1", "+1i", "abc"}) {
    EXPECT_EQ(ErrorOf(StrCat("m v=", text)), StrCat("line 1, column 5: invalid field value '", text,
                                                    "' (a number, a quoted string or a boolean)"));
  }
  EXPECT_EQ(ErrorOf("m v=-inf"), "line 1, column 5: invalid number '-inf'");
  EXPECT_EQ(ErrorOf("m v=-nan"), "line 1, column 5: invalid number '-nan'");
  EXPECT_EQ(ErrorOf("m v=1e400"), "line 1, column 5: float '1e400' is out of range");
  EXPECT_EQ(ErrorOf("m v=-1.8e308"), "line 1, column 5: float '-1.8e308' is out of range");
  EXPECT_EQ(ErrorOf("m v=1e999999999999999"),
            "line 1, column 5: float '1e999999999999999' is out of range");
}

TEST(LineProtocolTest, IntegersWithTheISuffix) {
  for (const auto& [text, want] :
       std::vector<std::pair<std::string, int64_t>>{{"5i", 5},
                                                    {"-5i", -5},
                                                    {"0i", 0},
                                                    {"-0i", 0},
                                                    {"007i", 7},
                                                    {"9223372036854775807i", kInt64Max},
                                                    {"-9223372036854775808i", kInt64Min}}) {
    absl::StatusOr<FieldValue> v = ValueOf(text);
    BASALT_ASSERT_OK(v) << text;
    EXPECT_EQ(v->type, FieldValue::kInteger) << text;
    EXPECT_EQ(v->i, want) << text;
  }
  EXPECT_EQ(ErrorOf("m v=9223372036854775808i"),
            "line 1, column 5: integer '9223372036854775808i' is out of range");
  EXPECT_EQ(ErrorOf("m v=-9223372036854775809i"),
            "line 1, column 5: integer '-9223372036854775809i' is out of range");
  for (std::string_view text : {"1.5i", "1e3i", "-i", "5ii", "1i5", "--5i", "5 i"}) {
    if (text == "5 i") {  // The space ends the value; "i" is then a bad timestamp.
      EXPECT_EQ(ErrorOf(StrCat("m v=", text)), "line 1, column 7: invalid timestamp 'i'");
      continue;
    }
    const bool integer = text.back() == 'i';
    EXPECT_EQ(
        ErrorOf(StrCat("m v=", text)),
        StrCat("line 1, column 5: invalid ", integer ? "integer" : "number", " '", text, "'"));
  }
}

TEST(LineProtocolTest, UnsignedWithTheUSuffix) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, uint64_t>>{
           {"5u", 5}, {"0u", 0}, {"18446744073709551615u", kUint64Max}}) {
    absl::StatusOr<FieldValue> v = ValueOf(text);
    BASALT_ASSERT_OK(v) << text;
    EXPECT_EQ(v->type, FieldValue::kUnsigned) << text;
    EXPECT_EQ(v->u, want) << text;
  }
  EXPECT_EQ(ErrorOf("m v=18446744073709551616u"),
            "line 1, column 5: unsigned integer '18446744073709551616u' is out of range");
  for (std::string_view text : {"-1u", "-0u", "1.5u", "1e3u", "5uu", ".u"}) {
    EXPECT_EQ(ErrorOf(StrCat("m v=", text)),
              StrCat("line 1, column 5: invalid unsigned integer '", text, "'"));
  }
  EXPECT_EQ(ErrorOf("m v=u"),
            "line 1, column 5: invalid field value 'u' (a number, a quoted string or a boolean)");
}

TEST(LineProtocolTest, Booleans) {
  for (std::string_view text : {"t", "T", "true", "True", "TRUE"}) {
    absl::StatusOr<FieldValue> v = ValueOf(text);
    BASALT_ASSERT_OK(v) << text;
    EXPECT_EQ(v->type, FieldValue::kBool) << text;
    EXPECT_TRUE(v->b) << text;
  }
  for (std::string_view text : {"f", "F", "false", "False", "FALSE"}) {
    absl::StatusOr<FieldValue> v = ValueOf(text);
    BASALT_ASSERT_OK(v) << text;
    EXPECT_EQ(v->type, FieldValue::kBool) << text;
    EXPECT_FALSE(v->b) << text;
  }
  for (std::string_view text : {"tRue", "TRue", "truE", "tru", "yes", "fAlse", "falsey", "t1"}) {
    EXPECT_EQ(ErrorOf(StrCat("m v=", text)), StrCat("line 1, column 5: invalid field value '", text,
                                                    "' (a number, a quoted string or a boolean)"));
  }
}

TEST(LineProtocolTest, RepeatedFieldLastValueWins) {
  // The first occurrence keeps its slot; the value is the last one, whatever its type.
  EXPECT_EQ(One("cpu a=1,b=2,a=3i,c=4,b=\"s\",a=t"),
            "line 1: \"cpu\" field \"a\"=bool true field \"b\"=string \"s\" field \"c\"=float 4 "
            "no time");
  EXPECT_EQ(One("cpu a=1,a=2"), "line 1: \"cpu\" field \"a\"=float 2 no time");
}

// ---- Timestamps --------------------------------------------------------------------------------

TEST(LineProtocolTest, ParsePrecision) {
  const std::vector<std::pair<std::string_view, Precision>> names = {
      {"", Precision::kNanoseconds},    {"n", Precision::kNanoseconds},
      {"ns", Precision::kNanoseconds},  {"u", Precision::kMicroseconds},
      {"us", Precision::kMicroseconds}, {"ms", Precision::kMilliseconds},
      {"s", Precision::kSeconds},       {"m", Precision::kMinutes},
      {"h", Precision::kHours}};
  for (const auto& [name, want] : names) {
    absl::StatusOr<Precision> p = ParsePrecision(name);
    BASALT_ASSERT_OK(p) << name;
    EXPECT_EQ(*p, want) << name;
  }
  for (std::string_view name : {"x", "NS", "S", "sec", "µs", "d", " s", "mss"}) {
    absl::StatusOr<Precision> p = ParsePrecision(name);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_EQ(ParsePrecision("x").status().message(),
            "unknown precision 'x' (n, ns, u, us, ms, s, m or h)");
}

TEST(LineProtocolTest, EveryPrecision) {
  const std::vector<std::pair<Precision, int64_t>> cases = {
      {Precision::kNanoseconds, 1},        {Precision::kMicroseconds, 1500},
      {Precision::kMilliseconds, 1500000}, {Precision::kSeconds, 1500000000},
      {Precision::kMinutes, 90000000000},  {Precision::kHours, 5400000000000}};
  for (const auto& [precision, want] : cases) {
    absl::StatusOr<int64_t> t = TimeOf("1500", precision);
    BASALT_ASSERT_OK(t);
    EXPECT_EQ(*t, want) << static_cast<int>(precision);
  }
}

TEST(LineProtocolTest, MissingTimestamp) {
  for (std::string_view body : {"m v=1", "m v=1 ", "m v=1 \t ", "m v=1\n", "m v=1 \r\n"}) {
    absl::StatusOr<Point> p = ParseOne(body);
    BASALT_ASSERT_OK(p) << absl::CEscape(ToAbsl(body));
    EXPECT_FALSE(p->timestamp_us.has_value());
  }
}

TEST(LineProtocolTest, NegativeTimestamps) {
  // Nanoseconds round toward negative infinity: -1 ns lies in the microsecond before the epoch.
  const std::vector<std::pair<std::string_view, int64_t>> ns = {
      {"-1", -1},
      {"-999", -1},
      {"-1000", -1},
      {"-1001", -2},
      {"999", 0},
      {"1999", 1},
      {"-0", 0},
      {"9223372036854775807", 9223372036854775},
      {"-9223372036854775808", -9223372036854776}};
  for (const auto& [text, want] : ns) {
    absl::StatusOr<int64_t> t = TimeOf(text, kNs);
    BASALT_ASSERT_OK(t) << text;
    EXPECT_EQ(*t, want) << text;
  }
  const std::vector<std::pair<Precision, int64_t>> others = {{Precision::kMicroseconds, -5},
                                                             {Precision::kMilliseconds, -5000},
                                                             {Precision::kSeconds, -5000000},
                                                             {Precision::kMinutes, -300000000},
                                                             {Precision::kHours, -18000000000}};
  for (const auto& [precision, want] : others) {
    absl::StatusOr<int64_t> t = TimeOf("-5", precision);
    BASALT_ASSERT_OK(t);
    EXPECT_EQ(*t, want) << static_cast<int>(precision);
  }
}

TEST(LineProtocolTest, TimestampRange) {
  absl::StatusOr<int64_t> t = TimeOf("-9223372036854775808", Precision::kMicroseconds);
  BASALT_ASSERT_OK(t);
  EXPECT_EQ(*t, kInt64Min);
  t = TimeOf("9223372036854", Precision::kSeconds);
  BASALT_ASSERT_OK(t);
  EXPECT_EQ(*t, 9223372036854000000);
  t = TimeOf("-2562047788", Precision::kHours);
  BASALT_ASSERT_OK(t);
  EXPECT_EQ(*t, -9223372036800000000);
  // Converting to microseconds overflows.
  EXPECT_EQ(ErrorOf("m v=1 9223372036855", Precision::kSeconds),
            "line 1, column 7: timestamp '9223372036855' is out of range");
  EXPECT_EQ(ErrorOf("m v=1 -9223372036854776", Precision::kMilliseconds),
            "line 1, column 7: timestamp '-9223372036854776' is out of range");
  EXPECT_EQ(ErrorOf("m v=1 153722867281", Precision::kMinutes),
            "line 1, column 7: timestamp '153722867281' is out of range");
  EXPECT_EQ(ErrorOf("m v=1 2562047789", Precision::kHours),
            "line 1, column 7: timestamp '2562047789' is out of range");
  // The text itself is beyond int64.
  EXPECT_EQ(ErrorOf("m v=1 9223372036854775808"),
            "line 1, column 7: timestamp '9223372036854775808' is out of range");
  EXPECT_EQ(ErrorOf("m v=1 -9223372036854775809"),
            "line 1, column 7: timestamp '-9223372036854775809' is out of range");
}

// ---- Errors ------------------------------------------------------------------------------------

struct ErrorCase {
  std::string body;
  std::string error;
};

void ExpectErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    EXPECT_EQ(ErrorOf(c.body), c.error) << absl::CEscape(c.body);
  }
}

TEST(LineProtocolTest, SeriesKeyErrors) {
  ExpectErrors({
      {",t=a v=1", "line 1, column 1: missing measurement"},
      {"  ,t=a v=1", "line 1, column 3: missing measurement"},
      {"cpu,=a v=1", "line 1, column 5: empty tag key"},
      {"cpu, v=1", "line 1, column 5: empty tag key"},
      {"cpu,a=b, v=1", "line 1, column 9: empty tag key"},
      {"cpu,a=b,,c=d v=1", "line 1, column 9: empty tag key"},
      {"cpu,", "line 1, column 5: empty tag key"},
      {"cpu,a v=1", "line 1, column 6: missing '=' after tag key"},
      {"cpu,a,b=c v=1", "line 1, column 6: missing '=' after tag key"},
      {"cpu,a", "line 1, column 6: missing '=' after tag key"},
      {"cpu,a= v=1", "line 1, column 7: empty tag value"},
      {"cpu,a=,b=c v=1", "line 1, column 7: empty tag value"},
      {"cpu,a=", "line 1, column 7: empty tag value"},
      {"cpu,a=b=c v=1", "line 1, column 8: unescaped '=' in tag value"},
      {"cpu,b=1,a=2,b=3 v=1", "line 1, column 13: duplicate tag key 'b'"},
      {"cpu,a=1,a=2,a=3 v=1", "line 1, column 9: duplicate tag key 'a'"},
      // The first key, in line order, that repeats an earlier one.
      {"cpu,b=1,a=2,a=3,b=4 v=1", "line 1, column 13: duplicate tag key 'a'"},
      // Keys compare unescaped.
      {"cpu,a\\ b=1,a\\ b=2 v=1", "line 1, column 12: duplicate tag key 'a b'"},
  });
}

TEST(LineProtocolTest, FieldErrors) {
  ExpectErrors({
      {"cpu", "line 1, column 4: missing fields"},
      {"cpu,a=b", "line 1, column 8: missing fields"},
      {"cpu   ", "line 1, column 7: missing fields"},
      {"cpu\r\n", "line 1, column 4: missing fields"},
      {"cpu =1", "line 1, column 5: empty field key"},
      {"cpu v=1,", "line 1, column 9: empty field key"},
      {"cpu v=1,,w=2", "line 1, column 9: empty field key"},
      {"cpu v=1, w=2", "line 1, column 9: empty field key"},
      {"cpu v", "line 1, column 6: missing '=' after field key"},
      {"cpu v w=1", "line 1, column 6: missing '=' after field key"},
      {"cpu v,w=1", "line 1, column 6: missing '=' after field key"},
      {"cpu v=", "line 1, column 7: missing field value"},
      {"cpu v= 5", "line 1, column 7: missing field value"},
      {"cpu v=,w=1", "line 1, column 7: missing field value"},
      {"cpu v=\r\n", "line 1, column 7: missing field value"},
      {"cpu v=1.2.3", "line 1, column 7: invalid number '1.2.3'"},
      {"cpu v=x",
       "line 1, column 7: invalid field value 'x' (a number, a quoted string or a boolean)"},
      {"cpu v=9223372036854775808i",
       "line 1, column 7: integer '9223372036854775808i' is out of range"},
      {"cpu v=1,w=1e400", "line 1, column 11: float '1e400' is out of range"},
      {"cpu s=\"abc", "line 1, column 7: unterminated string"},
      {"cpu s=\"abc\\\"", "line 1, column 7: unterminated string"},
      {"cpu s=\"a\"b", "line 1, column 10: unexpected text after the string field value"},
      {"cpu s=\"a\"\"b\"", "line 1, column 10: unexpected text after the string field value"},
      {"cpu s=a\"b\"",
       "line 1, column 7: invalid field value 'a\\\"b\\\"' (a number, a quoted string or a "
       "boolean)"},
  });
}

TEST(LineProtocolTest, TimestampErrors) {
  ExpectErrors({
      {"cpu v=1 5 6", "line 1, column 11: unexpected text after the timestamp"},
      {"cpu v=1 5   x", "line 1, column 13: unexpected text after the timestamp"},
      {"cpu v=1 5x", "line 1, column 9: invalid timestamp '5x'"},
      {"cpu v=1 1.5", "line 1, column 9: invalid timestamp '1.5'"},
      {"cpu v=1 1e9", "line 1, column 9: invalid timestamp '1e9'"},
      {"cpu v=1 -", "line 1, column 9: invalid timestamp '-'"},
      {"cpu v=1 +5", "line 1, column 9: invalid timestamp '+5'"},
      {"cpu v=1 --5", "line 1, column 9: invalid timestamp '--5'"},
      {"cpu v=1 9223372036854775808",
       "line 1, column 9: timestamp '9223372036854775808' is out of range"},
  });
}

TEST(LineProtocolTest, NameLengthLimits) {
  const std::string max(kMaxNameBytes, 'n');
  const std::string over(kMaxNameBytes + 1, 'n');
  EXPECT_EQ(ErrorOf(StrCat(max, ",", max, "=v ", max, "=1")), "OK");
  ExpectErrors({
      {StrCat(over, " v=1"), "line 1, column 1: measurement is longer than 256 bytes"},
      {StrCat("cpu,", over, "=v v=1"), "line 1, column 5: tag key is longer than 256 bytes"},
      {StrCat("cpu v=1,", over, "=1"), "line 1, column 9: field key is longer than 256 bytes"},
  });
  // The limit applies to the unescaped name: 256 escaped commas fit.
  std::string commas;
  for (size_t i = 0; i < kMaxNameBytes; ++i) commas += "\\,";
  absl::StatusOr<Point> p = ParseOne(StrCat(commas, ",", commas, "=v ", commas, "=1"));
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->measurement, std::string(kMaxNameBytes, ','));
  // Tag values have no limit of their own.
  EXPECT_EQ(ErrorOf(StrCat("cpu,t=", std::string(10000, 'v'), " v=1")), "OK");
}

TEST(LineProtocolTest, ErrorsNameTheirLine) {
  ExpectErrors({
      {"cpu v=1\ncpu v=2\ncpu v=x\n",
       "line 3, column 7: invalid field value 'x' (a number, a quoted string or a boolean)"},
      {"cpu v=1\r\ncpu v=\r\n", "line 2, column 7: missing field value"},
      {"# comment\n\n  cpu,a=1,a=2 v=1", "line 3, column 11: duplicate tag key 'a'"},
      {"cpu v=1\ncpu s=\"ab\\\"\ncpu v=3\n", "line 2, column 7: unterminated string"},
      {"a v=1\nb v=2\nc\n", "line 3, column 2: missing fields"},
      {"a v=1\n\n\n", "OK"},
  });
}

TEST(LineProtocolTest, AllOrNothing) {
  std::vector<Point> points(3);
  const absl::Status s = ParseLineProtocol("cpu v=1\ncpu v=2\ncpu v=3 x\ncpu v=4\n", kNs, &points);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(points.empty());
  // On success the previous contents are replaced.
  points.resize(3);
  BASALT_ASSERT_OK(ParseLineProtocol("cpu v=1\n", kNs, &points));
  EXPECT_EQ(points.size(), 1u);
}

TEST(LineProtocolTest, ErrorMessagesQuoteUserTextSafely) {
  // Non-printable bytes are escaped and long text is cut at 64 bytes.
  EXPECT_EQ(ErrorOf(StrCat("cpu v=\x01\xff", std::string(100, 'a'))),
            StrCat("line 1, column 7: invalid field value '\\001\\377", std::string(62, 'a'),
                   "...' (a number, a quoted string or a boolean)"));
  EXPECT_EQ(ErrorOf("cpu,k'=1,k'=2 v=1"), "line 1, column 10: duplicate tag key 'k\\''");
}

// ---- Random round trips and corrupted bodies ---------------------------------------------------

// Bytes that mean something somewhere in the grammar, drawn often so that random text hits them.
constexpr char kSpecialBytes[] = {',', '=', ' ', '\\', '"', '#', '\t', '\r', '\n',
                                  'i', 'u', 't', 'e',  '-', '.', '0',  '9'};

char RandomByte(Random* rnd) {
  if (rnd->OneIn(2)) return kSpecialBytes[rnd->Uniform(sizeof(kSpecialBytes))];
  return static_cast<char>(rnd->Uniform(256));
}

std::string RandomText(Random* rnd, size_t max_len, bool newlines) {
  const size_t n = 1 + rnd->Uniform(max_len);
  std::string s;
  while (s.size() < n) {
    const char c = RandomByte(rnd);
    if (c != '\n' || newlines) s.push_back(c);
  }
  return s;
}

// Line protocol cannot express every name: a backslash followed by one of `escapes` or by
// nothing would be read as (part of) an escape. Puts an 'x' after each such backslash.
std::string Expressible(std::string_view name, std::string_view escapes) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    out.push_back(name[i]);
    if (name[i] != '\\') continue;
    if (i + 1 < name.size() && escapes.find(name[i + 1]) == std::string_view::npos) {
      out.push_back(name[++i]);  // The pair is kept as written, both bytes.
    } else {
      out.push_back('x');
    }
  }
  return out;
}

// The serializer's escaping: a backslash before each byte of `escapes`.
std::string Escape(std::string_view name, std::string_view escapes) {
  std::string out;
  for (char c : name) {
    if (escapes.find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// A name of 1 to 256 bytes (never '\n') that the serializer can write. `first_forbidden` lists
// bytes that may not start it (a measurement starting with '#' is a comment; leading tabs before
// a measurement or the first field key are skipped).
std::string RandomName(Random* rnd, std::string_view escapes, std::string_view first_forbidden) {
  std::string name = RandomText(rnd, rnd->OneIn(4) ? 128 : 8, /*newlines=*/false);
  if (first_forbidden.find(name[0]) != std::string_view::npos) name[0] = 'n';
  return Expressible(name, escapes);
}

double RandomDouble(Random* rnd) {
  switch (rnd->Uniform(4)) {
    case 0:
      return static_cast<double>(rnd->UniformRange(-1000, 1000));
    case 1:
      return (rnd->NextDouble() - 0.5) * 1e6;
    case 2:
      while (true) {
        uint64_t bits = rnd->Next64();
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        if (std::isfinite(d)) return d;
      }
    default: {
      constexpr double kEdges[] = {0.0,
                                   -0.0,
                                   std::numeric_limits<double>::max(),
                                   std::numeric_limits<double>::lowest(),
                                   std::numeric_limits<double>::min(),
                                   std::numeric_limits<double>::denorm_min(),
                                   -std::numeric_limits<double>::denorm_min(),
                                   0.1,
                                   1e-300};
      return kEdges[rnd->Uniform(std::size(kEdges))];
    }
  }
}

// A random field value and its text.
std::pair<FieldValue, std::string> RandomFieldValue(Random* rnd) {
  FieldValue v;
  switch (rnd->Uniform(5)) {
    case 0:
      v.type = FieldValue::kFloat;
      v.f = RandomDouble(rnd);
      return {v, absl::StrFormat("%.17g", v.f)};
    case 1:
      v.type = FieldValue::kInteger;
      v.i = rnd->OneIn(4) ? (rnd->OneIn(2) ? kInt64Min : kInt64Max)
                          : static_cast<int64_t>(rnd->Next64() >> rnd->Uniform(64));
      if (rnd->OneIn(2) && v.i != kInt64Min) v.i = -v.i;
      return {v, StrCat(v.i, "i")};
    case 2:
      v.type = FieldValue::kUnsigned;
      v.u = rnd->OneIn(4) ? kUint64Max : rnd->Next64() >> rnd->Uniform(64);
      return {v, StrCat(v.u, "u")};
    case 3: {
      v.type = FieldValue::kString;
      v.s = rnd->OneIn(8) ? "" : RandomText(rnd, rnd->OneIn(4) ? 300 : 10, /*newlines=*/true);
      std::string text = "\"";
      for (char c : v.s) {
        if (c == '"' || c == '\\') text.push_back('\\');
        text.push_back(c);
      }
      return {v, text + "\""};
    }
    default: {
      constexpr std::string_view kSpellings[] = {"t", "T", "true",  "True",  "TRUE",
                                                 "f", "F", "false", "False", "FALSE"};
      const std::string_view spelling = kSpellings[rnd->Uniform(std::size(kSpellings))];
      v.type = FieldValue::kBool;
      v.b = spelling[0] == 't' || spelling[0] == 'T';
      return {v, std::string(spelling)};
    }
  }
}

// A random timestamp in `precision` units that fits in int64 microseconds, and that value.
std::pair<int64_t, int64_t> RandomTimestamp(Random* rnd, Precision precision) {
  int64_t factor = 1;  // Microseconds per unit; nanoseconds are divided instead.
  switch (precision) {
    case Precision::kNanoseconds:
    case Precision::kMicroseconds:
      break;
    case Precision::kMilliseconds:
      factor = 1000;
      break;
    case Precision::kSeconds:
      factor = 1000000;
      break;
    case Precision::kMinutes:
      factor = 60000000;
      break;
    case Precision::kHours:
      factor = 3600000000;
      break;
  }
  const int64_t t = rnd->OneIn(2) ? rnd->UniformRange(-100000, 100000)
                                  : rnd->UniformRange(kInt64Min / factor, kInt64Max / factor);
  if (precision != Precision::kNanoseconds) return {t, t * factor};
  // Floor division written differently from the parser: negate, round up, negate.
  const int64_t micros =
      t >= 0 ? t / 1000 : static_cast<int64_t>(-((-static_cast<__int128>(t) + 999) / 1000));
  return {t, micros};
}

std::string RandomBlanks(Random* rnd) {
  std::string s;
  for (uint64_t n = rnd->Uniform(3); n > 0; --n) s.push_back(rnd->OneIn(2) ? ' ' : '\t');
  return s;
}

struct Generated {
  std::string body;
  Precision precision = kNs;
  std::vector<Point> points;
};

// Appends `text` to the body, keeping count of its lines.
void Append(Generated* g, int* line, std::string_view text) {
  g->body.append(text);
  *line += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// A random point written as one line (without its line break) at line `*line` of g->body.
void AppendRandomPoint(Random* rnd, Generated* g, int* line) {
  Point p;
  p.line = *line;
  p.measurement = RandomName(rnd, ", ", "#\t");
  std::string text = StrCat(RandomBlanks(rnd), Escape(p.measurement, ", "));
  std::map<std::string, std::string> tags;
  for (uint64_t n = rnd->Uniform(5); n > 0; --n) {
    std::string key = RandomName(rnd, ",= ", "");
    if (tags.count(key) > 0) continue;
    std::string value = RandomName(rnd, ",= ", "");
    StrAppend(&text, ",", Escape(key, ",= "), "=", Escape(value, ",= "));
    tags.emplace(std::move(key), std::move(value));
  }
  p.tags.assign(tags.begin(), tags.end());  // std::map orders std::string keys bytewise.
  text += " " + RandomBlanks(rnd);
  for (uint64_t n = 1 + rnd->Uniform(4); n > 0; --n) {
    std::string key = RandomName(rnd, ",= ", "\t");
    bool repeated = false;
    for (const auto& field : p.fields) repeated |= field.first == key;
    if (repeated) continue;
    auto [value, value_text] = RandomFieldValue(rnd);
    StrAppend(&text, p.fields.empty() ? "" : ",", Escape(key, ",= "), "=", value_text);
    p.fields.emplace_back(std::move(key), std::move(value));
  }
  if (!rnd->OneIn(4)) {
    const auto [t, micros] = RandomTimestamp(rnd, g->precision);
    StrAppend(&text, " ", RandomBlanks(rnd), t);
    p.timestamp_us = micros;
  }
  if (rnd->OneIn(4)) text += " " + RandomBlanks(rnd);
  Append(g, line, text);
  g->points.push_back(std::move(p));
}

Generated RandomBody(Random* rnd) {
  constexpr Precision kPrecisions[] = {Precision::kNanoseconds,  Precision::kMicroseconds,
                                       Precision::kMilliseconds, Precision::kSeconds,
                                       Precision::kMinutes,      Precision::kHours};
  Generated g;
  g.precision = kPrecisions[rnd->Uniform(std::size(kPrecisions))];
  int line = 1;
  const uint64_t n = 1 + rnd->Uniform(20);
  for (uint64_t i = 0; i < n; ++i) {
    // Blank lines and comments in between.
    while (rnd->OneIn(4)) {
      const std::string skipped =
          rnd->OneIn(2) ? RandomBlanks(rnd)
                        : StrCat(RandomBlanks(rnd), "#", RandomText(rnd, 20, /*newlines=*/false));
      Append(&g, &line, skipped + (rnd->OneIn(2) ? "\n" : "\r\n"));
    }
    AppendRandomPoint(rnd, &g, &line);
    if (i + 1 < n || rnd->OneIn(2)) Append(&g, &line, rnd->OneIn(2) ? "\n" : "\r\n");
  }
  return g;
}

TEST(LineProtocolRandomTest, RoundTrip) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(StrCat("seed=", seed, " (replay with BASALT_TEST_SEED=", seed, ")"));
  Random rnd(seed);
  for (int iteration = 0; iteration < 500; ++iteration) {
    const Generated g = RandomBody(&rnd);
    std::vector<Point> points;
    BASALT_ASSERT_OK(ParseLineProtocol(g.body, g.precision, &points))
        << "iteration " << iteration << " body " << absl::CEscape(g.body);
    ASSERT_EQ(points.size(), g.points.size()) << "iteration " << iteration;
    for (size_t i = 0; i < points.size(); ++i) {
      ASSERT_EQ(Describe(points[i]), Describe(g.points[i]))
          << "iteration " << iteration << " body " << absl::CEscape(g.body);
    }
  }
}

// A copy of some bytes that ends where an inaccessible page begins, so that reading even one
// byte past the end faults in a normal build, without a sanitizer.
class GuardedCopy {
 public:
  explicit GuardedCopy(std::string_view data) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (data.size() + page - 1) / page;
    size_ = (data_pages + 1) * page;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) std::abort();
    base_ = static_cast<char*>(p);
    char* guard = base_ + data_pages * page;
    if (mprotect(guard, page, PROT_NONE) != 0) std::abort();
    if (!data.empty()) std::memcpy(guard - data.size(), data.data(), data.size());
    view_ = std::string_view(guard - data.size(), data.size());
  }
  GuardedCopy(const GuardedCopy&) = delete;
  GuardedCopy& operator=(const GuardedCopy&) = delete;
  ~GuardedCopy() { munmap(base_, size_); }

  std::string_view view() const { return view_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  std::string_view view_;
};

TEST(LineProtocolRandomTest, GuardedCopyCatchesOverruns) {
  // The corruption test relies on this: one byte past the end is a crash, not a silent read.
  const GuardedCopy copy("abc");
  EXPECT_EQ(copy.view(), "abc");
  EXPECT_DEATH(
      {
        const volatile char* end = copy.view().data() + copy.view().size();
        std::printf("%c\n", *end);
      },
      "");
}

// Parses `body` (bounded by a guard page) and checks that the result is sound: OK with points
// that keep the documented invariants, or INVALID_ARGUMENT naming a line and column that exist.
void ExpectCleanResult(std::string_view body, Precision precision) {
  const GuardedCopy copy(body);
  std::vector<Point> points(1);
  const absl::Status s = ParseLineProtocol(copy.view(), precision, &points);
  if (!s.ok()) {
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    ASSERT_TRUE(points.empty());
    const std::string message(s.message());
    int line = 0;
    int column = 0;
    ASSERT_EQ(std::sscanf(message.c_str(), "line %d, column %d: ", &line, &column), 2) << message;
    std::vector<size_t> line_sizes = {0};
    for (char c : body) {
      if (c == '\n') {
        line_sizes.push_back(0);
      } else {
        ++line_sizes.back();
      }
    }
    ASSERT_GE(line, 1) << message;
    ASSERT_LE(static_cast<size_t>(line), line_sizes.size()) << message;
    ASSERT_GE(column, 1) << message;
    ASSERT_LE(static_cast<size_t>(column), line_sizes[line - 1] + 1) << message;
    return;
  }
  int last_line = 0;
  for (const Point& p : points) {
    ASSERT_GT(p.line, last_line);
    last_line = p.line;
    ASSERT_FALSE(p.measurement.empty());
    ASSERT_LE(p.measurement.size(), kMaxNameBytes);
    for (size_t i = 0; i < p.tags.size(); ++i) {
      ASSERT_FALSE(p.tags[i].first.empty());
      ASSERT_LE(p.tags[i].first.size(), kMaxNameBytes);
      ASSERT_FALSE(p.tags[i].second.empty());
      if (i > 0) {
        ASSERT_LT(p.tags[i - 1].first, p.tags[i].first);
      }
    }
    ASSERT_FALSE(p.fields.empty());
    for (size_t i = 0; i < p.fields.size(); ++i) {
      ASSERT_FALSE(p.fields[i].first.empty());
      ASSERT_LE(p.fields[i].first.size(), kMaxNameBytes);
      for (size_t j = 0; j < i; ++j) ASSERT_NE(p.fields[j].first, p.fields[i].first);
      const FieldValue& v = p.fields[i].second;
      if (v.type == FieldValue::kFloat) {
        ASSERT_TRUE(std::isfinite(v.f));
      }
      if (v.type == FieldValue::kString) {
        ASSERT_LE(v.s.size(), kMaxStringFieldBytes);
      }
    }
  }
}

TEST(LineProtocolRandomTest, CorruptedBodiesFailCleanly) {
  // Every prefix, and every byte replaced by each special byte, of one body using every feature.
  const std::string body =
      "# comment\r\n"
      " c\\ p\\,u,t\\=k=v\\ 1,u=w f=-1.5e3,i=-5i,u=5u,b=TRUE,s=\"a\\\"b\\\\c\nd\" -1700\r\n"
      "\n"
      "m\\x v=1\n";
  std::vector<Point> points;
  BASALT_ASSERT_OK(ParseLineProtocol(body, kNs, &points));
  ASSERT_EQ(points.size(), 2u);
  for (size_t n = 0; n <= body.size(); ++n) {
    ASSERT_NO_FATAL_FAILURE(ExpectCleanResult(body.substr(0, n), kNs)) << "prefix " << n;
  }
  for (size_t i = 0; i < body.size(); ++i) {
    for (char c : kSpecialBytes) {
      std::string changed = body;
      changed[i] = c;
      ASSERT_NO_FATAL_FAILURE(ExpectCleanResult(changed, kNs)) << "byte " << i << " to " << c;
    }
  }

  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(StrCat("seed=", seed, " (replay with BASALT_TEST_SEED=", seed, ")"));
  Random rnd(seed);
  for (int iteration = 0; iteration < 300; ++iteration) {
    const Generated g = RandomBody(&rnd);
    for (int round = 0; round < 10; ++round) {
      std::string corrupt = g.body;
      switch (rnd.Uniform(4)) {
        case 0:
          corrupt.resize(rnd.Uniform(corrupt.size() + 1));
          break;
        case 1:
          for (uint64_t n = 1 + rnd.Uniform(4); n > 0; --n) {
            corrupt[rnd.Uniform(corrupt.size())] = RandomByte(&rnd);
          }
          break;
        case 2:
          corrupt.insert(rnd.Uniform(corrupt.size() + 1), 1, RandomByte(&rnd));
          break;
        default:
          corrupt.erase(rnd.Uniform(corrupt.size()), 1 + rnd.Uniform(8));
          break;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectCleanResult(corrupt, g.precision))
          << "iteration " << iteration << " body " << absl::CEscape(corrupt);
    }
  }
}

}  // namespace line_protocol_test_file
}  // namespace
}  // namespace basalt::tsdb
