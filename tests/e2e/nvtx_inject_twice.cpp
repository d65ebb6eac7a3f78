// Plays an NVTX instance by hand: loads the library NVTX_INJECTION64_PATH
// names, hands InitializeInjectionNvtx2 a fake export table twice, and
// checks the entry point is idempotent (same answer, same handlers) and
// that the installed handlers behave as without a tool where the program
// can see it (push/pop), and give stable handles for domains and
// registered strings. Prints "ok" and exits 0, else names the failure, 1.
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

namespace {

NvtxFunctionPointer g_core[NVTX_CBID_CORE_SIZE];
NvtxFunctionPointer g_core2[NVTX_CBID_CORE2_SIZE];
NvtxFunctionPointer* g_core_table[NVTX_CBID_CORE_SIZE];
NvtxFunctionPointer* g_core2_table[NVTX_CBID_CORE2_SIZE];

int get_module_table(NvtxCallbackModule module, NvtxFunctionTable* out, unsigned* size) {
  if (module == NVTX_CB_MODULE_CORE) {
    *out = g_core_table;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (module == NVTX_CB_MODULE_CORE2) {
    *out = g_core2_table;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}

const NvtxExportTableCallbacks kCallbacks = {sizeof(NvtxExportTableCallbacks), &get_module_table};
const void* get_export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr; }

int fail(const char* what) {
  std::printf("FAIL: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  for (unsigned i = 1; i < NVTX_CBID_CORE_SIZE; ++i) g_core_table[i] = &g_core[i];
  for (unsigned i = 1; i < NVTX_CBID_CORE2_SIZE; ++i) g_core2_table[i] = &g_core2[i];
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  if (path == nullptr) return fail("NVTX_INJECTION64_PATH is not set");
  void* lib = dlopen(path, RTLD_LAZY);
  if (lib == nullptr) return fail("dlopen");
  auto init = reinterpret_cast<NvtxInitializeInjectionNvtxFunc_t>(dlsym(lib, "InitializeInjectionNvtx2"));
  if (init == nullptr) return fail("InitializeInjectionNvtx2 is not exported");
  if (init(&get_export_table) != 1) return fail("first initialization");
  const NvtxFunctionPointer push_first = g_core[NVTX_CBID_CORE_RangePushA];
  const NvtxFunctionPointer create_first = g_core2[NVTX_CBID_CORE2_DomainCreateA];
  if (init(&get_export_table) != 1) return fail("second initialization");
  if (push_first == nullptr || create_first == nullptr) return fail("handlers not installed");
  if (g_core[NVTX_CBID_CORE_RangePushA] != push_first || g_core2[NVTX_CBID_CORE2_DomainCreateA] != create_first)
    return fail("second initialization installed different handlers");
  if (g_core[NVTX_CBID_CORE_NameCategoryA] != nullptr) return fail("an entry gpuscope does not handle was touched");

  auto push = reinterpret_cast<nvtxRangePushA_impl_fntype>(push_first);
  auto pop = reinterpret_cast<nvtxRangePop_impl_fntype>(g_core[NVTX_CBID_CORE_RangePop]);
  if (push("twice") != NVTX_NO_PUSH_POP_TRACKING || pop() != NVTX_NO_PUSH_POP_TRACKING)
    return fail("push/pop must answer as without a tool");
  auto create = reinterpret_cast<nvtxDomainCreateA_impl_fntype>(create_first);
  auto reg = reinterpret_cast<nvtxDomainRegisterStringA_impl_fntype>(g_core2[NVTX_CBID_CORE2_DomainRegisterStringA]);
  const nvtxDomainHandle_t d = create("twice_domain");
  if (d == nullptr || create("twice_domain") != d || create("other_domain") == d) return fail("domain handles");
  const nvtxStringHandle_t s = reg(d, "registered");
  if (s == nullptr || reg(d, "registered") != s) return fail("registered string handles");
  if (init(nullptr) != 0) return fail("a null export-table getter must be refused");
  std::printf("ok\n");
  return 0;
}
