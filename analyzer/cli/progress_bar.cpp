#include "progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "environment.h"
#include "messages.h"

namespace gpuscope::cli {
namespace {

constexpr auto kDelay = std::chrono::milliseconds(500);
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

std::string amount(uint64_t n, reader::ProgressUnit unit) {
  if (unit == reader::ProgressUnit::Events) {
    if (n >= 1'000'000) return fmt::format("{:.1f}M", n / 1e6);
    if (n >= 1'000) return fmt::format("{:.1f}k", n / 1e3);
    return std::to_string(n);
  }
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GB", n / 1073741824.0);
  if (n >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MB", n / 1048576.0);
  return fmt::format("{:.1f} kB", n / 1024.0);
}

size_t terminal_width(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  return 80;
}

// A long label cut in the middle, so that both the verb and the end of the
// file's name stay: "reading healthy-4…pt.trace.json.gz (pass 2)".
std::string fitted(const std::string& what, size_t width) {
  if (what.size() <= width) return what;
  if (width < 2) return "";
  const size_t head = (width - 1) / 2, tail = width - 1 - head;
  return what.substr(0, head) + "\u2026" + what.substr(what.size() - tail);
}

void write_all(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0) return;  // a closed or full stderr costs the bar, nothing else
    off += static_cast<size_t>(n);
  }
}

}  // namespace

TerminalProgress::TerminalProgress(int fd, bool immediate)
    : fd_(fd), shown_from_(immediate ? Clock::time_point{} : Clock::now() + kDelay) {}

TerminalProgress::~TerminalProgress() {
  reader::set_progress_sink(nullptr);
  erase();
}

void TerminalProgress::begin(std::string_view what, uint64_t total, reader::ProgressUnit unit) {
  const auto now = Clock::now();
  stages_.push_back(Stage{std::string(what), total, 0, unit, now});
  draw(now);
}

void TerminalProgress::advance(uint64_t done) {
  if (stages_.empty()) return;
  stages_.back().done = done;
  const auto now = Clock::now();
  if (now - last_draw_ >= kRedrawEvery) draw(now);
}

void TerminalProgress::end() {
  if (!stages_.empty()) stages_.pop_back();
  if (stages_.empty()) erase();
}

void TerminalProgress::draw(Clock::time_point now) {
  if (stages_.empty() || now < shown_from_) return;
  last_draw_ = now;
  write_all(fd_, "\r" + line(stages_.back(), now, terminal_width(fd_) - 1) + "\033[K");
  drawn_ = true;
}

std::string TerminalProgress::line(const Stage& s, Clock::time_point now, size_t width) const {
  const double seconds = std::chrono::duration<double>(now - s.started).count();
  std::string right;
  if (s.total > 0) {
    const double fraction = std::min(1.0, static_cast<double>(s.done) / static_cast<double>(s.total));
    // A narrow terminal gives its room to the label.
    const size_t cells = width >= 120 ? 30 : width >= 100 ? 20 : 10;
    const auto filled = static_cast<size_t>(fraction * static_cast<double>(cells));
    right = fmt::format(" [{}{}] {:3.0f}%  {}/{}  {:.1f} s", std::string(filled, '#'),
                        std::string(cells - filled, '-'), fraction * 100, amount(s.done, s.unit),
                        amount(s.total, s.unit), seconds);
  } else {
    right = fmt::format("  {} {}  {:.1f} s", amount(s.done, s.unit),
                        s.unit == reader::ProgressUnit::Events ? "events" : "read", seconds);
  }
  const size_t room = width > right.size() ? width - right.size() : 0;
  return fitted(s.what, room) + right;
}

void TerminalProgress::erase() {
  if (!drawn_) return;
  write_all(fd_, "\r\033[K");
  drawn_ = false;
}

std::unique_ptr<TerminalProgress> install_progress_bar(bool quiet) {
  const char* mode = std::getenv(protocol::env::kProgress);
  const std::string m = mode != nullptr ? mode : "auto";
  if (m != "auto" && m != "always" && m != "never")
    print_warning("{}: expected auto, always or never (no progress bar)", protocol::env::entry(protocol::env::kProgress, m));
  if (quiet || (m != "auto" && m != "always")) return nullptr;
  const bool always = m == "always";
  if (!always && isatty(STDERR_FILENO) == 0) return nullptr;
  auto bar = std::make_unique<TerminalProgress>(STDERR_FILENO, always);
  reader::set_progress_sink(bar.get());
  return bar;
}

}  // namespace gpuscope::cli
