#include "fast_unwind.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cstdint>

#include "frame_rules.h"

extern "C" void* __libc_stack_end;  // ld.so's record of the initial stack pointer

namespace gpuscope::stacks {
namespace {

// A rule packed into 40 bits, with 24 bits of the address's hash as a tag:
// an entry is two words written without a lock, and the tag tells a reader
// whether the rule word still belongs to the address it matched.
//   [0,2) Cfa kind  [2] rbp saved  [3,27) CFA offset  [27,40) rbp offset  [40,64) tag
constexpr unsigned kCacheLog2 = 14;  // 16384 call sites, 256 KiB
// The call sites of one 64 KiB stretch of code share a 4 KiB page of the
// table (256 entries): a short program's first walks fault in a page per
// stretch of code they pass through, ~10, instead of one per call site
// (~60 of the table's 64 pages, a tenth of a millisecond at every start).
constexpr unsigned kPageEntriesLog2 = 8;
constexpr unsigned kCodeStretchLog2 = 16;
constexpr int64_t kMaxCfaOffset = (int64_t{1} << 23) - 1;
constexpr int64_t kMaxRbpOffset = (int64_t{1} << 12) - 1;

struct Entry {
  std::atomic<uint64_t> address;  // 0: empty
  std::atomic<uint64_t> rule;
};
Entry* g_cache = nullptr;
// Bumped when code may have been unloaded: rules cached for addresses that
// may now hold other code stop matching (the tag mixes it in).
std::atomic<uint64_t> g_code_generation{0};

uint64_t mix(uint64_t a) {
  a ^= a >> 29;
  a *= 0xbf58476d1ce4e5b9ull;
  return a ^ (a >> 32);
}
uint64_t tag_of(uint64_t address) {
  const uint64_t generation = g_code_generation.load(std::memory_order_relaxed);
  return (mix(address ^ generation * 0x9e3779b97f4a7c15ull) >> 8) & 0xffffff;
}
Entry& slot_of(uint64_t address) {
  const uint64_t page = mix(address >> kCodeStretchLog2) << kPageEntriesLog2;
  const uint64_t within = mix(address) & ((uint64_t{1} << kPageEntriesLog2) - 1);
  return g_cache[(page | within) & ((uint64_t{1} << kCacheLog2) - 1)];
}

uint64_t pack(const FrameRule& r, uint64_t address) {
  FrameRule::Cfa kind = r.cfa;
  if (r.cfa_offset > kMaxCfaOffset || r.cfa_offset < -kMaxCfaOffset || r.rbp_offset > kMaxRbpOffset ||
      r.rbp_offset < -kMaxRbpOffset)
    kind = FrameRule::Cfa::Unsupported;
  return static_cast<uint64_t>(kind) | uint64_t{r.rbp_saved} << 2 |
         (static_cast<uint64_t>(r.cfa_offset) & 0xffffff) << 3 | (static_cast<uint64_t>(r.rbp_offset) & 0x1fff) << 27 |
         tag_of(address) << 40;
}

int64_t sign_extend(uint64_t v, int bits) { return static_cast<int64_t>(v << (64 - bits)) >> (64 - bits); }

// The packed rule for return address `ra` (the call is at ra - 1).
uint64_t rule_for(uint64_t ra) noexcept {
  Entry& e = slot_of(ra);
  if (e.address.load(std::memory_order_acquire) == ra) {
    const uint64_t r = e.rule.load(std::memory_order_acquire);
    if (r >> 40 == tag_of(ra)) return r;
  }
  const uint64_t r = pack(frame_rule_at(ra - 1), ra);
  e.address.store(0, std::memory_order_relaxed);
  e.rule.store(r, std::memory_order_release);
  e.address.store(ra, std::memory_order_release);
  return r;
}

// What this thread's previous walk found, frame by frame: a loop that keeps
// calling from the same place walks the same return addresses, and a rule
// taken from here keeps the shared table's probe (a hash and a dependent
// load) off the chain of loads a walk is (~9 ns a frame -> ~3).
constexpr int kMemoFrames = 72;  // GPUSCOPE_STACK_DEPTH's 64 plus the frames skipped
struct Memo {
  uint64_t address[kMemoFrames];
  uint64_t rule[kMemoFrames];
};

// The calling thread's stack: [lowest address, one past the highest), and
// its walk memo (null when it could not be allocated).
struct ThreadState {
  uintptr_t low = 0, high = 0;
  Memo* memo = nullptr;
  uint64_t generation = 0;  // of the rules in the memo
  bool known = false;
};
thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));
pthread_key_t g_memo_key;  // frees a thread's memo when it exits

// Runs on the exiting thread: a hook reached from a later destructor then
// walks without a memo instead of writing to freed memory.
void free_memo(void* memo) {
  t_state.memo = nullptr;
  free(memo);
}

// The main thread's stack without pthread_getattr_np, which reads and
// parses /proc/self/maps for it (~0.1 ms of a traced program's first
// walk). The top: the page holding the stack pointer the process started
// with (above it, arguments and environment; no frame). The bottom: as far
// down as RLIMIT_STACK lets it grow (glibc's own assumption; the kernel
// keeps other mappings out of that gap), 32 MiB when unlimited, as glibc.
bool main_thread_stack(uintptr_t* low, uintptr_t* high) noexcept {
  if (gettid() != getpid() || __libc_stack_end == nullptr) return false;
  rlimit limit{};
  uint64_t size = uint64_t{32} << 20;
  if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) size = limit.rlim_cur;
  *high = (reinterpret_cast<uintptr_t>(__libc_stack_end) | 4095) + 1;
  *low = *high > size ? *high - size : 0;
  return true;
}

// Any other thread's stack, as its pthread attributes give it.
void thread_stack(uintptr_t* low, uintptr_t* high) noexcept {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
    *low = reinterpret_cast<uintptr_t>(addr);
    *high = *low + size;
  }
  pthread_attr_destroy(&attr);
}

// Once per thread.
ThreadState& thread_state() noexcept {
  ThreadState& t = t_state;
  if (t.known) return t;
  t.known = true;
  if (!main_thread_stack(&t.low, &t.high)) thread_stack(&t.low, &t.high);
  t.memo = static_cast<Memo*>(calloc(1, sizeof(Memo)));
  if (t.memo != nullptr) pthread_setspecific(g_memo_key, t.memo);
  return t;
}

uint64_t remembered_rule(Memo* memo, int frame, uint64_t ra) noexcept {
  if (memo == nullptr) return rule_for(ra);
  if (memo->address[frame] == ra) return memo->rule[frame];
  const uint64_t r = rule_for(ra);
  memo->address[frame] = ra;
  memo->rule[frame] = r;
  return r;
}

}  // namespace

void forget_unwind_rules() noexcept { g_code_generation.fetch_add(1, std::memory_order_relaxed); }

bool init_fast_unwind() noexcept {
  if (g_cache != nullptr) return true;
  if (pthread_key_create(&g_memo_key, free_memo) != 0) return false;
  void* mem = mmap(nullptr, sizeof(Entry) << kCacheLog2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  g_cache = static_cast<Entry*>(mem);  // zero pages: every entry empty
  return true;
}

// The frame pointer of this function is forced (__builtin_frame_address),
// which gives the exact starting state: the caller's return address at
// fp + 8, its stack pointer fp + 16, its rbp saved at fp.
__attribute__((noinline)) int fast_backtrace(void** buffer, int size) noexcept {
  ThreadState& stack = thread_state();
  const uint64_t generation = g_code_generation.load(std::memory_order_relaxed);
  if (stack.generation != generation) {
    if (stack.memo != nullptr) memset(stack.memo, 0, sizeof(Memo));
    stack.generation = generation;
  }
  const auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (g_cache == nullptr || fp < stack.low || fp + 16 > stack.high) return -1;
  uintptr_t ip = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  uintptr_t sp = fp + 16;
  uintptr_t bp = *reinterpret_cast<const uintptr_t*>(fp);
  int n = 0;
  size = size < kMemoFrames ? size : kMemoFrames;
  while (n < size && ip != 0) {
    buffer[n++] = reinterpret_cast<void*>(ip);
    const uint64_t r = remembered_rule(stack.memo, n - 1, ip);
    const auto kind = static_cast<FrameRule::Cfa>(r & 3);
    if (kind == FrameRule::Cfa::End) break;
    if (kind == FrameRule::Cfa::Unsupported) return -1;
    const uintptr_t cfa = (kind == FrameRule::Cfa::Rsp ? sp : bp) + sign_extend(r >> 3, 24);
    // Frames only go up the stack, and everything read lies on it.
    if (cfa <= sp || cfa > stack.high || (cfa & 7) != 0) return -1;
    uintptr_t caller_bp = bp;
    if (r & 4) {
      // A save slot below the stack pointer belongs to a frame already torn
      // down (a call after the epilogue's pops, where the tables still
      // name the slot): rbp holds the caller's value again.
      const uintptr_t at = cfa + sign_extend(r >> 27, 13);
      if (at + 8 > stack.high) return -1;
      if (at >= sp) caller_bp = *reinterpret_cast<const uintptr_t*>(at);
    }
    ip = *reinterpret_cast<const uintptr_t*>(cfa - 8);
    sp = cfa;
    bp = caller_bp;
  }
  return n;
}

}  // namespace gpuscope::stacks
