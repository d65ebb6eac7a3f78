// gpuscope: the command line. One subcommand per cmd_*.cpp, each with the
// function that declares its options next to the command itself; main is
// the table of them.
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "container.h"
#include "gpuscope_version.h"
#include "messages.h"
#include "progress_bar.h"
#include "settings.h"

namespace {

using gpuscope::cli::Subcommand;

std::string version_text() {
  return fmt::format("gpuscope {} (trace format {}.{})", GPUSCOPE_VERSION_STRING,
                     gpuscope::container::kFormatMajor, gpuscope::container::kFormatMinor);
}

// A usage error in the CLI's own style, naming where help is: "gpuscope:
// --top: Value 0 not in range 1 to 100 (gpuscope help analyze)".
std::string usage_error(const CLI::App* app, const CLI::Error& e) {
  const auto chosen = app->get_subcommands();
  const std::string help = chosen.empty() ? "gpuscope help" : "gpuscope help " + chosen.front()->get_name();
  return fmt::format("{}{} ({})\n", gpuscope::cli::kErrorPrefix, e.what(), help);
}

// The command closest to a mistyped one, at most two edits away ("anlyze"
// -> "analyze"), or "".
std::string nearest_command(const CLI::App& app, const std::string& typed) {
  std::string best;
  size_t best_distance = 3;
  for (const CLI::App* sub : app.get_subcommands({}))
    if (const size_t d = gpuscope::protocol::edit_distance(typed, sub->get_name()); d < best_distance) {
      best = sub->get_name();
      best_distance = d;
    }
  return best;
}

// "unknown command 'anlyze' (did you mean analyze?)", exit 2.
int unknown_command(const CLI::App& app, const std::string& typed) {
  const std::string nearest = nearest_command(app, typed);
  gpuscope::cli::print_error("unknown command '{}' ({})", typed,
                             nearest.empty() ? "gpuscope help lists the commands" : "did you mean " + nearest + "?");
  return 2;
}

// The first argument that is not an option names the command: CLI11 would
// only say "A subcommand is required" for a mistyped one.
const char* typed_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return nullptr;
}

Subcommand add_version_command(CLI::App& app) {
  CLI::App* version = app.add_subcommand("version", "Show the version (the same as -V, --version)");
  return {version, [] {
            fmt::print("{}\n", version_text());
            return 0;
          }};
}

Subcommand add_help_command(CLI::App& app) {
  auto topic = std::make_shared<std::string>();
  CLI::App* help = app.add_subcommand("help", "Show help for a command");
  help->add_option("command", *topic, "Command to explain");
  return {help, [&app, topic] {
            if (topic->empty()) {
              std::cout << app.help();
              return 0;
            }
            try {
              std::cout << app.get_subcommand(*topic)->help(app.get_name());
              return 0;
            } catch (const CLI::OptionNotFound&) {
              return unknown_command(app, *topic);
            }
          }};
}

// The commands that read whole traces draw a progress bar on a terminal;
// -q keeps them silent but for their output and errors.
void add_progress_flags(CLI::App& app, bool* quiet) {
  for (const char* name : {"analyze", "diff", "export", "report", "import", "info"})
    app.get_subcommand(name)->add_flag("-q,--quiet", *quiet, "No progress bar");
}

}  // namespace

// protocol::kToolMarkerSymbol: a libgpuscope.so preloaded into the CLI
// finds it and records nothing (exported: analyzer/CMakeLists.txt).
extern "C" __attribute__((visibility("default"), used)) const char gpuscope_tool[] = "gpuscope";

int main(int argc, char** argv) {
  namespace cli = gpuscope::cli;
  // Named here, not from argv[0]: usage lines say "gpuscope run" however it was started.
  CLI::App app{"gpuscope: find out why a GPU workload is slow.\n"
               "Wrap a program with `gpuscope run -- CMD`, then read its trace.",
               "gpuscope"};
  app.set_version_flag("-V,--version", version_text());
  app.require_subcommand(1);
  app.failure_message(usage_error);

  using AddCommand = Subcommand (*)(CLI::App&);
  static constexpr AddCommand kCommands[] = {
      cli::add_run_command,     cli::add_attach_command, cli::add_detach_command,
      cli::add_info_command,    cli::add_analyze_command, cli::add_diff_command,
      cli::add_export_command,  cli::add_report_command, cli::add_import_command, cli::add_doctor_command, add_version_command,
      add_help_command,
  };
  std::vector<Subcommand> commands;
  for (AddCommand add : kCommands) commands.push_back(add(app));
  bool quiet = false;
  add_progress_flags(app, &quiet);

  if (const char* typed = typed_command(argc, argv); typed != nullptr && nearest_command(app, typed) != typed)
    return unknown_command(app, typed);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const auto progress = cli::install_progress_bar(quiet);
  for (const Subcommand& c : commands)
    if (c.app->parsed()) return c.run();
  return 2;
}
