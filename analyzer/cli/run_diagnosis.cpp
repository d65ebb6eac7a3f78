#include "run_diagnosis.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "environment.h"
#include "settings.h"

namespace gpuscope::cli {
namespace {

#if defined(__x86_64__)
constexpr int kNativeMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kNativeMachine = EM_AARCH64;
#else
constexpr int kNativeMachine = EM_NONE;
#endif

// A kernel follows at most four #! interpreters; so do we.
constexpr int kMaxInterpreterDepth = 4;

bool is_regular(const std::string& path, struct stat* st) {
  return stat(path.c_str(), st) == 0 && S_ISREG(st->st_mode);
}

// The file execvp would run for `command`: itself when it has a slash,
// otherwise the first executable regular file along PATH ("/bin:/usr/bin"
// when unset, as glibc), else the first entry found at all (to say what is
// wrong with it); empty when there is none.
std::string resolve_like_exec(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* env_path = std::getenv("PATH");
  std::stringstream dirs(env_path != nullptr ? env_path : "/bin:/usr/bin");
  std::string dir, first_present;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
    struct stat st{};
    if (is_regular(candidate, &st) && access(candidate.c_str(), X_OK) == 0) return candidate;
    if (first_present.empty() && lstat(candidate.c_str(), &st) == 0) first_present = candidate;
  }
  return first_present;
}

struct Executable {
  enum class Kind { Missing, Unreadable, Elf, Script, Other } kind = Kind::Missing;
  bool dynamic = false;      // an ELF with a program interpreter (PT_INTERP)
  bool native = false;       // 64-bit, this machine: libgpuscope.so can load into it
  std::string interpreter;   // PT_INTERP, or the program of a #! line
};

template <class Ehdr, class Phdr> void read_program_headers(int fd, Executable* e) {
  Ehdr h{};
  if (pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || h.e_phentsize != sizeof(Phdr)) return;
  e->native = sizeof(Ehdr) == sizeof(Elf64_Ehdr) && h.e_machine == kNativeMachine;
  for (unsigned i = 0; i < h.e_phnum; ++i) {
    Phdr ph{};
    if (pread(fd, &ph, sizeof ph, static_cast<off_t>(h.e_phoff + i * sizeof ph)) != static_cast<ssize_t>(sizeof ph))
      return;
    if (ph.p_type != PT_INTERP) continue;
    e->dynamic = true;
    std::string interp(std::min<size_t>(ph.p_filesz, 4096), '\0');
    const ssize_t n = pread(fd, interp.data(), interp.size(), static_cast<off_t>(ph.p_offset));
    interp.resize(n > 0 ? strnlen(interp.data(), static_cast<size_t>(n)) : 0);
    e->interpreter = interp;
    return;
  }
}

Executable inspect(const std::string& path) {
  Executable e;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    e.kind = errno == ENOENT ? Executable::Kind::Missing : Executable::Kind::Unreadable;
    return e;
  }
  unsigned char ident[EI_NIDENT] = {};
  const ssize_t n = pread(fd, ident, sizeof ident, 0);
  if (n >= SELFMAG && std::memcmp(ident, ELFMAG, SELFMAG) == 0) {
    e.kind = Executable::Kind::Elf;
    if (ident[EI_CLASS] == ELFCLASS64) read_program_headers<Elf64_Ehdr, Elf64_Phdr>(fd, &e);
    else read_program_headers<Elf32_Ehdr, Elf32_Phdr>(fd, &e);
  } else if (n >= 2 && ident[0] == '#' && ident[1] == '!') {
    e.kind = Executable::Kind::Script;
    std::string line(256, '\0');
    const ssize_t got = pread(fd, line.data(), line.size(), 2);
    line.resize(got > 0 ? static_cast<size_t>(got) : 0);
    line = line.substr(0, line.find('\n'));
    const size_t start = line.find_first_not_of(" \t");
    if (start != std::string::npos) e.interpreter = line.substr(start, line.find_first_of(" \t", start) - start);
  } else {
    e.kind = Executable::Kind::Other;
  }
  close(fd);
  return e;
}

// Whether exec would switch on secure execution (AT_SECURE), in which the
// loader ignores LD_PRELOAD paths: set-user/group-ID to someone else, or
// file capabilities, on a filesystem that honours them.
std::string secure_execution(const std::string& path) {
  struct stat st{};
  struct statvfs fs{};
  if (stat(path.c_str(), &st) != 0 || (statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_NOSUID) != 0)) return "";
  if ((st.st_mode & S_ISUID) != 0 && st.st_uid != geteuid()) return fmt::format("set-user-ID uid {}", st.st_uid);
  if ((st.st_mode & S_ISGID) != 0 && st.st_gid != getegid()) return fmt::format("set-group-ID gid {}", st.st_gid);
  if (getxattr(path.c_str(), "security.capability", nullptr, 0) > 0) return "file capabilities";
  return "";
}

std::string missing_interpreter(const std::string& path) {
  const Executable e = inspect(path);
  struct stat st{};
  if (e.interpreter.empty() || stat(e.interpreter.c_str(), &st) == 0) return "";
  return " (its interpreter " + e.interpreter + " does not exist)";
}

std::string permission_detail(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return "";
  if (S_ISDIR(st.st_mode)) return " (a directory)";
  if (!S_ISREG(st.st_mode)) return " (not a regular file)";
  if ((st.st_mode & 0111) == 0) return fmt::format(" (not executable: mode {:04o})", st.st_mode & 07777);
  struct statvfs fs{};
  if (statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_NOEXEC) != 0) return " (on a filesystem mounted noexec)";
  return "";
}

}  // namespace

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{} (signal {})", abbrev, sig) : fmt::format("signal {}", sig);
}

RunNotes::RunNotes() {
  const char* tmp = std::getenv("TMPDIR");
  std::string name = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/gpuscope-run-XXXXXX";
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return;
  close(fd);
  path_ = name;
}

RunNotes::~RunNotes() {
  if (!path_.empty()) unlink(path_.c_str());
}

std::vector<RunNotes::Note> RunNotes::read() const {
  std::vector<Note> notes;
  std::ifstream in(path_);
  for (std::string line; std::getline(in, line);) {
    const size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
    if (tab1 == std::string::npos || tab2 == std::string::npos) continue;
    notes.push_back({std::atoi(line.substr(0, tab1).c_str()), line.substr(tab1 + 1, tab2 - tab1 - 1),
                     line.substr(tab2 + 1)});
  }
  return notes;
}

std::string exec_failure_cause(const std::string& command, int err) {
  const std::string path = resolve_like_exec(command);
  const bool searched = command.find('/') == std::string::npos;
  switch (err) {
    case ENOENT:
      if (path.empty()) return searched ? "command not found in PATH" : std::strerror(err);
      return std::strerror(err) + missing_interpreter(path);
    case EACCES:
      return std::strerror(err) + (path.empty() ? std::string() : permission_detail(path));
    case ENOEXEC:
      return std::string(std::strerror(err)) + " (not a program format this system runs)";
    default:
      return std::strerror(err);
  }
}

std::string no_trace_cause(const std::string& command, int wait_status) {
  std::string path = resolve_like_exec(command);
  if (path.empty()) path = command;
  if (const std::string secure = secure_execution(path); !secure.empty())
    return fmt::format("{} runs with secure execution ({}): the loader ignores LD_PRELOAD for it", path, secure);
  Executable e = inspect(path);
  std::string what = path;
  for (int depth = 0; e.kind == Executable::Kind::Script && !e.interpreter.empty() && depth < kMaxInterpreterDepth;
       ++depth) {
    what = fmt::format("{} (a script run by {})", what, e.interpreter);
    e = inspect(e.interpreter);
  }
  if (e.kind == Executable::Kind::Elf && !e.dynamic)
    return what + " is statically linked (no program interpreter): LD_PRELOAD cannot reach it";
  if (e.kind == Executable::Kind::Elf && !e.native)
    return what + " is built for another architecture or word size: the loader cannot preload libgpuscope.so into it";
  // Read as the library reads it (protocol/settings.h): "no" or a typo leaves it on.
  bool disabled = false;
  if (const char* off = std::getenv(protocol::env::kDisable); off != nullptr && protocol::parse_flag(off, &disabled) &&
      disabled)
    return fmt::format("{} is set in the environment: the library stays inert",
                       protocol::env::entry(protocol::env::kDisable, off));
  const std::string linked = e.dynamic ? fmt::format(" (dynamically linked, interpreter {})", e.interpreter) : "";
  if (WIFSIGNALED(wait_status))
    return fmt::format("{}{} was killed by {} before its trace was created", what, linked,
                       signal_text(WTERMSIG(wait_status)));
  return fmt::format("{}{} ended without creating one: the library did not start in it (any reason the loader "
                     "or the library gave is printed above)",
                     what, linked);
}

}  // namespace gpuscope::cli
