// The reading commands (info, analyze, export, diff, report) on inputs that
// are not trace files, or are damaged ones: one clear line each, promptly,
// and never a hang. Each command runs under timeout(1) so that a hang fails
// the test instead of stalling it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "container.h"
#include "e2e_support.h"

namespace gpuscope::test {
namespace {

ProcessResult gpuscope_bounded(std::vector<std::string> args) {
  args.insert(args.begin(), {"timeout", "-k", "5", "60", gpuscope_exe()});
  return run(args, clean_env());
}

std::string traced_run(const TempDir& dir, const std::string& name) {
  const std::string out = dir.file(name);
  const auto r =
      run({gpuscope_exe(), "run", "-q", "-o", out, "--", bin("behave"), "spin:400", "return:0"}, clean_env());
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  return out;
}

// Every reading command, on `input` (diff: against a good trace).
std::vector<std::pair<std::string, ProcessResult>> every_command_on(const std::string& input, const TempDir& dir,
                                                                    const std::string& good) {
  return {{"info", gpuscope_bounded({"info", input})},
          {"analyze", gpuscope_bounded({"analyze", input})},
          {"export", gpuscope_bounded({"export", input, "-o", dir.file("out.json")})},
          {"diff", gpuscope_bounded({"diff", good, input})},
          {"report", gpuscope_bounded({"report", input, "-o", dir.file("out.html")})}};
}

TEST(HostileInputs, AFifoIsRefusedByEveryCommandWithoutBlocking) {
  TempDir dir;
  const std::string good = traced_run(dir, "good.gpuscope");
  const std::string fifo = dir.file("fifo.gpuscope");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [command, r] : every_command_on(fifo, dir, good)) {
    EXPECT_EQ(r.exit_code(), 2) << command << " (124: it hung)\n" << r.err;
    EXPECT_NE(r.err.find("gpuscope: error: " + fifo + " is a FIFO (named pipe), not a trace file\n"), std::string::npos)
        << command << ": " << r.err;
    EXPECT_EQ(count_lines_with(r.err, fifo), 1) << command << ": " << r.err;
  }
}

// A directory stands for the traces in it: one that is a FIFO is named and
// left out, and the others are still analyzed.
TEST(HostileInputs, AFifoInADirectoryIsNamedAndTheRestIsRead) {
  TempDir dir;
  const std::string good = traced_run(dir, "good.gpuscope");
  const std::string fifo = dir.file("stuck.gpuscope");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto analyzed = gpuscope_bounded({"analyze", dir.path()});
  EXPECT_EQ(analyzed.exit_code(), 2) << analyzed.err;
  // The good trace is read: `behave` does no CUDA work, so among several
  // inputs it gets the one line that lists such processes.
  EXPECT_NE(analyzed.out.find("no CUDA work in 1 process(es): behave (pid "), std::string::npos) << analyzed.out;
  EXPECT_NE(analyzed.err.find(fifo + " is a FIFO (named pipe), not a trace file"), std::string::npos) << analyzed.err;
  const auto reported = gpuscope_bounded({"report", dir.path(), "-o", dir.file("page.html")});
  EXPECT_EQ(reported.exit_code(), 2) << reported.err;
  EXPECT_NE(reported.out.find("report of 1 trace(s)"), std::string::npos) << reported.out;
}

TEST(HostileInputs, DevicesDirectoriesAndLoopsAreOneLineEach) {
  TempDir dir;
  const std::string loop = dir.file("loop.gpuscope");
  ASSERT_EQ(symlink(loop.c_str(), loop.c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "gpuscope: error: /dev/zero is a character device, not a trace file\n"},
      {dir.path(), "gpuscope: error: " + dir.path() + " is a directory, not a trace file\n"},
      {loop, "gpuscope: error: cannot open " + loop + ": Too many levels of symbolic links\n"}};
  for (const auto& [input, line] : cases) {
    for (const char* command : {"info", "export"}) {
      const auto r = gpuscope_bounded({command, input});
      EXPECT_EQ(r.exit_code(), 2) << command << " " << input;
      EXPECT_EQ(r.err, line) << command << " " << input;
    }
  }
}

// "corrupt frame at offset 32: corrupt frame at offset 32: ..." said the
// kind and offset twice, and each broken frame took two lines.
TEST(HostileInputs, DamageIsOneLineSayingWhatWhereAndWhyOnce) {
  TempDir dir;
  const std::string path = traced_run(dir, "t.gpuscope");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  // 500 frames that each fail their payload check, before the first real one.
  std::vector<char> broken(500 * sizeof(container::FrameHeader));
  for (size_t i = 0; i < 500; ++i) {
    const auto h = container::make_frame_header(0, 0, 0, 0xBADC0DEu);
    std::memcpy(broken.data() + i * sizeof h, &h, sizeof h);
  }
  const size_t traced_size = bytes.size();
  bytes.insert(bytes.begin() + sizeof(container::FileHeader), broken.begin(), broken.end());
  bytes[broken.size() + traced_size / 2] ^= 0x5A;  // and one damaged frame later on
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"analyze", path}, {"export", path, "-o", dir.file("t.json")}}) {
    const auto r = gpuscope_bounded(command);
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    const std::regex warning("gpuscope: warning: " + path + ": corrupt frame at offset ([0-9]+): ([^\n]+)\n");
    std::vector<std::string> offsets;
    for (std::sregex_iterator it(r.err.begin(), r.err.end(), warning), end; it != end; ++it) {
      const std::string offset = (*it)[1], rest = (*it)[2];
      offsets.push_back(offset);
      EXPECT_EQ(rest.find("corrupt frame"), std::string::npos) << rest;  // the kind, once
      EXPECT_FALSE(std::regex_search(rest, std::regex("offset " + offset + "([^0-9]|$)"))) << rest;
    }
    ASSERT_EQ(offsets.size(), 2u) << command[0] << ":\n" << r.err;  // the stretch, then the later frame
    EXPECT_EQ(offsets[0], std::to_string(sizeof(container::FileHeader)));
    EXPECT_NE(r.err.find("(500 damaged frames)"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace gpuscope::test
