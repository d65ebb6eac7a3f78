// `gpuscope import IN -o OUT.gpuscope`: another profiler's file (PyTorch
// profiler JSON, Nsight Systems SQLite) converted once into a gpuscope
// trace, for repeated analysis without parsing the source again. Every
// analysis command also takes the foreign file directly (docs/import.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "import.h"
#include "messages.h"
#include "output_paths.h"

namespace gpuscope::cli {
namespace {

struct ImportOptions {
  std::string input;   // a file, or FILE@pid=N for one process of an nsys export
  std::string output;  // default: the input's name with .gpuscope, in the current directory
  bool force = false;
};

std::string default_output(const std::string& input) {
  std::string base = std::filesystem::path(input).filename().string();
  for (const char* ext : {".gz", ".json", ".sqlite", ".pt.trace"})
    if (base.size() > std::string(ext).size() && base.ends_with(ext)) base.resize(base.size() - std::string(ext).size());
  return base + ".gpuscope";
}

int import_command(const ImportOptions& options) {
  const std::string out = options.output.empty() ? default_output(options.input) : options.output;
  const size_t at = options.input.rfind("@pid=");
  importer::ImportTarget target{options.input, 0};
  if (at != std::string::npos && !std::filesystem::exists(options.input)) {
    target.path = options.input.substr(0, at);
    target.pid = std::atoi(options.input.c_str() + at + 5);
  }
  std::string error;
  if (!claim_output_file(out, options.force, false, &error)) {  // before the conversion, not after it
    print_error("{}", error);
    return 2;
  }
  const importer::ImportResult r = importer::import_file(target, out, options.force);
  if (r.fd < 0) {
    print_error("{}", r.error);
    return 2;
  }
  ::close(r.fd);
  fmt::print(stderr, "gpuscope: imported {} events from {} into {}: {} records; {} of kinds without a record, {} host "
                     "calls without their device record, {} with unusable timestamps\n",
             r.counts.events, target.path, out, r.counts.records, r.counts.skipped, r.counts.unjoined,
             r.counts.out_of_range);
  if (!r.warning.empty()) {
    print_error("{}", r.warning);
    return 2;
  }
  return 0;
}

}  // namespace

Subcommand add_import_command(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Convert a PyTorch profiler (Kineto) JSON or Nsight Systems SQLite file into a gpuscope trace");
  cmd->add_option("input", options->input, "The file (FILE@pid=N: one process of a multi-process nsys export)")
      ->required();
  cmd->add_option("-o,--output", options->output, "The trace to write (default: the input's name with .gpuscope)");
  cmd->add_flag("-f,--force", options->force, "Replace an existing file at the output path");
  return {cmd, [options] { return import_command(*options); }};
}

}  // namespace gpuscope::cli
