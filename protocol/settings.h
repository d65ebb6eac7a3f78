// What each GPUSCOPE_* variable accepts: one table, read by the library
// when it reads its settings (capture/config.cpp) and by the CLI when
// it checks the values its options will pass down (analyzer/cli), so the two
// cannot disagree on a value. A name the table does not know is a typo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gpuscope::protocol {

enum class SettingKind : uint8_t {
  Flag,     // parse_flag
  Number,   // a whole number from `min` to `max`
  Choice,   // one of `accepted`, '|'-separated
  Path,     // an absolute path
  Text,     // anything
  Check,    // `valid` decides; `accepted` says what it takes
  Outside,  // read by the CLI, the scripts or the tests, never by the library
};

struct Setting {
  std::string_view name;
  SettingKind kind;
  int64_t min = 0, max = 0;
  std::string_view accepted = {};
  std::string_view instead = {};  // what the library does with a value it cannot use, when not the default
  bool (*valid)(std::string_view) = nullptr;
};

// Every GPUSCOPE_* variable (environment.h).
std::span<const Setting> settings();

// The row of `name`, or null for a name that is no setting.
const Setting* find_setting(std::string_view name);

// The known name at most two edits away from `name` (a typo's fix), or null.
const Setting* closest_setting(std::string_view name);

// Levenshtein distance: the edits that turn `a` into `b` (also the CLI's
// "did you mean" for a mistyped command).
size_t edit_distance(std::string_view a, std::string_view b);

bool acceptable(const Setting& setting, std::string_view value);

// What the setting takes, for a message: "a whole number from 1 to 64".
std::string expectation(const Setting& setting);

// The usual boolean spellings, any case: 1/yes/true/on, 0/no/false/off.
bool parse_flag(std::string_view text, bool* out);

bool parse_number(std::string_view text, int64_t min, int64_t max, int64_t* out);

bool is_choice(const Setting& setting, std::string_view text);

}  // namespace gpuscope::protocol
