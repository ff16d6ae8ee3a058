#include "tools/output.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/status_test_util.h"
#include "tools/command.h"
#include "tools/tool_common.h"

namespace basalt::tools {
namespace {
namespace output_test_file {

void WriteSample(TableWriter::Format format, std::ostream* out) {
  TableWriter w(format, {"key", "name", "ok"}, out);
  w.AddRow({Cell::Number("1"), Cell::String("a,\"b\""), Cell::Bool(true)});
  w.AddRow({Cell::Number("100"), Cell::Null(), Cell::Bool(false)});
  w.Finish();
}

TEST(OutputTest, Table) {
  std::ostringstream out;
  WriteSample(TableWriter::kTable, &out);
  EXPECT_EQ(out.str(),
            "key | name  | ok\n"
            "----+-------+------\n"
            "  1 | a,\"b\" | true\n"
            "100 | NULL  | false\n");
}

TEST(OutputTest, Csv) {
  std::ostringstream out;
  WriteSample(TableWriter::kCsv, &out);
  EXPECT_EQ(out.str(), "key,name,ok\n1,\"a,\"\"b\"\"\",true\n100,,false\n");
}

TEST(OutputTest, Json) {
  std::ostringstream out;
  WriteSample(TableWriter::kJson, &out);
  EXPECT_EQ(out.str(),
            "[\n  {\"key\": 1, \"name\": \"a,\\\"b\\\"\", \"ok\": true},\n"
            "  {\"key\": 100, \"name\": null, \"ok\": false}\n]\n");
  std::ostringstream empty;
  TableWriter(TableWriter::kJson, {"a"}, &empty).Finish();
  EXPECT_EQ(empty.str(), "[]\n");
}

TEST(OutputTest, FormatsAndQuoting) {
  BASALT_EXPECT_OK(TableWriter::ParseFormat("csv"));
  EXPECT_FALSE(TableWriter::ParseFormat("xml").ok());
  EXPECT_EQ(JsonQuote("a\nb\x01"), "\"a\\nb\\u0001\"");
  EXPECT_EQ(CsvQuote("plain"), "plain");
  EXPECT_EQ(FormatDecimal(12345, 2), "123.45");
  EXPECT_EQ(FormatDecimal(-5, 3), "-0.005");
  EXPECT_EQ(FormatDecimal(7, 0), "7");
}

// A fake command tree for the framework.
std::vector<Command> FakeCommands(std::vector<std::string>* got) {
  Action echo{"echo", "Print the arguments", "", {{"a", "first"}, {"b", "second"}}, {}, nullptr};
  echo.run = [got](const ActionContext& ctx) {
    *got = ctx.args;
    *ctx.out << "ok\n";
    return absl::OkStatus();
  };
  Action fail{
      "fail", "Fail",
      "",     {},
      {},     [](const ActionContext&) {
                return absl::NotFoundError("table 'x' not found"); }};
  Action nested{"deep", "Run a nested action", "", {{"x", "only"}}, {}, nullptr};
  nested.run = [got](const ActionContext& ctx) {
    *got = ctx.args;
    *ctx.out << "deep\n";
    return absl::OkStatus();
  };
  Action direct{
      "", "Run the command itself", "", {{"m", "required"}, {"q", "optional", true}}, {}, nullptr};
  direct.run = [got](const ActionContext& ctx) {
    *got = ctx.args;
    return absl::OkStatus();
  };
  return {Command{"grp", "A group", {echo, fail}},
          Command{"box", "Nested groups", {}, {Command{"sub", "A nested group", {nested}}}},
          Command{"verb", "A command without actions", {direct}}};
}

int RunFake(const std::vector<std::string>& args, bool help, std::string* out, std::string* err,
            std::vector<std::string>* got) {
  std::ostringstream o, e;
  const int rc = RunTool(FakeCommands(got), args, help, &o, &e);
  *out = o.str();
  *err = e.str();
  return rc;
}

TEST(CommandTest, DispatchesAndReportsErrors) {
  std::string out, err;
  std::vector<std::string> got;
  EXPECT_EQ(RunFake({"grp", "echo", "x", "y"}, false, &out, &err, &got), 0);
  EXPECT_EQ(got, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(out, "ok\n");
  EXPECT_EQ(RunFake({"grp", "echo", "x"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("missing argument <b>"), std::string::npos) << err;
  EXPECT_NE(err.find("Usage: basalt grp echo <a> <b>"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"grp", "echo", "x", "y", "z"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("unexpected argument 'z'"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"nope"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("unknown command 'nope'"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"grp", "nope"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("unknown action 'nope'"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"grp", "fail"}, false, &out, &err, &got), 1);
  EXPECT_EQ(err, "Error: table 'x' not found\n");
  EXPECT_EQ(RunFake({}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("Usage: basalt <command>"), std::string::npos);
}

// A command that is a verb by itself (`basalt sql <masters> [<query>]`), with an optional
// argument.
TEST(CommandTest, ACommandWithoutActionsTakesItsArgumentsDirectly) {
  std::string out, err;
  std::vector<std::string> got;
  EXPECT_EQ(RunFake({"verb", "m1"}, false, &out, &err, &got), 0);
  EXPECT_EQ(got, (std::vector<std::string>{"m1"}));
  EXPECT_EQ(RunFake({"verb", "m1", "q1"}, false, &out, &err, &got), 0);
  EXPECT_EQ(got, (std::vector<std::string>{"m1", "q1"}));
  EXPECT_EQ(RunFake({"verb"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("basalt verb: missing argument <m>"), std::string::npos) << err;
  EXPECT_NE(err.find("Usage: basalt verb <m> [<q>]"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"verb", "a", "b", "c"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("unexpected argument 'c'"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"verb"}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("Usage: basalt verb <m> [<q>]"), std::string::npos) << out;
  EXPECT_NE(out.find("Run the command itself"), std::string::npos) << out;
}

TEST(CommandTest, HelpAtEveryLevel) {
  std::string out, err;
  std::vector<std::string> got;
  EXPECT_EQ(RunFake({}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("  grp    A group"), std::string::npos) << out;  // Aligned with "verb".
  EXPECT_NE(out.find("  verb   A command without actions"), std::string::npos) << out;
  EXPECT_EQ(RunFake({"grp"}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("  echo   Print the arguments"), std::string::npos) << out;
  EXPECT_EQ(RunFake({"grp", "echo"}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("Usage: basalt grp echo <a> <b>"), std::string::npos) << out;
  EXPECT_NE(out.find("<a>   first"), std::string::npos) << out;
  EXPECT_TRUE(got.empty());  // Help never runs the action.
}

TEST(CommandTest, NestedGroups) {
  std::string out, err;
  std::vector<std::string> got;
  EXPECT_EQ(RunFake({"box", "sub", "deep", "v"}, false, &out, &err, &got), 0);
  EXPECT_EQ(got, (std::vector<std::string>{"v"}));
  EXPECT_EQ(out, "deep\n");
  // The command's listing shows the nested actions with their group's name.
  EXPECT_EQ(RunFake({"box"}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("  sub deep   Run a nested action"), std::string::npos) << out;
  EXPECT_EQ(RunFake({"box", "sub"}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("Usage: basalt box sub <action>"), std::string::npos) << out;
  EXPECT_NE(out.find("A nested group"), std::string::npos) << out;
  EXPECT_EQ(RunFake({"box", "sub", "deep"}, true, &out, &err, &got), 0);
  EXPECT_NE(out.find("Usage: basalt box sub deep <x>"), std::string::npos) << out;
  EXPECT_EQ(RunFake({"box", "sub"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("Usage: basalt box sub <action>"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"box", "sub", "nope"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("basalt box sub: unknown action 'nope'"), std::string::npos) << err;
  EXPECT_EQ(RunFake({"box", "sub", "deep"}, false, &out, &err, &got), 1);
  EXPECT_NE(err.find("basalt box sub deep: missing argument <x>"), std::string::npos) << err;
  EXPECT_NE(err.find("Usage: basalt box sub deep <x>"), std::string::npos) << err;
}

// Every action of `c` and of its groups: each flag it lists is defined.
void CheckFlagsDefined(const std::string& path, const Command& c) {
  for (const Action& a : c.actions) {
    const std::string help = ActionHelp(path, a);
    for (const std::string& f : a.flags) {
      EXPECT_NE(help.find("--" + f + "=<"), std::string::npos)
          << path << " " << a.name << " flag " << f << " is not a defined flag";
    }
  }
  for (const Command& g : c.groups) CheckFlagsDefined(path + " " + g.name, g);
}

TEST(CommandTest, RealCommandsHaveHelpForEveryFlag) {
  for (const Command& c : AllCommands()) CheckFlagsDefined(c.name, c);
}

}  // namespace output_test_file
}  // namespace
}  // namespace basalt::tools
