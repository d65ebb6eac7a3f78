// The control channel of a process in standby: one Unix stream socket,
// DIR/PID.sock in the user's private directory (control_paths.h), served by
// one background thread started with every signal blocked. No signal
// handler is taken: SIGUSR1/SIGUSR2 stay the program's.
//
// Each connection carries one request and gets one reply. A peer whose
// uid (SO_PEERCRED) is neither ours nor root's is refused and logged; a
// message that is foreign, malformed, oversized or truncated is answered
// with a one-line error and the peer dropped; a peer that stays silent is
// dropped after kPeerTimeoutMs. None of it reaches the program.
//
// Up to kMaxPeers connections are served at once from one poll, each with
// its own deadline, so a silent or slow peer delays no other; when all
// slots are taken, the peer closest to its deadline makes room.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "control_protocol.h"

namespace gpuscope::control {

inline constexpr int kPeerTimeoutMs = 1000;
inline constexpr size_t kMaxPeers = 64;

struct ServerHandlers {
  std::function<Reply(const Request&)> handle;
  // Monotonic ns at which on_deadline must run (an attach's --duration);
  // 0: none. Read after every wake-up.
  std::function<uint64_t()> deadline_ns;
  std::function<void()> on_deadline;
};

// Binds DIR/PID.sock (replacing a socket this pid left behind, say before
// an exec) and starts the thread. False with a sentence in *error.
bool start_server(const std::string& dir, ServerHandlers handlers, std::string* error);

// Process exit: the socket is removed and the thread told to stop (it is
// not waited for: the process is ending).
void stop_server();

// Makes the thread read deadline_ns again (an attach made without the
// socket, by tests).
void wake_server();

// The child of fork(): it has no server thread; the inherited descriptors
// are closed so the socket serves only the parent.
void close_server_after_fork();

// Connections refused (peer uid) and messages rejected so far (tests).
uint64_t refused_peers();
uint64_t rejected_messages();

}  // namespace gpuscope::control
