// The `basalt` command-line tool: `basalt <command> <action> <args> [flags]`; see docs/cli.md.

#include <gflags/gflags.h>

#include <iostream>
#include <string>
#include <vector>

#include "tools/command.h"
#include "tools/tool_common.h"

int main(int argc, char** argv) {
  const bool help = basalt::tools::ExtractHelpFlag(&argc, argv);
  gflags::SetUsageMessage("basalt <command> <action> [<args>] [flags]; basalt --help for more");
  gflags::ParseCommandLineFlags(&argc, &argv, /*remove_flags=*/true);
  std::vector<std::string> args(argv + 1, argv + argc);
  return basalt::tools::RunTool(basalt::tools::AllCommands(), args, help, &std::cout, &std::cerr);
}
