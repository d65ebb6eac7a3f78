// Writes control-protocol fuzz seeds: one well-formed message of each kind.
#include <fstream>
#include <string>

#include "control_protocol.h"

int main(int argc, char** argv) {
  using namespace gpuscope::control;
  if (argc != 2) return 2;
  const std::vector<std::vector<uint8_t>> seeds = {
      encode_request(Request{MessageType::Attach, 0, "/tmp/gpuscope-x.gpuscope"}),
      encode_request(Request{MessageType::Attach, 10'000, "/home/u/traces/a b.gpuscope"}),
      encode_request(Request{MessageType::Detach, 0, ""}),
      encode_request(Request{MessageType::Status, 0, ""}),
      encode_reply(Reply{true, ProcessState::Capturing, "/tmp/gpuscope-x.gpuscope"}),
      encode_reply(Reply{false, ProcessState::Idle, "cannot create /x: Permission denied"}),
  };
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(std::string(argv[1]) + "/control-" + std::to_string(i) + ".bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
    if (!out) return 1;
  }
  return 0;
}
