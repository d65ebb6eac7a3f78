// Standby and attach end to end on simgpu (issue 7): a service loaded idle
// (`gpuscope run --standby`, or GPUSCOPE_MODE=standby with LD_PRELOAD) is
// traced only while `gpuscope attach` asks; each attach gives its own valid
// trace of just its window; the control socket refuses other users and
// malformed messages; the program's output and status never change.
#include <gtest/gtest.h>

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include "e2e_support.h"
#include "../support/silent_peers.h"

namespace gpuscope::test {
namespace {

namespace fs = std::filesystem;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// An attach's one window: a window open over a second is also written
// provisionally once a second, with the same start; the longest is it.
std::optional<fb::Marker> window_of(const TraceContents& t) {
  std::optional<fb::Marker> w;
  for (const auto& m : t.markers) {
    if (m.kind() != fb::MarkerKind::CaptureWindow) continue;
    EXPECT_TRUE(!w || w->start_ns() == m.start_ns()) << "two windows in one attach's trace";
    if (!w || m.duration_ns() > w->duration_ns()) w = m;
  }
  return w;
}

// Window bounds are CLOCK_MONOTONIC; call times come through the TSC
// conversion, which agrees with it to within microseconds.
bool began_inside(const fb::ApiCall& c, const fb::Marker& m) {
  constexpr uint64_t kClockSlack = 50'000;
  return c.start_ns() + kClockSlack >= m.start_ns() && c.start_ns() <= m.start_ns() + m.duration_ns() + kClockSlack;
}

class Attach : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
    ctl_ = dir_.path() + "/ctl";
  }
  std::vector<std::string> env(std::vector<std::string> extra = {}) const {
    extra.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
    extra.push_back("GPUSCOPE_CONTROL_DIR=" + ctl_);
    return environment_with(extra, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID",
                                    "GPUSCOPE_MODE"});
  }
  std::vector<std::string> service(int seconds) const {
    return {bin("service_loop"), "--seconds", std::to_string(seconds)};
  }
  // Runs alongside the traced one: the same program, no gpuscope.
  Spawned untraced(int seconds) const { return spawn(service(seconds), env()); }
  // The service under `gpuscope run --standby`, or preloaded directly with
  // GPUSCOPE_MODE=standby as a service manager would start it.
  Spawned start_standby(int seconds, bool through_run) {
    std::vector<std::string> argv = service(seconds);
    if (through_run) {
      std::vector<std::string> run_argv = {gpuscope_exe(), "run", "--standby", "-q", "-o", dir_.path() + "/run/", "--"};
      argv.insert(argv.begin(), run_argv.begin(), run_argv.end());
      return spawn(argv, env());
    }
    return spawn(argv, env({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_MODE=standby"}));
  }
  // The pid serving in the control directory, once its socket is there.
  pid_t wait_for_standby() const {
    for (int i = 0; i < 500; ++i) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(ctl_, ec)) {
        const std::string name = e.path().filename().string();
        if (name.ends_with(".sock")) return static_cast<pid_t>(std::stol(name));
      }
      sleep_ms(10);
    }
    return -1;
  }
  ProcessResult cli(std::vector<std::string> args) const {
    args.insert(args.begin(), gpuscope_exe());
    return run(args, env());
  }
  // A trace of one attach: whole, ended by the detach, one window, and
  // every call in it began inside that window.
  TraceContents expect_valid_window_trace(const std::string& path, fb::EndKind end = fb::EndKind::Detached) {
    TraceContents t = read_trace_file(path);
    EXPECT_TRUE(t.opened) << path << ": " << t.error;
    EXPECT_TRUE(t.summary.end.has_value()) << path;
    if (t.summary.end) {
      EXPECT_EQ(t.summary.end->kind, end) << path;
    }
    const auto w = window_of(t);
    EXPECT_TRUE(w.has_value()) << path;
    if (!w) return t;
    EXPECT_FALSE(t.api_calls.empty()) << path;
    EXPECT_FALSE(t.kernels.empty()) << path;
    for (const auto& c : t.api_calls)
      EXPECT_TRUE(began_inside(c, *w)) << t.summary.name_of(c.function_id()) << " outside the window";
    const ProcessResult info = cli({"info", path});
    EXPECT_EQ(info.exit_code(), 0) << info.out << info.err;
    return t;
  }
  ProcessResult raw_exchange(pid_t pid, const std::vector<uint8_t>& bytes, bool close_write = true) const;

  TempDir dir_;
  std::string ctl_;
};

ProcessResult Attach::raw_exchange(pid_t pid, const std::vector<uint8_t>& bytes, bool close_write) const {
  ProcessResult r;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = ctl_ + "/" + std::to_string(pid) + ".sock";
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    r.err = std::strerror(errno);
    close(fd);
    return r;
  }
  if (!bytes.empty()) (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (close_write) shutdown(fd, SHUT_WR);
  char buf[2048];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(fd);
  r.status = 0;
  return r;
}

TEST_F(Attach, TwoAttachesGiveTwoValidTracesOfJustTheirWindows) {
  const Spawned untraced_run = untraced(8);
  const uint64_t started = now_ns();
  const Spawned s = start_standby(8, /*through_run=*/true);
  const pid_t pid = wait_for_standby();
  ASSERT_GT(pid, 0) << "no control socket in " << ctl_;
  sleep_ms(300);

  // First: --duration, the CLI waits for the process to end it.
  const std::string first = dir_.path() + "/first.gpuscope";
  const uint64_t attach1 = now_ns();
  const ProcessResult a1 = cli({"attach", std::to_string(pid), "--duration", "0.5", "-o", first});
  EXPECT_EQ(a1.exit_code(), 0) << a1.err;
  EXPECT_NE(a1.err.find("trace " + first), std::string::npos) << a1.err;
  const ProcessResult list = cli({"attach", "--list"});
  EXPECT_NE(list.out.find(std::to_string(pid) + "  idle"), std::string::npos) << list.out << list.err;
  sleep_ms(200);

  // Second: until detach, into a directory (named as `run` names traces).
  const ProcessResult a2 = cli({"attach", std::to_string(pid), "-o", dir_.path() + "/"});
  EXPECT_EQ(a2.exit_code(), 0) << a2.err;
  const ProcessResult again = cli({"attach", std::to_string(pid), "-o", dir_.path() + "/"});
  EXPECT_EQ(again.exit_code(), 1);  // one attach at a time; the process says so
  EXPECT_NE(again.err.find("already attached"), std::string::npos) << again.err;
  sleep_ms(400);
  const ProcessResult d = cli({"detach", std::to_string(pid)});
  EXPECT_EQ(d.exit_code(), 0) << d.err;
  const std::string second = dir_.path() + "/gpuscope-service_loop-" + std::to_string(pid) + ".gpuscope";
  EXPECT_NE(d.err.find("trace " + second), std::string::npos) << d.err;
  const ProcessResult idle_detach = cli({"detach", std::to_string(pid)});
  EXPECT_EQ(idle_detach.exit_code(), 1);
  EXPECT_NE(idle_detach.err.find("not attached"), std::string::npos) << idle_detach.err;

  const ProcessResult r = finish(s), plain = finish(untraced_run);
  ASSERT_EQ(plain.exit_code(), 0) << plain.err;
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err.find("gpuscope"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(ctl_ + "/" + std::to_string(pid) + ".sock"));  // removed at exit
  EXPECT_TRUE(fs::is_empty(dir_.path() + "/run"));  // nothing written while idle

  const TraceContents t1 = expect_valid_window_trace(first);
  const TraceContents t2 = expect_valid_window_trace(second);
  const auto w1 = window_of(t1), w2 = window_of(t2);
  ASSERT_TRUE(w1 && w2);
  EXPECT_GE(w1->duration_ns(), 500'000'000u);
  EXPECT_LT(w1->duration_ns(), 1'000'000'000u);  // closed at the deadline, give or take a busy machine
  EXPECT_GE(w1->start_ns(), attach1);
  EXPECT_GT(w1->start_ns(), started + 300'000'000);
  EXPECT_GT(w2->start_ns(), w1->start_ns() + w1->duration_ns());  // separate windows
  EXPECT_EQ(t1.summary.dropped_total(), 0u);
  EXPECT_EQ(t2.summary.dropped_total(), 0u);
}

// Device activity in standby: CUDA starts (the driver injects gpuscope)
// long before anyone attaches. CUPTI is set up then and held off; each
// attach switches it on for its window and flushes it into its own trace,
// so the second attach collects too. Through a stand-in libcupti that logs
// the switches (the real one needs a driver).
TEST_F(Attach, EveryAttachCollectsDeviceActivityForItsWindowOnly) {
  const std::string log = dir_.path() + "/cupti.log";
  const Spawned s = spawn({bin("behave"), "inject", "sleep:2500", "out:done"},
                          env({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_MODE=standby",
                               std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_FAKE_CUPTI, "FAKE_CUPTI_LOG=" + log}));
  const pid_t pid = wait_for_standby();
  ASSERT_GT(pid, 0) << "no control socket in " << ctl_;
  sleep_ms(200);
  std::vector<std::string> traces;
  for (int i = 0; i < 2; ++i) {
    traces.push_back(dir_.path() + "/attach" + std::to_string(i) + ".gpuscope");
    const ProcessResult a = cli({"attach", std::to_string(pid), "--duration", "0.3", "-o", traces.back()});
    EXPECT_EQ(a.exit_code(), 0) << a.err;
    sleep_ms(100);
  }
  const ProcessResult r = finish(s);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "inject:1\ndone\n");
  std::vector<std::string> switches;
  int flushes = 0;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line == "on" || line == "off") switches.push_back(line);
    flushes += line == "flush forced";
  }
  const std::vector<std::string> expected = {"on", "off", "on", "off", "on", "off"};
  EXPECT_EQ(switches, expected) << "set up and held at injection, then on for each attach's window";
  EXPECT_GE(flushes, 2) << "each attach's end flushed";
  for (const std::string& path : traces) {
    const TraceContents t = read_trace_file(path);
    ASSERT_TRUE(t.opened) << path << ": " << t.error;
    ASSERT_TRUE(t.summary.device_collection.has_value()) << path;
    EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(fb::DeviceCollectionState::Active)) << path;
  }
}

// The same on simgpu's simulated CUPTI (its driver injects gpuscope at
// cuInit when SIMGPU_INJECTION=1): each attach's trace holds device records
// of the kernels launched in its window, each linked to its launch.
TEST_F(Attach, OnTheSimulatedCuptiEveryAttachHoldsItsWindowsDeviceRecords) {
  const Spawned s = spawn(service(4), env({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_MODE=standby",
                                           "CUDA_INJECTION64_PATH=" + capture_library(), "SIMGPU_INJECTION=1",
                                           std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_SIMGPU_LIB_DIR +
                                               "/libcupti.so.13"}));
  const pid_t pid = wait_for_standby();
  ASSERT_GT(pid, 0) << "no control socket in " << ctl_;
  sleep_ms(300);
  std::vector<std::string> traces;
  for (int i = 0; i < 2; ++i) {
    traces.push_back(dir_.path() + "/attach" + std::to_string(i) + ".gpuscope");
    const ProcessResult a = cli({"attach", std::to_string(pid), "--duration", "0.4", "-o", traces.back()});
    EXPECT_EQ(a.exit_code(), 0) << a.err;
    sleep_ms(200);
  }
  const ProcessResult r = finish(s);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  for (const std::string& path : traces) {
    const TraceContents t = expect_valid_window_trace(path);
    ASSERT_TRUE(t.summary.device_collection.has_value()) << path;
    EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(fb::DeviceCollectionState::Active)) << path;
    const auto w = window_of(t);
    ASSERT_TRUE(w.has_value());
    std::set<uint64_t> calls;
    for (const auto& c : t.api_calls) calls.insert(c.correlation_id());
    size_t device_kernels = 0;
    const uint64_t window_end = w->start_ns() + w->duration_ns();
    for (const auto& k : t.kernels) {
      if (k.source() != fb::Source::Device) continue;
      ++device_kernels;
      EXPECT_GE(k.start_ns() + 50'000, w->start_ns()) << path << ": a kernel from before the attach";
      // A launch that enters between the window's close and CUPTI's switch
      // off is not recorded, and its kernel's record has no call to name:
      // uncorrelated (counted so in the trace), never linked to a wrong one.
      if (k.correlation_id() == 0) EXPECT_GE(k.start_ns() + 50'000'000, window_end) << path;
      else EXPECT_TRUE(calls.count(k.correlation_id())) << path << ": a kernel linked to a call not in this trace";
    }
    EXPECT_GT(device_kernels, 0u) << path;
  }
}

TEST_F(Attach, GarbageOnTheSocketLeavesTheProcessRunningAndAttachable) {
  const Spawned untraced_run = untraced(5);
  const Spawned s = start_standby(5, /*through_run=*/false);
  const pid_t pid = wait_for_standby();
  ASSERT_EQ(pid, s.pid);
  const ProcessResult garbage = raw_exchange(pid, {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '\n'});
  EXPECT_NE(garbage.out.find("rejected"), std::string::npos) << garbage.err;
  std::vector<uint8_t> huge = {'G', 'S', 'C', 'P', 1, 1, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F};
  EXPECT_NE(raw_exchange(pid, huge).out.find("too large"), std::string::npos);
  std::vector<uint8_t> cut = {'G', 'S', 'C', 'P', 1, 1, 0, 0, 40, 0, 0, 0, 0, 0};
  EXPECT_NE(raw_exchange(pid, cut).out.find("truncated"), std::string::npos);
  std::vector<uint8_t> future = {'G', 'S', 'C', 'P', 9, 3, 0, 0, 0, 0, 0, 0};
  EXPECT_NE(raw_exchange(pid, future).out.find("version"), std::string::npos);
  raw_exchange(pid, {}, /*close_write=*/false);  // silent: dropped after the read timeout

  // Into directories attach makes: private, whatever the umask.
  const std::string path = dir_.path() + "/made/by-attach/after-garbage.gpuscope";
  const ProcessResult a = cli({"attach", std::to_string(pid), "--duration", "0.3", "-o", path});
  EXPECT_EQ(a.exit_code(), 0) << a.err;
  expect_valid_window_trace(path);
  for (const char* made : {"/made", "/made/by-attach"})
    EXPECT_EQ(fs::status(dir_.path() + made).permissions(), fs::perms::owner_all) << made;
  // Attached when the program ends: the trace ends with the program.
  const std::string last = dir_.path() + "/to-the-end.gpuscope";
  const ProcessResult b = cli({"attach", std::to_string(pid), "-o", last});
  EXPECT_EQ(b.exit_code(), 0) << b.err;
  const ProcessResult r = finish(s), plain = finish(untraced_run);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.err.find("rejected a message"), std::string::npos) << r.err;  // logged, on the program's stderr
  expect_valid_window_trace(last, fb::EndKind::ReturnFromMain);
  EXPECT_FALSE(fs::exists(ctl_ + "/" + std::to_string(pid) + ".sock"));
}

// Runs in a forked child as user nobody: 0 when the socket refused us.
int connect_as_nobody(const std::string& socket_path, bool with_dac_override, const std::string& trace) {
  if (with_dac_override && prctl(PR_SET_KEEPCAPS, 1) != 0) return 20;
  if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) return 21;
  if (with_dac_override) {
    // Past the private directory's permissions, so the process's own
    // SO_PEERCRED check is what refuses us.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) return 22;
    data[0].effective |= (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH);
    if (syscall(SYS_capset, &header, data) != 0) return 23;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return !with_dac_override && errno == EACCES ? 0 : 24;
  // An attach request, well-formed: it must be refused for who sent it.
  std::vector<uint8_t> req = {'G', 'S', 'C', 'P', 1, 1, 0, 0};
  const uint32_t len = static_cast<uint32_t>(8 + trace.size());
  for (int i = 0; i < 4; ++i) req.push_back(static_cast<uint8_t>(len >> (8 * i)));
  req.insert(req.end(), 8, 0);
  req.insert(req.end(), trace.begin(), trace.end());
  (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[512];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  return reply.find("refused") != std::string::npos ? 0 : 25;
}

TEST_F(Attach, APeerWithAnotherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as user nobody (uid 65534)";
  const Spawned s = start_standby(5, /*through_run=*/false);
  const pid_t pid = wait_for_standby();
  ASSERT_EQ(pid, s.pid);
  const std::string socket_path = ctl_ + "/" + std::to_string(pid) + ".sock";
  const std::string stolen = "/tmp/gpuscope-nobody-" + std::to_string(pid) + ".gpuscope";
  for (bool dac_override : {false, true}) {
    const pid_t child = fork();
    if (child == 0) _exit(connect_as_nobody(socket_path, dac_override, stolen));
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    if (dac_override && (WEXITSTATUS(status) == 22 || WEXITSTATUS(status) == 23)) {
      ADD_FAILURE() << "cannot raise CAP_DAC_OVERRIDE as nobody here; SO_PEERCRED check not reached";
      continue;
    }
    EXPECT_EQ(WEXITSTATUS(status), 0) << (dac_override ? "past the directory" : "at the directory");
  }
  EXPECT_FALSE(fs::exists(stolen));
  // Our own user is still served.
  const std::string path = dir_.path() + "/owner.gpuscope";
  const ProcessResult a = cli({"attach", std::to_string(pid), "--duration", "0.2", "-o", path});
  EXPECT_EQ(a.exit_code(), 0) << a.err;
  const ProcessResult r = finish(s);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("refused a connection from uid 65534"), std::string::npos) << r.err;
  expect_valid_window_trace(path);
}

TEST_F(Attach, StaleSocketsAndProcessesNotInStandbyAreReported) {
  ASSERT_EQ(mkdir(ctl_.c_str(), 0700), 0);
  // A socket left by a process killed with SIGKILL: nobody listens.
  const std::string stale = ctl_ + "/" + std::to_string(std::numeric_limits<int>::max() - 1) + ".sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, stale.c_str(), stale.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  const ProcessResult list = cli({"attach", "--list"});
  EXPECT_EQ(list.exit_code(), 0);
  EXPECT_FALSE(fs::exists(stale));
  const ProcessResult self = cli({"attach", std::to_string(getpid())});
  EXPECT_EQ(self.exit_code(), 2);
  EXPECT_NE(self.err.find("not in standby"), std::string::npos) << self.err;
  chmod(ctl_.c_str(), 0755);  // not private any more: refused, even for listing
  const ProcessResult open_dir = run({bin("service_loop"), "--seconds", "1"},
                                     env({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_MODE=standby"}));
  EXPECT_EQ(open_dir.exit_code(), 0);
  EXPECT_NE(open_dir.err.find("refused"), std::string::npos) << open_dir.err;
  EXPECT_NE(open_dir.err.find("untraced"), std::string::npos) << open_dir.err;
}

// Peers are served side by side: 50 connections that say nothing do not
// hold up a listing or an attach (served one at a time, for up to 1 s
// each, they took 43 s to drain). The bound is ten times the peer timeout:
// far above what a loaded machine needs, far below taking them in turn.
TEST_F(Attach, SilentConnectionsHoldUpNoOne) {
  const Spawned s = start_standby(6, /*through_run=*/false);
  const pid_t pid = wait_for_standby();
  ASSERT_GT(pid, 0) << "no control socket in " << ctl_;
  const std::vector<int> silent =
      silent_peers(ctl_ + "/" + std::to_string(pid) + ".sock", 50, std::chrono::milliseconds(10'000));
  EXPECT_EQ(silent.size(), 50u) << "connections not accepted while others were silent";
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult list = cli({"attach", "--list"});
  EXPECT_NE(list.out.find(std::to_string(pid) + "  idle"), std::string::npos) << list.out << list.err;
  const std::string trace = dir_.path() + "/during.gpuscope";
  const ProcessResult attached = cli({"attach", std::to_string(pid), "--duration", "0.3", "-q", "-o", trace});
  EXPECT_EQ(attached.exit_code(), 0) << attached.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(10'000));
  for (const int fd : silent) close(fd);
  EXPECT_EQ(finish(s).exit_code(), 0);
  expect_valid_window_trace(trace);
}

}  // namespace
}  // namespace gpuscope::test
