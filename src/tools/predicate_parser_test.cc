#include "tools/predicate_parser.h"
#include "common/status_test_util.h"

#include <gtest/gtest.h>

namespace basalt::tools {
namespace {
namespace predicate_parser_test_file {

using client::Predicate;

TEST(PredicateParserTest, ParsesConjunction) {
  auto p = ParsePredicates(
      "key >= 5 AND key <= 600 and host IN ('a', 'b') AND v IS NULL AND w is not null AND x = "
      "-1.5 AND y > 2 AND z < 3 AND b BETWEEN 1 AND 9");
  BASALT_ASSERT_OK(p);
  ASSERT_EQ(p->size(), 10u);
  EXPECT_EQ((*p)[0].column, "key");
  EXPECT_EQ((*p)[0].op, Predicate::GREATER_EQUAL);
  EXPECT_EQ((*p)[1].op, Predicate::LESS_EQUAL);
  EXPECT_EQ((*p)[2].kind, PredicateDef::kInList);
  ASSERT_EQ((*p)[2].values.size(), 2u);
  EXPECT_EQ((*p)[2].values[1].text, "b");
  EXPECT_EQ((*p)[3].kind, PredicateDef::kIsNull);
  EXPECT_EQ((*p)[4].kind, PredicateDef::kIsNotNull);
  EXPECT_EQ((*p)[5].op, Predicate::EQUAL);
  EXPECT_EQ((*p)[5].values[0].kind, Literal::kFloat);
  EXPECT_EQ((*p)[6].op, Predicate::GREATER);
  EXPECT_EQ((*p)[7].op, Predicate::LESS);
  EXPECT_EQ((*p)[8].op, Predicate::GREATER_EQUAL);
  EXPECT_EQ((*p)[9].op, Predicate::LESS_EQUAL);
  EXPECT_EQ((*p)[9].values[0].text, "9");
}

TEST(PredicateParserTest, EmptyIsNoPredicates) {
  auto p = ParsePredicates("   ");
  BASALT_ASSERT_OK(p);
  EXPECT_TRUE(p->empty());
}

void ExpectError(const std::string& expr, const std::string& message, size_t position) {
  auto r = ParsePredicates(expr);
  ASSERT_FALSE(r.ok()) << expr;
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find(message), std::string::npos) << msg;
  EXPECT_NE(msg.find("at position " + std::to_string(position) + ":"), std::string::npos) << msg;
}

TEST(PredicateParserTest, BadExpressions) {
  ExpectError("key >", "expected a value", 6);
  ExpectError("key != 3", "expected <, <=, =, >=, >, IN, BETWEEN or IS [NOT] NULL, got '!='", 5);
  ExpectError("key = 3 OR key = 4", "expected AND or the end of the predicates, got 'OR'", 9);
  ExpectError("key = NULL", "use IS NULL", 7);
  ExpectError("key IN (1, 2", "expected ')', got end of input", 13);
  ExpectError("key IS 3", "expected NULL, got '3'", 8);
  ExpectError("5 = key", "expected a column name, got '5'", 1);
  ExpectError("s = 'abc", "unterminated quoted text", 5);
}

}  // namespace predicate_parser_test_file
}  // namespace
}  // namespace basalt::tools
