// gpuscope: the command line. One subcommand per cmd_*.cpp, each with the
// function that declares its options next to the command itself; main is
// the table of them.
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "container.h"
#include "gpuscope_version.h"
#include "messages.h"

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
              std::cout << app.get_subcommand(*topic)->help();
              return 0;
            } catch (const CLI::OptionNotFound&) {
              gpuscope::cli::print_error("no command named '{}' (try: gpuscope help)", *topic);
              return 2;
            }
          }};
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = gpuscope::cli;
  CLI::App app{"gpuscope: find out why a GPU workload is slow.\n"
               "Wrap a program with `gpuscope run -- CMD`, then read its trace."};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.failure_message(usage_error);

  using AddCommand = Subcommand (*)(CLI::App&);
  static constexpr AddCommand kCommands[] = {
      cli::add_run_command,     cli::add_attach_command, cli::add_detach_command,
      cli::add_info_command,    cli::add_analyze_command, cli::add_diff_command,
      cli::add_export_command,  cli::add_report_command, cli::add_import_command, add_help_command,
  };
  std::vector<Subcommand> commands;
  for (AddCommand add : kCommands) commands.push_back(add(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const Subcommand& c : commands)
    if (c.app->parsed()) return c.run();
  return 2;
}
