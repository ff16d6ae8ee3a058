#include "tools/command.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/strings.h"

namespace basalt::tools {

namespace {

constexpr char kTool[] = "basalt";
// Flags not tied to one action (defined in tool_common.cc), listed by `basalt --help`.
constexpr const char* kGlobalFlags[] = {"timeout_ms", "frame_rpc", "reply_spin_us"};

// A (name, summary) pair of a help listing.
using NamedSummary = std::pair<std::string, std::string>;

// "  name<pad>  summary" lines with the names aligned.
std::string NameList(const std::vector<NamedSummary>& items) {
  size_t width = 0;
  for (const auto& [name, summary] : items) width = std::max(width, name.size());
  std::string out;
  for (const auto& [name, summary] : items) {
    StrAppend(&out, "  ", name, std::string(width - name.size() + 3, ' '), summary, "\n");
  }
  return out;
}

// The actions of `c` and, after them, those of its groups, named from `c` on
// ("leader_step_down", "change_config add_replica"): one listing shows every verb of a command.
void ListActions(const Command& c, const std::string& prefix, std::vector<NamedSummary>* out) {
  for (const auto& a : c.actions) out->emplace_back(StrCat(prefix, a.name), a.summary);
  for (const auto& g : c.groups) ListActions(g, StrCat(prefix, g.name, " "), out);
}

std::string UsageLine(const std::string& path, const Action& a) {
  std::string line = StrCat("Usage: ", kTool, " ", path, a.name.empty() ? "" : " ", a.name);
  for (const auto& arg : a.args) {
    StrAppend(&line, arg.optional ? " [<" : " <", arg.name, arg.optional ? ">]" : ">");
  }
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

// The action of a command that is a verb by itself, or null.
const Action* DirectAction(const Command& c) {
  return c.actions.size() == 1 && c.actions[0].name.empty() ? &c.actions[0] : nullptr;
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
  std::vector<NamedSummary> listing;
  for (const auto& c : commands) listing.emplace_back(c.name, c.summary);
  return StrCat("Usage: ", kTool, " <command> <action> [<args>] [flags]\n\n",
                "Basalt command-line tool: runs local clusters, manages tables and servers.\n\n",
                "Commands:\n", NameList(listing), "\nGlobal flags:\n", global, "\nRun '", kTool,
                " <command> --help' for a command's actions, and '", kTool,
                " <command> <action> --help' for an action's arguments and flags.\n");
}

std::string CommandHelp(const std::string& path, const Command& c) {
  if (const Action* a = DirectAction(c)) return ActionHelp(path, *a);
  std::vector<NamedSummary> listing;
  ListActions(c, "", &listing);
  return StrCat("Usage: ", kTool, " ", path, " <action> [<args>] [flags]\n\n", c.summary,
                "\n\nActions:\n", NameList(listing), "\nRun '", kTool, " ", path,
                " <action> --help' for an action's arguments and flags.\n");
}

std::string ActionHelp(const std::string& path, const Action& a) {
  std::string out = StrCat(UsageLine(path, a), "\n\n", a.summary, "\n");
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
  // Descend through nested groups: `tablet change_config add_replica` ends at change_config.
  std::string path = c->name;
  size_t next = 1;
  for (; next < args.size(); ++next) {
    const Command* g = FindByName(c->groups, args[next]);
    if (g == nullptr) break;
    c = g;
    StrAppend(&path, " ", g->name);
  }
  const Action* a = DirectAction(*c);
  if (a != nullptr) {
    --next;  // Everything after the command is positional.
  } else if (next == args.size()) {
    *(help ? out : err) << CommandHelp(path, *c);
    return help ? 0 : 1;
  } else {
    a = FindByName(c->actions, args[next]);
  }
  if (a == nullptr) {
    *err << kTool << " " << path << ": unknown action '" << args[next] << "'\n\n"
         << CommandHelp(path, *c);
    return 1;
  }
  if (help) {
    *out << ActionHelp(path, *a);
    return 0;
  }
  const std::vector<std::string> positional(args.begin() + next + 1, args.end());
  size_t required = 0;
  while (required < a->args.size() && !a->args[required].optional) ++required;
  if (positional.size() < required || positional.size() > a->args.size()) {
    const bool missing = positional.size() < required;
    const std::string name = a->name.empty() ? path : StrCat(path, " ", a->name);
    *err << kTool << " " << name << ": "
         << (missing ? StrCat("missing argument <", a->args[positional.size()].name, ">")
                     : StrCat("unexpected argument '", positional[a->args.size()], "'"))
         << "\n"
         << UsageLine(path, *a) << "\nRun '" << kTool << " " << name << " --help' for more.\n";
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
