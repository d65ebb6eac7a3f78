#include "python_codes.h"

#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include "python_frame.h"
#include "python_frames.h"
#include "python_runtime.h"

namespace gpuscope::python {
namespace {

// Bounds of one copy: a longer name is cut, a longer line table is cut and
// flagged (lines past the cut are then unknown).
constexpr uint32_t kMaxFile = 512, kMaxName = 256, kMaxLineTable = 4096;
constexpr uint32_t kHeaderWords = 3;
constexpr uint32_t kMaxWords = kHeaderWords + (kMaxFile + kMaxName + kMaxLineTable + 7) / 8;

// Code objects already copied: an insert-only lock-free set of addresses,
// mapped once, open addressing; full -> the code object is not copied.
class AddressSet {
 public:
  bool init(uint32_t slots_log2) noexcept {
    const size_t bytes = (size_t{1} << slots_log2) * sizeof(std::atomic<uint64_t>);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    slots_ = static_cast<std::atomic<uint64_t>*>(p);
    mask_ = (size_t{1} << slots_log2) - 1;
    return true;
  }
  enum class Insert { New, Known, Full };
  Insert insert(uint64_t key) noexcept {
    size_t i = (key >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask_;
    for (size_t probes = 0; probes <= mask_ / 4 * 3; ++probes, i = (i + 1) & mask_) {
      uint64_t v = slots_[i].load(std::memory_order_acquire);
      if (v == key) return Insert::Known;
      if (v == 0 && slots_[i].compare_exchange_strong(v, key, std::memory_order_acq_rel)) return Insert::New;
      if (v == key) return Insert::Known;  // another thread won the slot with the same key
    }
    return Insert::Full;
  }

 private:
  std::atomic<uint64_t>* slots_ = nullptr;
  size_t mask_ = 0;
};

struct Tables {
  AddressSet seen;
  stacks::StackTable codes;
};
std::atomic<Tables*> g_tables{nullptr};
std::atomic<uint64_t> g_dropped{0};

uint32_t put_utf8(uint32_t c, uint32_t width, char* out) {
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  if (width == 1) {
    out[0] = static_cast<char>(c);
    return 1;
  }
  for (uint32_t k = width - 1; k > 0; --k, c >>= 6) out[k] = static_cast<char>(0x80 | (c & 0x3F));
  out[0] = static_cast<char>(kLead[width] | c);
  return width;
}

// Appends as UTF-8 a str object's text (compact strings only:
// names and file names always are); returns the bytes written.
uint32_t copy_text(const Runtime& rt, const char* str, char* out, uint32_t room) {
  if (str == nullptr || field<const void*>(str, 8) != rt.unicode_type) return 0;
  const auto length = field<int64_t>(str, 16);
  const auto state = field<uint32_t>(str, 32);
  const uint32_t kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;
  if (compact == 0 || length < 0) return 0;
  const char* data = str + (ascii != 0 ? rt.layout.ascii_size : rt.layout.compact_size);
  uint32_t n = 0;
  for (int64_t i = 0; i < length; ++i) {
    const uint32_t c = kind == 1   ? static_cast<uint8_t>(data[i])
                       : kind == 2 ? field<uint16_t>(data, static_cast<int32_t>(i * 2))
                                   : field<uint32_t>(data, static_cast<int32_t>(i * 4));
    const uint32_t width = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (n + width > room) break;
    n += put_utf8(c, width, out + n);
  }
  return n;
}

// Packs one code object (alive: the calling thread runs it) into `words`.
uint32_t pack_code(const Runtime& rt, const char* code, uint64_t* words) {
  const Layout& l = rt.layout;
  char* bytes = reinterpret_cast<char*>(words + kHeaderWords);
  const uint32_t file = copy_text(rt, field<const char*>(code, l.code_filename), bytes, kMaxFile);
  const uint32_t name = copy_text(rt, field<const char*>(code, l.code_name), bytes + file, kMaxName);
  uint32_t table = 0;
  bool cut = false;
  if (const char* t = field<const char*>(code, l.code_line_table); t != nullptr && field<const void*>(t, 8) == rt.bytes_type) {
    const auto size = field<int64_t>(t, 16);  // ob_size; the bytes start at 32
    table = size < 0 ? 0 : size > kMaxLineTable ? kMaxLineTable : static_cast<uint32_t>(size);
    cut = size > kMaxLineTable;
    std::memcpy(bytes + file + name, t + 32, table);
  }
  const uint32_t used = file + name + table;
  std::memset(bytes + used, 0, (8 - used % 8) % 8);
  words[0] = reinterpret_cast<uint64_t>(code);
  words[1] = static_cast<uint32_t>(field<int>(code, l.code_first_line)) | (cut ? uint64_t{1} << 32 : 0);
  words[2] = file | uint64_t{name} << 16 | uint64_t{table} << 32;
  return kHeaderWords + (used + 7) / 8;
}

}  // namespace

// Made when an interpreter is found, not at start-up: a program without
// Python never maps them; never freed (hooks may still be copying at exit).
void prepare_code_tables() {
  if (g_tables.load(std::memory_order_acquire) != nullptr) return;
  auto* t = new Tables;
  if (!t->seen.init(16) || !t->codes.init(16, uint64_t{1} << 21)) return;  // leaked: never taken again
  g_tables.store(t, std::memory_order_release);
}

const stacks::StackTable* code_table() noexcept {
  Tables* t = g_tables.load(std::memory_order_acquire);
  return t == nullptr ? nullptr : &t->codes;
}
uint64_t codes_dropped() noexcept { return g_dropped.load(std::memory_order_relaxed); }

__attribute__((noinline)) void remember_python_codes(const uint64_t* frames, uint32_t count) noexcept {
  const Runtime* rt = runtime();
  Tables* t = g_tables.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < count; ++i) {
    if (!container::is_python_frame(frames[i])) continue;
    const uint64_t code = container::python_frame_code(frames[i]);
    const AddressSet::Insert seen = t != nullptr ? t->seen.insert(code) : AddressSet::Insert::Full;
    if (seen == AddressSet::Insert::Known) continue;
    uint64_t words[kMaxWords];
    if (seen == AddressSet::Insert::Full ||
        t->codes.intern(words, pack_code(*rt, reinterpret_cast<const char*>(code), words)) == 0)
      g_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

bool unpack_code(std::span<const uint64_t> words, container::PythonCodeDescription* out) {
  if (words.size() < kHeaderWords) return false;
  const uint64_t file = words[2] & 0xFFFF, name = words[2] >> 16 & 0xFFFF, table = words[2] >> 32;
  if ((file + name + table + 7) / 8 > words.size() - kHeaderWords) return false;
  const char* bytes = reinterpret_cast<const char*>(words.data() + kHeaderWords);
  out->key = words[0];
  out->first_line = static_cast<uint32_t>(words[1]);
  out->line_table_cut = (words[1] >> 32 & 1) != 0;
  out->file.assign(bytes, file);
  out->name.assign(bytes + file, name);
  out->line_table.assign(bytes + file + name, bytes + file + name + table);
  return true;
}

}  // namespace gpuscope::python
