// The Python line decoder against the interpreters themselves: for every
// CPython 3.9-3.13 installed under pyenv, tests/python/dump_line_tables.py
// compiles a varied set of functions (and a few standard library modules) and
// prints each code object's raw line table with the line PyCode_Addr2Line
// gives for every code unit; line_at must give the same line for every one.
// A version that is not installed is skipped with a message; with none
// installed at all the AnyInterpreter test fails. The interpreters are found
// where pyenv keeps them (PYENV_ROOT, else ~/.pyenv).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "python_lines.h"

namespace gpuscope::analyzer::python {
namespace {

namespace fs = std::filesystem;

constexpr int kMinors[] = {9, 10, 11, 12, 13};

// Where pyenv keeps its versions, as pyenv itself decides: PYENV_ROOT, else
// ~/.pyenv (the CI image's is /root/.pyenv).
fs::path pyenv_root() {
  if (const char* root = std::getenv("PYENV_ROOT"); root != nullptr && *root != '\0') return root;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return fs::path(home) / ".pyenv";
  return "/root/.pyenv";
}

// The python3 of a pyenv version 3.<minor>.<patch>, the first one found.
std::optional<fs::path> find_interpreter(int minor) {
  const std::string prefix = fmt::format("3.{}.", minor);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(pyenv_root() / "versions", error)) {
    const std::string name = entry.path().filename().string();
    const fs::path python = entry.path() / "bin" / "python3";
    if (name.starts_with(prefix) && fs::exists(python, error)) return python;
  }
  return std::nullopt;
}

struct CodeTable {
  std::string name;
  int first_line = 0;
  std::vector<uint8_t> table;
  std::vector<int> lines;  // the interpreter's line per code unit, 0 = none
};

struct Dump {
  uint32_t version_hex = 0;
  std::vector<CodeTable> codes;
};

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> bytes;
  for (size_t at = 0; at + 1 < hex.size(); at += 2) {
    bytes.push_back(static_cast<uint8_t>(std::stoul(hex.substr(at, 2), nullptr, 16)));
  }
  return bytes;
}

std::vector<int> from_list(const std::string& list) {
  std::vector<int> values;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::stoi(item));
  return values;
}

Dump parse_dump(const std::string& text) {
  Dump dump;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');) fields.push_back(cell);
    if (fields.size() == 2 && fields[0] == "version") {
      dump.version_hex = static_cast<uint32_t>(std::stoul(fields[1], nullptr, 16));
    } else if (fields.size() == 5 && fields[0] == "code") {
      dump.codes.push_back({fields[1], std::stoi(fields[2]), from_hex(fields[3]), from_list(fields[4])});
    } else {
      ADD_FAILURE() << "unexpected line in the dump: " << line.substr(0, 80);
    }
  }
  return dump;
}

// Runs the generator under `python` (isolated: no PYTHON* variables, no user
// site) and returns what it printed; a failing generator fails the test.
std::string run_generator(const fs::path& python) {
  const std::string command = fmt::format("'{}' -I '{}'", python.string(), GPUSCOPE_PYTHON_LINE_DUMPER);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot start " << command;
    return {};
  }
  std::string output;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << command << " failed";
  return output;
}

// Every code unit of every code object: line_at against the interpreter.
// Reports the first few disagreements with enough to reproduce them.
void expect_lines_match(const Dump& dump) {
  size_t units = 0, disagreements = 0;
  for (const CodeTable& code : dump.codes) {
    for (uint32_t index = 0; index < code.lines.size(); ++index, ++units) {
      const int decoded = line_at(dump.version_hex, code.table, code.first_line, index);
      if (decoded == code.lines[index]) continue;
      if (++disagreements <= 5) {
        ADD_FAILURE() << fmt::format("{:#x} {} (first line {}): code unit {}: decoded line {}, CPython says {}",
                                     dump.version_hex, code.name, code.first_line, index, decoded, code.lines[index]);
      }
    }
  }
  EXPECT_EQ(disagreements, 0u) << "of " << units << " code units";
  EXPECT_GT(units, 5000u) << "the generator dumped too little to be a test";
}

// 3.10+ tables cover exactly the code, so one unit past it has no line (3.9's
// co_lnotab ends at the last line start: past it is the last line).
void expect_unknown_past_the_end(const Dump& dump) {
  for (const CodeTable& code : dump.codes) {
    const auto past = static_cast<uint32_t>(code.lines.size());
    EXPECT_EQ(line_at(dump.version_hex, code.table, code.first_line, past), 0) << code.name << " past its end";
  }
}

class InterpreterLineTables : public testing::TestWithParam<int> {};

TEST_P(InterpreterLineTables, EveryInstructionDecodesToTheInterpretersLine) {
  const int minor = GetParam();
  const std::optional<fs::path> python = find_interpreter(minor);
  if (!python) GTEST_SKIP() << "CPython 3." << minor << " is not installed under " << pyenv_root().string();
  const Dump dump = parse_dump(run_generator(*python));
  ASSERT_EQ(dump.version_hex >> 16, 0x0300u | static_cast<uint32_t>(minor)) << python->string();
  ASSERT_FALSE(dump.codes.empty()) << python->string() << " dumped no code objects";
  expect_lines_match(dump);
  if (minor >= 10) expect_unknown_past_the_end(dump);
}

INSTANTIATE_TEST_SUITE_P(CPython, InterpreterLineTables, testing::ValuesIn(kMinors),
                         [](const testing::TestParamInfo<int>& info) { return fmt::format("Python3_{}", info.param); });

TEST(InterpreterLineTables, AnyInterpreter) {
  int found = 0;
  for (const int minor : kMinors) found += find_interpreter(minor) ? 1 : 0;
  EXPECT_GT(found, 0) << "no CPython 3.9-3.13 under " << pyenv_root().string()
                      << ": the decoder was checked against no interpreter";
}

}  // namespace
}  // namespace gpuscope::analyzer::python
