// The process-lifecycle front-end of libgpuscope.so: start capture when the
// library loads, note how the process ends, write the last frame on every
// exit path that runs code, and keep fork children and exec'd images apart.
//
// Exit paths:  return from main  -> __libc_start_main wrapper notes the status
//              exit()            -> noted, then the destructor finalizes
//              _exit() / _Exit() -> finalized right here (no destructors run)
//              exec*()           -> everything so far flushed before the image goes
//              fatal signal, SIGKILL -> nothing runs; the reader reports the
//                                   trace as truncated after its last flush
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdlib>
#include <string>

#include "cupti_source.h"
#include "diag.h"
#include "instance.h"
#include "real_symbol.h"
#include "capture_window.h"
#include "session.h"
#include "standby.h"
#include "gpu/gpu_source.h"
#include "stacks/stack_capture.h"

#define GPUSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpuscope::preload {
namespace {

using capture::Phase;
using fb::EndKind;

std::atomic<bool> g_initialized{false};
std::atomic<int> g_end_kind{static_cast<int>(EndKind::Unknown)};
std::atomic<int> g_exit_status{0};
pid_t g_process_pid = 0;
bool g_standby = false;

void on_fork_child() {
  capture::disable_after_fork();
  if (g_standby) standby::after_fork_child();
}

// One set of writer-polled sources per trace. They live as long as the
// process (the writer may poll them during exit) or, in standby, as long
// as their attach's trace.
std::vector<std::unique_ptr<capture::TraceSource>> make_sources(const capture::CaptureConfig& config) {
  // The CUPTI source waits for InitializeInjection (preload/injection.cpp);
  // if it never comes, it records why.
  const std::string no_injection =
      cupti::not_injected_reason(std::getenv("CUDA_INJECTION64_PATH"), cupti::own_library_path());
  std::vector<std::unique_ptr<capture::TraceSource>> sources;
  sources.push_back(stacks::make_stack_source());
  sources.push_back(gpu::make_gpu_source(config));
  sources.push_back(cupti::make_cupti_source(cupti::process_collector(), no_injection));
  return sources;
}

// GPUSCOPE_MODE=standby: idle until `gpuscope attach`; no file until then.
void start_standby(const capture::CaptureConfig& config, capture::ProcessMetadata metadata) {
  std::string error;
  capture::WindowConfig windows;
  if (capture::read_window_config(&windows, &error) && windows.active())
    capture::diag_line("standby: capture windows (--delay, --duration, --capture-range) are ignored; "
                       "gpuscope attach decides what is recorded");
  standby::StandbyConfig s{config.options, std::move(metadata), [config] { return make_sources(config); }, ""};
  if (!standby::start_standby(std::move(s), &error)) {
    capture::diag_line("standby: %s; the program runs untraced", error.c_str());
    capture::disable_capture();
    return;
  }
  g_standby = true;
  pthread_atfork(nullptr, nullptr, on_fork_child);
}

// GPUSCOPE_PARENT_PID tells a traced process the pid of its nearest traced
// ancestor (recorded as ProcessMetadata.trace_parent_pid): unlike getppid(),
// it survives reparenting to init or a subreaper, and it skips untraced
// fork-only processes in between (a shell's subshell). Exec'd children and
// posix_spawn children inherit it with the rest of the environment.
// `gpuscope run` always sets it (0 for its root), so setenv replaces the
// entry in place and a shell that copies main's envp sees the new value too.
struct ParentLink {
  std::string inherited;
  bool was_set = false;
  void restore() const {
    if (was_set) setenv("GPUSCOPE_PARENT_PID", inherited.c_str(), 1);
    else unsetenv("GPUSCOPE_PARENT_PID");
  }
};

ParentLink pass_parent_link_down(pid_t self) {
  ParentLink link;
  if (const char* v = std::getenv("GPUSCOPE_PARENT_PID")) {
    link.inherited = v;
    link.was_set = true;
  }
  setenv("GPUSCOPE_PARENT_PID", std::to_string(self).c_str(), 1);
  return link;
}

void initialize_capture() {
  if (g_initialized.exchange(true)) return;
  capture::InternalScope internal;
  if (!is_primary_instance()) return stand_down();
  g_process_pid = getpid();
  const capture::CaptureConfig config = capture::read_capture_config();
  if (config.secure_execution) {
    capture::diag_line("secure-execution program (setuid or file capabilities): not traced");
    capture::disable_capture();
    return;
  }
  if (config.disabled) {
    capture::disable_capture();
    return;
  }
  for (const std::string& problem : config.problems) capture::diag_line("%s", problem.c_str());
  capture::ProcessMetadata metadata = capture::collect_process_metadata();
  stacks::configure_stacks(config.stacks, config.stack_depth, config.fast_unwinder);
  if (config.mode == "standby") {
    start_standby(config, std::move(metadata));
    return;
  }
  const capture::NameFields fields{metadata.pid, metadata.hostname, capture::executable_name(),
                                   metadata.start_realtime_ns, metadata.rank};
  std::string path = capture::resolve_output_path(config.output, config.root_pid, fields);
  // `gpuscope run -o FILE -- sh -c 'exec app'`: the run's root pid is the
  // shell and then the app. The CLI made sure FILE did not exist when the run
  // began, so an existing FILE here is the previous image's trace.
  struct stat st{};
  if (config.root_pid == metadata.pid && path == config.output && lstat(path.c_str(), &st) == 0 &&
      S_ISREG(st.st_mode))
    path = capture::exec_successor_path(path, metadata.pid, fields.exe);
  // Sources live as long as the process: the writer may poll them during exit.
  std::vector<capture::TraceSource*> sources;
  for (auto& source : make_sources(config)) sources.push_back(source.release());
  capture::SessionOptions options = config.options;
  capture::WindowConfig windows;
  std::string error;
  // A value it cannot honour leaves the whole run captured; the settings'
  // problems above named it.
  capture::read_window_config(&windows, &error);
  if (capture::configure_windows(windows)) {
    options.start_paused = true;
    sources.push_back(capture::make_window_source().release());
  }
  // Before the writer thread exists: setenv is not safe against concurrent getenv.
  const ParentLink link = pass_parent_link_down(metadata.pid);
  if (!capture::start_session(options, path, metadata, &error, sources)) {
    capture::diag_line("%s; the program runs untraced", error.c_str());
    link.restore();  // our children link to the nearest ancestor that is traced
    capture::disable_capture();
    return;
  }
  pthread_atfork(nullptr, nullptr, on_fork_child);
}

// First writer wins: exit() called from an atexit handler after main
// returned does not overwrite main's status.
void note_end(EndKind kind, int status) {
  int unknown = static_cast<int>(EndKind::Unknown);
  if (g_end_kind.compare_exchange_strong(unknown, static_cast<int>(kind)))
    g_exit_status.store(status);
}

bool is_capturing_process() {
  return getpid() == g_process_pid && capture::current_phase() == Phase::Recording;
}

void finalize(EndKind fallback_kind, int fallback_status) {
  note_end(fallback_kind, fallback_status);
  // No attach may start while the process ends; one in progress is ended
  // by the stop below like any trace.
  if (g_standby) standby::shutdown_standby();
  capture::stop_session(static_cast<EndKind>(g_end_kind.load()), g_exit_status.load());
}

__attribute__((constructor(101))) void on_load() { initialize_capture(); }

__attribute__((destructor(101))) void on_unload() {
  if (getpid() == g_process_pid) finalize(EndKind::Unknown, 0);
}

using MainFn = int (*)(int, char**, char**);
MainFn g_real_main = nullptr;

int main_wrapper(int argc, char** argv, char** envp) {
  const int status = g_real_main(argc, argv, envp);
  note_end(EndKind::ReturnFromMain, status);
  return status;
}

// Calls exec with a flush first; if exec fails capture simply goes on.
template <class Exec> int with_exec_checkpoint(Exec&& exec) {
  if (is_capturing_process()) capture::checkpoint_session(EndKind::Exec, 0);
  return exec();
}

// execl-style argument lists, gathered into an argv on the stack.
#define GPUSCOPE_COLLECT_ARGS(first, argv_out, after_null)                 \
  size_t count = 1;                                                         \
  {                                                                         \
    va_list probe;                                                          \
    va_start(probe, first);                                                 \
    while (va_arg(probe, const char*) != nullptr) ++count;                  \
    va_end(probe);                                                          \
  }                                                                         \
  auto** argv_out = static_cast<char**>(__builtin_alloca((count + 1) * sizeof(char*))); \
  {                                                                         \
    va_list args;                                                           \
    va_start(args, first);                                                  \
    argv_out[0] = const_cast<char*>(first);                                 \
    for (size_t i = 1; i <= count; ++i) argv_out[i] = va_arg(args, char*);  \
    after_null;                                                             \
    va_end(args);                                                           \
  }

}  // namespace
}  // namespace gpuscope::preload

// The strong definition of the core's weak hook (session.h).
void gpuscope::capture::initialize_capture_early() { gpuscope::preload::initialize_capture(); }

using namespace gpuscope::preload;

GPUSCOPE_EXPORT int __libc_start_main(MainFn main, int argc, char** argv, void (*init)(),
                                      void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  using StartFn = int (*)(MainFn, int, char**, void (*)(), void (*)(), void (*)(), void*);
  g_real_main = main;
  return next<StartFn>("__libc_start_main")(main_wrapper, argc, argv, init, fini, rtld_fini,
                                            stack_end);
}

GPUSCOPE_EXPORT [[noreturn]] void exit(int status) {
  note_end(EndKind::Exit, status);
  next<void (*)(int)>("exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void quick_exit(int status) {
  if (getpid() == g_process_pid) finalize(EndKind::Exit, status);
  next<void (*)(int)>("quick_exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void _exit(int status) {
  // A vfork child shares our memory but not our pid: it must not finalize.
  if (getpid() == g_process_pid) finalize(EndKind::ImmediateExit, status);
  next<void (*)(int)>("_exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void _Exit(int status) {
  if (getpid() == g_process_pid) finalize(EndKind::ImmediateExit, status);
  next<void (*)(int)>("_Exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  return with_exec_checkpoint([&] { return next<decltype(&execve)>("execve")(path, argv, envp); });
}

GPUSCOPE_EXPORT int execv(const char* path, char* const argv[]) {
  return with_exec_checkpoint([&] { return next<decltype(&execv)>("execv")(path, argv); });
}

GPUSCOPE_EXPORT int execvp(const char* file, char* const argv[]) {
  return with_exec_checkpoint([&] { return next<decltype(&execvp)>("execvp")(file, argv); });
}

GPUSCOPE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return with_exec_checkpoint(
      [&] { return next<decltype(&execvpe)>("execvpe")(file, argv, envp); });
}

GPUSCOPE_EXPORT int execl(const char* path, const char* arg, ...) {
  GPUSCOPE_COLLECT_ARGS(arg, argv, (void)0)
  return execv(path, argv);
}

GPUSCOPE_EXPORT int execlp(const char* file, const char* arg, ...) {
  GPUSCOPE_COLLECT_ARGS(arg, argv, (void)0)
  return execvp(file, argv);
}

GPUSCOPE_EXPORT int execle(const char* path, const char* arg, ...) {
  char** envp = nullptr;
  GPUSCOPE_COLLECT_ARGS(arg, argv, envp = va_arg(args, char**))
  return execve(path, argv, envp);
}
