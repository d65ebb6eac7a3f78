// gpuscope run: start a program with libgpuscope.so preloaded, stay out of
// its way (signals forwarded, exit status passed through), then say where
// its traces are.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "capture_range.h"
#include "commands.h"
#include "device_sampling.h"
#include "environment.h"
#include "messages.h"
#include "output_names.h"
#include "output_paths.h"
#include "run_diagnosis.h"
#include "run_follower.h"
#include "settings.h"
#include "trace_summary.h"

extern char** environ;

namespace gpuscope::cli {
namespace {

// `--device-activity sampled:WINDOW_MS/PERIOD_MS`: what follows is GPUSCOPE_DEVICE_SAMPLING.
constexpr std::string_view kSampledPrefix = "sampled:";

namespace fs = std::filesystem;
namespace vars = protocol::env;

volatile sig_atomic_t g_child_pid = 0;

// A terminal's Ctrl-C already reaches the child (same process group; the
// kernel sends it with si_code SI_KERNEL): forwarding it would deliver it
// twice. Signals sent to gpuscope by a process (kill, a supervisor) are
// passed on.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  if (g_child_pid > 0) kill(g_child_pid, sig);
}

// A signal gpuscope was started with ignored stays ignored, so the child
// inherits it ignored as it would without gpuscope (nohup ignores SIGHUP, a
// non-interactive shell's background job SIGINT and SIGQUIT): a handler
// here would be reset to the default in the child by exec.
void install_forwarding() {
  struct sigaction sa{};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old{};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(sig, &sa, nullptr);
  }
}

struct OutputPlan {
  std::string env_value;  // GPUSCOPE_OUTPUT for the child, always absolute
  fs::path directory;     // where the traces will be
};

// -o DIR/ (or an existing directory), -o FILE, or -o PATTERN, in the forms
// the library resolves (protocol/output_names.h): the last component names
// the file, and the directory above it is made (0700) when missing.
// Patterns expand per process in the library, so they may name the file only.
bool plan_output(const RunOptions& o, OutputPlan* plan, std::string* error) {
  const protocol::OutputForm form = protocol::output_form(o.output);
  if (form == protocol::OutputForm::Default) {
    plan->directory = fs::current_path();
    plan->env_value = plan->directory.string() + "/";
    return true;
  }
  const fs::path requested = fs::absolute(o.output).lexically_normal();
  if (form == protocol::OutputForm::Directory) {
    plan->directory = requested.has_filename() ? requested : requested.parent_path();
    plan->env_value = plan->directory.string() + "/";
    return make_private_directories(plan->directory, error);
  }
  plan->directory = requested.parent_path();
  plan->env_value = requested.string();
  if (plan->directory.string().find('%') != std::string::npos) {
    *error = "-o " + o.output + ": a pattern (%p %h %n %t %r) may name the file, not its directory";
    return false;
  }
  if (!make_private_directories(plan->directory, error)) return false;
  if (form == protocol::OutputForm::Pattern) return true;
  return claim_output_file(requested, o.force, true, error);
}

std::string make_run_id() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

// Capture settings the user gave on the command line, as the library reads them.
std::vector<std::string> settings_environment(const RunOptions& o) {
  std::vector<std::string> env;
  if (o.no_stacks) env.push_back(vars::entry(vars::kStacks, "0"));
  if (o.stack_depth >= 0) env.push_back(vars::entry(vars::kStackDepth, std::to_string(o.stack_depth)));
  if (o.cpu_sample_ms >= 0) env.push_back(vars::entry(vars::kCpuSampleMs, std::to_string(o.cpu_sample_ms)));
  if (o.nvml_hz >= 0) env.push_back(vars::entry(vars::kNvmlHz, std::to_string(o.nvml_hz)));
  if (o.cpu_sampling_hz >= 0) env.push_back(vars::entry(vars::kCpuSampling, std::to_string(o.cpu_sampling_hz)));
  const auto ms = [](double seconds) { return std::to_string(static_cast<uint64_t>(seconds * 1000.0 + 0.5)); };
  if (o.delay_s > 0) env.push_back(vars::entry(vars::kDelayMs, ms(o.delay_s)));
  if (o.duration_s > 0) env.push_back(vars::entry(vars::kDurationMs, ms(o.duration_s)));
  if (!o.capture_range.empty()) env.push_back(vars::entry(vars::kCaptureRange, o.capture_range));
  if (!o.capture_range_end.empty()) env.push_back(vars::entry(vars::kCaptureRangeEnd, o.capture_range_end));
  if (o.standby) env.push_back(vars::entry(vars::kMode, vars::kModeStandby));
  // CUPTI's kernel records cost each launch ~3 us (docs/gpu-validation.md,
  // run 2): "off" keeps a launch-bound service within a few percent.
  if (o.device_activity == "kernels") env.push_back(vars::entry(vars::kCuptiKinds, "none"));
  if (o.device_activity == "off") env.push_back(vars::entry(vars::kCuptiKinds, "off"));
  // Sampled: CUPTI on for a window each period, so a step of small kernels
  // pays its cost a hundredth of the time (protocol/device_sampling.h).
  // The value was checked against the library's grammar (device_activity_accepts).
  if (o.device_activity == "sampled") {
    const protocol::DeviceSampling& s = protocol::kDefaultDeviceSampling;
    env.push_back(vars::entry(vars::kDeviceSampling, std::to_string(s.window_ms) + "/" + std::to_string(s.period_ms)));
  } else if (o.device_activity.starts_with(kSampledPrefix)) {
    env.push_back(vars::entry(vars::kDeviceSampling, o.device_activity.substr(kSampledPrefix.size())));
  }
  return env;
}

std::vector<std::string> child_environment(const std::string& library, const OutputPlan& plan,
                                           const std::string& run_id, const std::string& notes,
                                           const std::vector<std::string>& settings) {
  std::vector<std::string> env;
  std::string preload = library;
  bool nvtx_injection_set = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    nvtx_injection_set |= entry.starts_with("NVTX_INJECTION64_PATH=");
    if (entry.starts_with("LD_PRELOAD=")) {
      const std::string_view existing = entry.substr(11);
      if (!existing.empty() && existing.find(library) == std::string_view::npos)
        preload += ":" + std::string(existing);
      continue;
    }
    if (std::any_of(std::begin(vars::kPerRun), std::end(vars::kPerRun),
                    [&](const char* name) { return vars::sets(entry, name); }))
      continue;
    bool overridden = false;
    for (const auto& s : settings) overridden |= entry.starts_with(s.substr(0, s.find('=') + 1));
    if (overridden) continue;
    env.emplace_back(entry);
  }
  env.push_back("LD_PRELOAD=" + preload);
  // The preloaded library is also the NVTX injection (preload/nvtx/); a
  // tool the user chose already keeps its place.
  if (!nvtx_injection_set) env.push_back("NVTX_INJECTION64_PATH=" + library);
  // CUPTI injection: the driver calls InitializeInjection in this same
  // library at CUDA init (device activity, issue 6). A user's own
  // injection library is left in place; the trace then says why device
  // activity is missing.
  if (std::getenv("CUDA_INJECTION64_PATH") == nullptr) env.push_back("CUDA_INJECTION64_PATH=" + library);
  env.push_back(vars::entry(vars::kOutput, plan.env_value));
  env.push_back(vars::entry(vars::kRunId, run_id));
  if (!notes.empty()) env.push_back(vars::entry(vars::kRunNotes, notes));
  // The root has no traced parent; each traced process replaces the value
  // with its own pid for its children (preload/lifecycle.cpp). Present from
  // the start so that replacing it never grows the environment array.
  env.push_back(vars::entry(vars::kParentPid, "0"));
  env.insert(env.end(), settings.begin(), settings.end());
  return env;
}

// exec's errno goes back to the parent through a close-on-exec pipe: an
// empty read means the program is running.
[[noreturn]] void exec_child(const std::vector<std::string>& command, std::vector<std::string> env,
                             int report_fd) {
  env.push_back(vars::entry(vars::kRootPid, std::to_string(getpid())));
  std::vector<char*> argv, envp;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  while (write(report_fd, &err, sizeof err) < 0 && errno == EINTR) {
  }
  _exit(err == ENOENT ? 127 : 126);
}

// Starts the child (the target of forwarded signals); *exec_errno is 0 once
// it runs its program.
pid_t start_child(const std::vector<std::string>& command, const std::vector<std::string>& env, int* exec_errno) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(report[0]);
    exec_child(command, env, report[1]);
  }
  const int fork_errno = errno;
  close(report[1]);
  if (child < 0) {
    close(report[0]);
    errno = fork_errno;
    return -1;
  }
  g_child_pid = child;  // forwarded signals reach it from now on
  *exec_errno = 0;
  ssize_t n;
  while ((n = read(report[0], exec_errno, sizeof *exec_errno)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof *exec_errno)) *exec_errno = 0;
  close(report[0]);
  return child;
}

// The child's wait status (-1 if waiting failed).
int wait_for(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// The shell's convention: the exit status, or 128+N after signal N.
int exit_code_of(int wait_status) {
  if (wait_status >= 0 && WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (wait_status >= 0 && WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

// Traces of this run: files in the output directory whose metadata carries
// our run id, in the order their processes started (an exec chain's images
// in turn). Reading only the first frame of each candidate keeps it cheap.
std::vector<fs::path> find_run_traces(const fs::path& dir, const std::string& run_id) {
  std::vector<std::pair<uint64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const reader::FirstFrame first = reader::read_first_frame(entry.path().string());
    if (first.process && first.process->run_id == run_id)
      found.emplace_back(first.process->start_monotonic_ns, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

// One analysis gives both lines: what the trace holds, and the verdict
// (for a run of several processes, the tree below says each verdict). The
// analysis made while the program ran is used when it read this file as
// it is now.
void report_one(const std::string& path, bool with_verdict, std::vector<analyzer::ProcessEntry>* processes,
                const TraceFollower* follower = nullptr) {
  TraceHeadline h;
  analyzer::ProcessEntry process;
  const bool followed = follower != nullptr && follower->headline(path, &h, &process);
  if (!followed && !analyze_headline(path, &h, &process)) return;  // the reason is printed
  processes->push_back(std::move(process));
  const reader::TraceSummary& s = h.summary;
  const std::string who = s.process ? fmt::format("pid {}, {}", s.process->pid, s.process->exe) : "?";
  std::string end = "no end record (killed or crashed)";
  if (s.end) {
    if (s.end->kind == fb::EndKind::OutputFailed) end = s.end->message;
    else if (s.end->kind == fb::EndKind::Detached) end = "detached: capture ended before the program";
    else end = fmt::format("exit status {}", s.end->exit_status);
  }
  fmt::print(stderr, "gpuscope: trace {} ({}): {} events, {} dropped, {}\n", path, who,
             s.counts.total(), s.dropped_total(), end);
  if (with_verdict)
    fmt::print(stderr, "gpuscope: verdict: {} -- details: gpuscope analyze {}\n", h.verdict, path);
}

// The run's processes, indented under their traced parent, one line each.
void report_tree(const analyzer::ProcessTree& t, const fs::path& dir) {
  fmt::print(stderr, "gpuscope: process tree of run {} ({} traced processes):\n", t.run_id, t.processes.size());
  std::function<void(int, int)> line = [&](int i, int depth) {
    const analyzer::ProcessEntry& p = t.processes[i];
    const std::string parent = t.parent[i] >= 0 ? std::to_string(t.processes[t.parent[i]].pid) : "-";
    const std::string rank = p.rank >= 0 ? fmt::format(", rank {}", p.rank) : "";
    const std::string verdict = p.cuda_work ? p.verdict_headline : "no CUDA work";
    fmt::print(stderr, "gpuscope:   {}pid {} (parent {}{}) {}: {}{}\n", std::string(2 * depth, ' '), p.pid, parent,
               rank, p.exe, verdict, i == t.bottleneck ? "  <- bottleneck" : "");
    for (int c : t.children(i)) line(c, depth + 1);
  };
  for (int r : t.roots()) line(r, 0);
  fmt::print(stderr, "gpuscope: details: gpuscope analyze {}\n", dir.string());
}

// After the run: what became of the traces, in words. A process that could
// not create its trace said why in the notes; with no trace and no note,
// what the executable is says why.
void report_missing_traces(const RunOptions& o, const RunNotes& notes, bool any_trace, int wait_status) {
  const auto lines = notes.read();
  for (const auto& n : lines)
    fmt::print(stderr, "gpuscope: no trace was written for pid {} ({}): {}\n", n.pid, n.exe, n.why);
  if (!any_trace && lines.empty() && !o.standby)
    fmt::print(stderr, "gpuscope: no trace was written for {}: {}\n", o.command[0],
               no_trace_cause(o.command[0], wait_status));
}

void report_run(const RunOptions& o, const OutputPlan& plan, const std::string& run_id, const RunNotes& notes,
                int wait_status, const TraceFollower* follower) {
  if (wait_status >= 0 && WIFSIGNALED(wait_status))
    fmt::print(stderr, "gpuscope: {} was killed by {}\n", o.command[0], signal_text(WTERMSIG(wait_status)));
  const auto traces = find_run_traces(plan.directory, run_id);
  report_missing_traces(o, notes, !traces.empty(), wait_status);
  std::vector<analyzer::ProcessEntry> processes;
  for (const auto& t : traces) report_one(t.string(), false, &processes, follower);
  // Several processes: the tree says each verdict. One process (one image,
  // an exec chain, or several attach windows): a verdict line per trace.
  for (const auto& tree : analyzer::build_process_trees(processes)) {
    if (tree.process_count() > 1) {
      report_tree(tree, plan.directory);
      continue;
    }
    for (const auto& p : tree.processes)
      fmt::print(stderr, "gpuscope: verdict: {} -- details: gpuscope analyze {}\n", p.verdict_headline, p.trace_path);
  }
}

}  // namespace

void report_trace(const std::string& path) {
  std::vector<analyzer::ProcessEntry> processes;
  report_one(path, true, &processes);
}

int run_command(const RunOptions& o) {
  if (o.command.empty()) {
    print_error("no command to run (usage: gpuscope run [-o PATH] -- CMD ARGS...)");
    return 2;
  }
  if (o.standby && (o.delay_s > 0 || o.duration_s > 0 || !o.capture_range.empty())) {
    print_error("--standby records only what `gpuscope attach` asks for: drop --delay, --duration "
                "and --capture-range (attach has its own --duration; gpuscope help run)");
    return 2;
  }
  std::string error;
  const std::string library = locate_capture_library(&error);
  OutputPlan plan;
  if (library.empty() || !plan_output(o, &plan, &error)) {
    print_error("{}", error);
    return 2;
  }
  const std::string run_id = make_run_id();
  const RunNotes notes;
  const auto env = child_environment(library, plan, run_id, notes.path(), settings_environment(o));
  const auto follower = o.quiet || o.standby ? nullptr : TraceFollower::make(plan.directory, run_id);
  install_forwarding();
  int exec_errno = 0;
  const pid_t child = start_child(o.command, env, &exec_errno);
  if (child < 0) {
    print_error("cannot start {}: {}", o.command[0], std::strerror(errno));
    return 2;
  }
  if (exec_errno != 0)  // printed even with -q: nothing ran
    print_error("cannot run {}: {}", o.command[0], exec_failure_cause(o.command[0], exec_errno));
  else if (o.standby && !o.quiet)
    fmt::print(stderr, "gpuscope: {} (pid {}) is in standby: `gpuscope attach {} [--duration S]` records a trace\n",
               o.command[0], child, child);
  if (follower != nullptr && exec_errno == 0) follower->follow(child);
  const int wait_status = wait_for(child);
  g_child_pid = 0;
  if (follower != nullptr) follower->finish();
  if (!o.quiet && exec_errno == 0) report_run(o, plan, run_id, notes, wait_status, follower.get());
  return exit_code_of(wait_status);
}

namespace {

// An option whose value the library reads in the same grammar
// (protocol/capture_range.h); given on the command line, it is not empty.
CLI::Validator grammar_check(bool (*accepts)(std::string_view), std::string_view grammar, const char* name) {
  return CLI::Validator(
      [accepts, expected = "expected " + std::string(grammar)](const std::string& v) {
        return !v.empty() && accepts(v) ? std::string() : expected;
      },
      name);
}

// all, kernels, off, sampled or sampled:WINDOW_MS/PERIOD_MS (the library's
// grammar, protocol/device_sampling.h).
bool device_activity_accepts(std::string_view v) {
  if (v == "all" || v == "kernels" || v == "off" || v == "sampled") return true;
  return v.starts_with(kSampledPrefix) && protocol::is_device_sampling(v.substr(kSampledPrefix.size()));
}

// The bounds the library reads `variable` with (protocol/settings.h), for
// the option that sets it.
CLI::Range library_range(const char* variable) {
  const protocol::Setting& s = *protocol::find_setting(variable);
  return CLI::Range(s.min, s.max);
}

// --delay, --duration, --capture-range and --capture-range-end: what the
// library records (capture/capture_window.h), up to the longest
// window it takes (a year).
void add_capture_window_options(CLI::App* run, RunOptions* o) {
  constexpr double kMaxWindowS = protocol::kMaxWindowMs / 1000.0;
  run->add_option("--delay", o->delay_s, "Record nothing for the first SECONDS")->check(CLI::Range(0.0, kMaxWindowS));
  run->add_option("--duration", o->duration_s, "Record for SECONDS, then finalize the trace")
      ->check(CLI::Range(0.001, kMaxWindowS));
  CLI::Option* range = run->add_option("--capture-range", o->capture_range,
                  "Record only between cudaProfilerStart and cudaProfilerStop (cudaProfilerApi), or while an "
                  "NVTX range with that message is open (nvtx:MESSAGE or nvtx:MESSAGE@DOMAIN)")
      ->check(grammar_check(protocol::is_capture_range, protocol::kCaptureRangeGrammar, "RANGE"));
  run->add_option("--capture-range-end", o->capture_range_end,
                  "After a capture range ends: stop (default; finalize the trace), repeat, or repeat:N")
      ->check(grammar_check(protocol::is_range_end, protocol::kRangeEndGrammar, "stop|repeat|repeat:N"))
      ->needs(range);
}

}  // namespace

Subcommand add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Run a program under gpuscope and write its trace");
  CLI::Option* output = run->add_option("-o,--output", o->output,
                  "Trace directory (ending in /), file, or file-name pattern (%p pid, %h host, %n program, "
                  "%t start time, %r rank); missing directories are made (mode 0700); "
                  "default: the current directory");
  run->add_flag("-f,--force", o->force,
                "Replace an existing trace file named by -o (never one a running capture is writing)")
      ->needs(output);
  run->add_flag("-q,--quiet", o->quiet, "Print nothing after the program ends");
  CLI::Option* no_stacks = run->add_flag("--no-stacks", o->no_stacks, "Do not record call stacks of hooked calls");
  run->add_option("--stack-depth", o->stack_depth, "Frames per call stack (default 32)")
      ->check(library_range(protocol::env::kStackDepth))
      ->excludes(no_stacks);
  run->add_option("--cpu-sample-ms", o->cpu_sample_ms, "CPU-time sampling period, 0 = off (default 10)")
      ->check(library_range(protocol::env::kCpuSampleMs));
  run->add_option("--nvml-hz", o->nvml_hz, "GPU metric samples per second, 0 = off (default 20)")
      ->check(library_range(protocol::env::kNvmlHz));
  run->add_option("--cpu-sampling", o->cpu_sampling_hz,
                  "CPU stack samples per second of each thread's CPU time, 0 = off (default 250)")
      ->check(library_range(protocol::env::kCpuSampling));
  add_capture_window_options(run, o.get());
  run->add_flag("--standby", o->standby, "Load idle and write nothing until `gpuscope attach PID` asks for a trace");
  run->add_option("--device-activity", o->device_activity,
                  "Device records through CUPTI: all (default), kernels (kernels only), off (host side only: "
                  "the least overhead, ~3 us less per launch), or sampled[:WINDOW_MS/PERIOD_MS] (all, for a "
                  "window each period; default 20/2000; the verdict is judged inside the windows)")
      ->check(grammar_check(device_activity_accepts,
                            "all, kernels, off, sampled or sampled:" + std::string(protocol::kDeviceSamplingGrammar),
                            "DEVICE_ACTIVITY"));
  run->add_option("command", o->command, "Program and its arguments")->required();
  run->prefix_command();  // everything from the program name on belongs to the program
  run->footer("Example: gpuscope run -o traces/ -- python3 serve.py --port 8080");
  return {run, [o] { return run_command(*o); }};
}
}  // namespace gpuscope::cli
