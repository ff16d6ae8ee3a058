#include "tools/command.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstring>

#include "common/strings.h"

namespace basalt::tools {

namespace {

constexpr char kTool[] = "basalt";
// Flags not tied to one action (defined in tool_common.cc), listed by `basalt --help`.
constexpr const char* kGlobalFlags[] = {"timeout_ms"};

// "  name<pad>  summary" lines with the names aligned.
template <typename T>
std::string NameList(const std::vector<T>& items) {
  size_t width = 0;
  for (const auto& i : items) width = std::max(width, i.name.size());
  std::string out;
  for (const auto& i : items) {
    StrAppend(&out, "  ", i.name, std::string(width - i.name.size() + 3, ' '), i.summary, "\n");
  }
  return out;
}

std::string UsageLine(const Command& c, const Action& a) {
  std::string line = StrCat("Usage: ", kTool, " ", c.name, " ", a.name);
  for (const auto& arg : a.args) StrAppend(&line, " <", arg.name, ">");
  if (!a.flags.empty()) StrAppend(&line, " [flags]");
  return line;
}

std::string FlagHelp(const std::string& name) {
  gflags::CommandLineFlagInfo info;
  if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) return StrCat("  --", name, "\n");
  std::string value =
      info.type == "string" ? StrCat("\"", info.default_value, "\"") : info.default_value;
  return StrCat("  --", name, "=<", info.type, ">  (default: ", value, ")\n      ",
                info.description, "\n");
}

template <typename T>
const T* FindByName(const std::vector<T>& items, const std::string& name) {
  for (const auto& i : items) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

}  // namespace

std::string ToolHelp(const std::vector<Command>& commands) {
  std::string global;
  for (const char* flag : kGlobalFlags) StrAppend(&global, FlagHelp(flag));
  return StrCat("Usage: ", kTool, " <command> <action> [<args>] [flags]\n\n",
                "Basalt command-line tool: runs local clusters, manages tables and servers.\n\n",
                "Commands:\n", NameList(commands), "\nGlobal flags:\n", global, "\nRun '", kTool,
                " <command> --help' for a command's actions, and '", kTool,
                " <command> <action> --help' for an action's arguments and flags.\n");
}

std::string CommandHelp(const Command& c) {
  return StrCat("Usage: ", kTool, " ", c.name, " <action> [<args>] [flags]\n\n", c.summary,
                "\n\nActions:\n", NameList(c.actions), "\nRun '", kTool, " ", c.name,
                " <action> --help' for an action's arguments and flags.\n");
}

std::string ActionHelp(const Command& c, const Action& a) {
  std::string out = StrCat(UsageLine(c, a), "\n\n", a.summary, "\n");
  if (!a.description.empty()) StrAppend(&out, "\n", a.description, "\n");
  if (!a.args.empty()) {
    size_t width = 0;
    for (const auto& arg : a.args) width = std::max(width, arg.name.size() + 2);
    StrAppend(&out, "\nArguments:\n");
    for (const auto& arg : a.args) {
      const std::string n = StrCat("<", arg.name, ">");
      StrAppend(&out, "  ", n, std::string(width - n.size() + 3, ' '), arg.help, "\n");
    }
  }
  if (!a.flags.empty()) {
    StrAppend(&out, "\nFlags:\n");
    for (const auto& f : a.flags) StrAppend(&out, FlagHelp(f));
  }
  return out;
}

int RunTool(const std::vector<Command>& commands, const std::vector<std::string>& args, bool help,
            std::ostream* out, std::ostream* err) {
  if (args.empty() || args[0] == "help") {
    *(help || !args.empty() ? out : err) << ToolHelp(commands);
    return help || !args.empty() ? 0 : 1;
  }
  const Command* c = FindByName(commands, args[0]);
  if (c == nullptr) {
    *err << kTool << ": unknown command '" << args[0] << "'\n\n" << ToolHelp(commands);
    return 1;
  }
  if (args.size() == 1) {
    *(help ? out : err) << CommandHelp(*c);
    return help ? 0 : 1;
  }
  const Action* a = FindByName(c->actions, args[1]);
  if (a == nullptr) {
    *err << kTool << " " << c->name << ": unknown action '" << args[1] << "'\n\n"
         << CommandHelp(*c);
    return 1;
  }
  if (help) {
    *out << ActionHelp(*c, *a);
    return 0;
  }
  const std::vector<std::string> positional(args.begin() + 2, args.end());
  if (positional.size() != a->args.size()) {
    const bool missing = positional.size() < a->args.size();
    *err << kTool << " " << c->name << " " << a->name << ": "
         << (missing ? StrCat("missing argument <", a->args[positional.size()].name, ">")
                     : StrCat("unexpected argument '", positional[a->args.size()], "'"))
         << "\n"
         << UsageLine(*c, *a) << "\nRun '" << kTool << " " << c->name << " " << a->name
         << " --help' for more.\n";
    return 1;
  }
  const absl::Status s = a->run(ActionContext{positional, out, err});
  if (!s.ok()) {
    *err << "Error: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

bool ExtractHelpFlag(int* argc, char** argv) {
  bool help = false;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-help") == 0 ||
        std::strcmp(a, "-h") == 0 || std::strcmp(a, "--helpfull") == 0) {
      help = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return help;
}

}  // namespace basalt::tools
