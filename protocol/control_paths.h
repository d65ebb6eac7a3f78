// Where control sockets live, shared by the traced process and the CLI.
//
// One private directory per user: GPUSCOPE_CONTROL_DIR when set, else
// $XDG_RUNTIME_DIR/gpuscope, else /tmp/gpuscope-UID. It must be a real
// directory (not a symlink) owned by the effective user with no group or
// other permissions; anything else is refused, because whoever can write
// there could put their own socket in place of a process's. One socket per
// process: DIR/PID.sock.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::control {

// Where this process serves (the first candidate).
std::string control_dir();

// Where the CLI looks, in order: a service started without XDG_RUNTIME_DIR
// (systemd, cron) serves under /tmp even when the user's shell has one.
std::vector<std::string> candidate_dirs();

// Checks (and with create=true first makes, mode 0700) the directory;
// false with a sentence in *error when it is missing or not private.
bool ensure_private_dir(const std::string& dir, bool create, std::string* error);

std::string socket_path(const std::string& dir, pid_t pid);

// "1234.sock" -> 1234; false for any other name.
bool parse_socket_name(std::string_view name, pid_t* pid);

// sockaddr_un holds 107 path bytes.
inline constexpr size_t kMaxSocketPath = 107;

}  // namespace gpuscope::control
