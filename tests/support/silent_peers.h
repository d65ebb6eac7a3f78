// Connections to a Unix stream socket that say nothing and stay open: the
// control socket's worst ordinary peers (tests of standby and attach).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace gpuscope::test {

// n connections to `socket_path`, or as many as the server accepted within
// `limit` (a non-blocking connect fails while its listen queue is full, so
// a server that does not accept shows here). The caller closes them.
inline std::vector<int> silent_peers(const std::string& socket_path, size_t n, std::chrono::milliseconds limit) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), std::min(socket_path.size() + 1, sizeof addr.sun_path - 1));
  std::vector<int> fds;
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (fds.size() < n && std::chrono::steady_clock::now() < give_up) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      fds.push_back(fd);
      continue;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return fds;
}

}  // namespace gpuscope::test
