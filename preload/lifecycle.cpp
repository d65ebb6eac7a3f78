// The process-lifecycle front-end of libgpuscope.so: start capture when the
// library loads, note how the process ends, write the last frame on every
// exit path that runs code, and keep fork children and exec'd images apart.
//
// Exit paths:  return from main  -> __libc_start_main wrapper notes the status
//              exit()            -> noted, then the destructor finalizes
//              _exit() / _Exit() -> finalized right here (no destructors run)
//              quick_exit()      -> finalized here, before its handlers
//              pthread_exit() in main -> the watch in process_end.h ends the
//                                   process with exit(0) after its last thread
//              exec*()           -> everything so far flushed before the image goes
//              fatal signal, SIGKILL -> nothing runs; the reader reports the
//                                   trace as truncated after its last flush
// Which thread ends the process, and the steps it takes, are decided in
// process_end.h: one end, one end record, with the status the process
// really ends with.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdlib>
#include <string>

#include "exported.h"
#include "process_info.h"
#include "cupti_source.h"
#include "diag.h"
#include "environment.h"
#include "instance.h"
#include "real_symbol.h"
#include "capture_window.h"
#include "output_names.h"
#include "process_end.h"
#include "quiet_output.h"
#include "session.h"
#include "standby.h"
#include "gpu/gpu_source.h"
#include "host_sampler.h"
#include "python/python_frames.h"
#include "stacks/stack_capture.h"

namespace gpuscope::preload {
namespace {

using capture::Phase;
using fb::EndKind;
namespace env = protocol::env;

std::atomic<bool> g_initialized{false};
pid_t g_process_pid = 0;
bool g_standby = false;

void on_fork_child() {
  capture::disable_after_fork();
  if (g_standby) standby::after_fork_child();
}

// Device collection follows the capture windows (and attaches, which open
// one each): CUPTI is held off while none is open, so the program pays
// nothing for it then and the trace gets no records from outside.
void follow_capture_window(bool open) noexcept {
  capture::InternalScope internal;  // CUPTI's own calls are not the program's
  cupti::Collector& collector = cupti::process_collector();
  if (open) collector.release(cupti::Collector::Hold::Window);
  else collector.hold(cupti::Collector::Hold::Window);
}

// Before capture starts, when it starts with no window open.
void hold_device_collection_until_a_window_opens() {
  cupti::process_collector().hold(cupti::Collector::Hold::Window);
  capture::set_window_listener(follow_capture_window);
}

// One set of writer-polled sources per trace. They live as long as the
// process (the writer may poll them during exit) or, in standby, as long
// as their attach's trace.
std::vector<std::unique_ptr<capture::TraceSource>> make_sources(const capture::CaptureConfig& config,
                                                                cupti::TraceEnd at_trace_end) {
  // The CUPTI source waits for InitializeInjection (cupti/injection.cpp);
  // if it never comes, it records why.
  const std::string no_injection =
      cupti::not_injected_reason(std::getenv("CUDA_INJECTION64_PATH"), capture::own_library_path());
  std::vector<std::unique_ptr<capture::TraceSource>> sources;
  // Before the stack source: the stacks a poll's samples add go out in the same chunk.
  sources.push_back(capture::make_host_sampler(
      {config.cpu_sampling_hz, config.stack_depth, stacks::intern_sampled_stack, config.cpu_sampling_delay_ms}));
  sources.push_back(stacks::make_stack_source());
  sources.push_back(python::make_python_source());
  sources.push_back(gpu::make_gpu_source(config));
  sources.push_back(cupti::make_cupti_source(cupti::process_collector(), no_injection, at_trace_end));
  return sources;
}

// GPUSCOPE_MODE=standby: idle until `gpuscope attach`; no file until then.
void start_standby(const capture::CaptureConfig& config, capture::ProcessMetadata metadata) {
  std::string error;
  capture::WindowConfig windows;
  if (capture::read_window_config(&windows, &error) && windows.active())
    capture::diag_line("standby: capture windows (--delay, --duration, --capture-range) are ignored; "
                       "gpuscope attach decides what is recorded");
  standby::StandbyConfig s{config.options, std::move(metadata),
                           [config] { return make_sources(config, cupti::TraceEnd::FlushForNextTrace); }, ""};
  hold_device_collection_until_a_window_opens();
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
    if (was_set) setenv(env::kParentPid, inherited.c_str(), 1);
    else unsetenv(env::kParentPid);
  }
};

ParentLink pass_parent_link_down(pid_t self) {
  ParentLink link;
  if (const char* v = std::getenv(env::kParentPid)) {
    link.inherited = v;
    link.was_set = true;
  }
  setenv(env::kParentPid, std::to_string(self).c_str(), 1);
  return link;
}

// Whether this process is one of gpuscope's own programs (the CLI exports
// protocol::kToolMarkerSymbol): they do no CUDA work worth a trace, and a
// trace of `gpuscope run` itself in the working directory surprises.
bool in_gpuscope_tool() {
  return capture::real_dlsym()(RTLD_DEFAULT, protocol::kToolMarkerSymbol) != nullptr;
}

void initialize_capture() {
  if (g_initialized.exchange(true)) return;
  capture::InternalScope internal;
  if (!is_primary_instance()) return stand_down();
  g_process_pid = getpid();
  process_end::set_process(g_process_pid);
  const capture::CaptureConfig config = capture::read_capture_config();
  if (config.secure_execution) {
    capture::diag_line("secure-execution program (setuid or file capabilities): not traced");
    capture::disable_capture();
    return;
  }
  if (config.disabled || in_gpuscope_tool()) {
    capture::disable_capture();
    return;
  }
  for (const std::string& problem : config.problems) capture::diag_line("%s", problem.c_str());
  capture::ProcessMetadata metadata = capture::collect_process_metadata();
  stacks::configure_stacks(config.stacks, config.stack_depth, config.fast_unwinder);
  python::configure_python_stacks(config.stacks && config.python_stacks);
  if (config.cpu_sampling_hz != 0) stacks::sampled_stacks_wanted();
  if (config.mode == env::kModeStandby) {
    start_standby(config, std::move(metadata));
    return;
  }
  const protocol::NameFields fields{metadata.pid, metadata.hostname, capture::executable_name(),
                                    metadata.start_realtime_ns, metadata.rank};
  std::string path = protocol::resolve_output_path(config.output, config.root_pid, fields);
  // A traced image of this process exec'd us (it passed its pid down, see
  // pass_parent_link_down): its trace may hold our name (`env env true`).
  if (metadata.trace_parent_pid == metadata.pid) path = protocol::exec_successor_path(path);
  // Sources live as long as the process: the writer may poll them during exit.
  std::vector<capture::TraceSource*> sources;
  for (auto& source : make_sources(config, cupti::TraceEnd::FinishCollection)) sources.push_back(source.release());
  capture::SessionOptions options = config.options;
  capture::WindowConfig windows;
  std::string error;
  // A value it cannot honour leaves the whole run captured; the settings'
  // problems above named it.
  capture::read_window_config(&windows, &error);
  if (capture::configure_windows(windows)) {
    options.start_paused = true;
    hold_device_collection_until_a_window_opens();
    sources.push_back(capture::make_window_source().release());
  }
  // Before the writer thread exists: setenv is not safe against concurrent getenv.
  const ParentLink link = pass_parent_link_down(metadata.pid);
  if (!capture::start_session(options, path, metadata, &error, sources)) {
    capture::diag_line("%s; the program runs untraced", error.c_str());
    capture::note_for_run(config.run_notes, metadata.pid, metadata.exe, error);
    link.restore();  // our children link to the nearest ancestor that is traced
    capture::disable_capture();
    return;
  }
  pthread_atfork(nullptr, nullptr, on_fork_child);
}

bool is_capturing_process() {
  return getpid() == g_process_pid && capture::current_phase() == Phase::Recording;
}

// A step out of the process (process_end.h): may never return.
void take_step(EndKind kind, int status) {
  if (process_end::applies()) process_end::take_step(kind, status);
}

// Writes the end record on the thread that ends the process, the program's
// other threads kept from printing meanwhile (quiet_output.h).
void finalize() {
  if (getpid() != g_process_pid) return;  // a fork or vfork child
  if (process_end::applies()) {
    if (!process_end::begin_final_write()) return;  // this thread is writing it already
    capture::hold_program_output();
  }
  const capture::EndWorkScope end_work;
  // No attach may start while the process ends; one in progress is ended
  // by the stop below like any trace.
  if (g_standby) standby::shutdown_standby();
  capture::end_session_here(process_end::note());
}

__attribute__((constructor(101))) void on_load() { initialize_capture(); }

__attribute__((destructor(101))) void on_unload() { finalize(); }

using MainFn = int (*)(int, char**, char**);
MainFn g_real_main = nullptr;

int main_wrapper(int argc, char** argv, char** envp) {
  const int status = g_real_main(argc, argv, envp);
  take_step(EndKind::ReturnFromMain, status);
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
  return gpuscope::capture::next<StartFn>("__libc_start_main")(main_wrapper, argc, argv, init, fini, rtld_fini,
                                            stack_end);
}

GPUSCOPE_EXPORT [[noreturn]] void exit(int status) {
  take_step(EndKind::Exit, status);
  gpuscope::capture::next<void (*)(int)>("exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void quick_exit(int status) {
  take_step(EndKind::Exit, status);
  finalize();
  gpuscope::capture::next<void (*)(int)>("quick_exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void _exit(int status) {
  take_step(EndKind::ImmediateExit, status);
  finalize();
  gpuscope::capture::next<void (*)(int)>("_exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void _Exit(int status) {
  take_step(EndKind::ImmediateExit, status);
  finalize();
  gpuscope::capture::next<void (*)(int)>("_Exit")(status);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT [[noreturn]] void pthread_exit(void* value) {
  if (getpid() == g_process_pid && gettid() == g_process_pid) process_end::main_thread_leaving();
  gpuscope::capture::next<void (*)(void*)>("pthread_exit")(value);
  __builtin_unreachable();
}

GPUSCOPE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  return with_exec_checkpoint([&] { return gpuscope::capture::next<decltype(&execve)>("execve")(path, argv, envp); });
}

GPUSCOPE_EXPORT int execv(const char* path, char* const argv[]) {
  return with_exec_checkpoint([&] { return gpuscope::capture::next<decltype(&execv)>("execv")(path, argv); });
}

GPUSCOPE_EXPORT int execvp(const char* file, char* const argv[]) {
  return with_exec_checkpoint([&] { return gpuscope::capture::next<decltype(&execvp)>("execvp")(file, argv); });
}

GPUSCOPE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return with_exec_checkpoint(
      [&] { return gpuscope::capture::next<decltype(&execvpe)>("execvpe")(file, argv, envp); });
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
