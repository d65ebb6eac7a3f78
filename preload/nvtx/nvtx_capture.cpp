#include "nvtx_capture.h"

#include <atomic>

#include "capture_window.h"

namespace gpuscope::nvtx {
namespace {

using capture::WindowConfig;

// Interned ids of the configured message and domain, once known. Domains
// and registered strings are interned when the program creates them, under
// the same id (the table deduplicates), so comparing ids is comparing text.
// 0: not known yet (asked again next time: the table may have been full).
std::atomic<uint32_t> g_message_id{0};
std::atomic<uint32_t> g_domain_id{0};

uint32_t cached_id(std::atomic<uint32_t>& cache, const std::string& text) noexcept {
  uint32_t id = cache.load(std::memory_order_relaxed);
  if (id == 0) {
    id = intern_registration(text);
    cache.store(id, std::memory_order_relaxed);
  }
  return id;
}

bool domain_matches(const WindowConfig& c, uint32_t domain) noexcept {
  if (c.nvtx_domain.empty()) return domain == 0;  // the default domain
  return domain != 0 && domain == cached_id(g_domain_id, c.nvtx_domain);
}

bool message_matches(const WindowConfig& c, const Message& m) noexcept {
  const uint32_t id = m.type == Message::Type::Registered ? cached_id(g_message_id, c.nvtx_message) : 0;
  return m.equals(c.nvtx_message, id);
}

// Which push/pop range holds the window open: a token for its thread
// (unique for the life of the process, unlike a thread's TLS address) and
// the thread's push depth in the domain just after that push.
std::atomic<uint64_t> g_next_token{1};
std::atomic<uint64_t> g_owner_token{0};
std::atomic<uint32_t> g_owner_depth{0};
// The start/end range that holds it open; 0: none.
std::atomic<uint64_t> g_owner_range{0};

thread_local uint32_t t_depth __attribute__((tls_model("initial-exec"))) = 0;  // pushes open in the domain
thread_local uint64_t t_token __attribute__((tls_model("initial-exec"))) = 0;

uint64_t thread_token() noexcept {
  if (t_token == 0) t_token = g_next_token.fetch_add(1, std::memory_order_relaxed);
  return t_token;
}

}  // namespace

void capture_on_push(uint32_t domain, const Message& message) noexcept {
  const WindowConfig* c = capture::nvtx_capture_range();
  if (c == nullptr || !domain_matches(*c, domain)) return;
  ++t_depth;
  if (!message_matches(*c, message) || !capture::open_range_window()) return;
  g_owner_depth.store(t_depth, std::memory_order_relaxed);
  g_owner_token.store(thread_token(), std::memory_order_release);
}

void capture_on_pop(uint32_t domain) noexcept {
  const WindowConfig* c = capture::nvtx_capture_range();
  if (c == nullptr || !domain_matches(*c, domain) || t_depth == 0) return;  // a pop without its push: not ours
  uint64_t mine = thread_token();
  if (g_owner_depth.load(std::memory_order_relaxed) == t_depth &&
      g_owner_token.compare_exchange_strong(mine, 0, std::memory_order_acq_rel))
    capture::close_range_window();
  --t_depth;
}

void capture_on_start(uint32_t domain, const Message& message, uint64_t range_id) noexcept {
  const WindowConfig* c = capture::nvtx_capture_range();
  if (c == nullptr || !domain_matches(*c, domain) || !message_matches(*c, message)) return;
  if (capture::open_range_window()) g_owner_range.store(range_id, std::memory_order_release);
}

void capture_on_end(uint64_t range_id) noexcept {
  if (range_id == 0 || capture::nvtx_capture_range() == nullptr) return;
  uint64_t expected = range_id;
  if (g_owner_range.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) capture::close_range_window();
}

}  // namespace gpuscope::nvtx
