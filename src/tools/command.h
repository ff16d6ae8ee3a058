#pragma once

// The command framework of the `basalt` CLI: `basalt <command> <action> <args> [--flags]`.
//
// A Command (table, perf, ...) groups Actions (create, scan, ...) and, for verbs of three words
// (`basalt tablet change_config add_replica`), nested groups: Commands of their own whose actions
// are reached through the group's name. An Action declares its positional arguments and the
// gflags it reads (defined in the .cc of its command); RunTool dispatches, checks the argument
// count, prints help at every level (`basalt --help`, `basalt table --help`,
// `basalt table create --help`, `basalt tablet change_config --help`) and turns errors into
// messages on stderr and exit code 1. Flags are parsed by gflags before RunTool; what gflags
// leaves is positional.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace basalt::tools {

struct ArgDef {
  std::string name;  // Shown as <name>.
  std::string help;
  // May be left out (only trailing arguments); shown as [<name>]. Absent ones are not in
  // ActionContext::args.
  bool optional = false;
};

// What an action's run function gets: the positional arguments (one per ArgDef, in order) and
// where to print.
struct ActionContext {
  std::vector<std::string> args;
  std::ostream* out;
  std::ostream* err;
};

struct Action {
  // Empty for the one action of a command that is a verb by itself (`basalt sql <masters>`).
  std::string name;
  std::string summary;      // One line, no final period; starts with a verb.
  std::string description;  // Optional paragraphs for --help.
  std::vector<ArgDef> args;
  std::vector<std::string> flags;  // gflags names the action reads.
  std::function<absl::Status(const ActionContext&)> run;
};

struct Command {
  std::string name;
  std::string summary;
  std::vector<Action> actions;
  // Nested groups (`change_config` of `tablet`). A name is used once among a command's actions
  // and groups together.
  std::vector<Command> groups;
};

// Runs `args` (argv without the program name and without flags) against `commands`. `help` is
// true when --help (or -h) was given. Returns the process exit code: 0 on success and for help,
// 1 on errors (reported on *err).
int RunTool(const std::vector<Command>& commands, const std::vector<std::string>& args, bool help,
            std::ostream* out, std::ostream* err);

// Removes --help, -help, -h and --helpfull style help requests from argv (so gflags does not
// print its own help); returns whether one was there.
bool ExtractHelpFlag(int* argc, char** argv);

// Help texts (exposed for tests). `path` is the words that lead to the command or the action's
// group after the tool's name: "table", "tablet change_config".
std::string ToolHelp(const std::vector<Command>& commands);
std::string CommandHelp(const std::string& path, const Command& command);
std::string ActionHelp(const std::string& path, const Action& action);

}  // namespace basalt::tools
