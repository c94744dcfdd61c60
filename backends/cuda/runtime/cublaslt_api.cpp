// Loading cuBLASLt at run time (cublaslt_api.h).
#include "backends/cuda/runtime/cublaslt_api.h"

#include <dlfcn.h>

#include <cstdio>

#ifndef TERN_CUBLASLT_SONAME
#define TERN_CUBLASLT_SONAME "libcublasLt.so.13"
#endif

namespace tern::cuda {
namespace {

CublasLtApi& table() {
  static CublasLtApi api;
  return api;
}

CublasLtLoad run_load() {
  CublasLtLoad load;
  load.loaded = open_cublaslt(TERN_CUBLASLT_SONAME, &table(), load.reason, sizeof(load.reason));
#ifdef TERN_CUBLASLT_DIR
  if (!load.loaded) {
    // The build's toolkit, where the dynamic linker is not told about it (what linking with
    // the toolkit's RPATH used to give a build-tree binary). The first reason is kept.
    char why[sizeof(load.reason)];
    load.loaded =
        open_cublaslt(TERN_CUBLASLT_DIR "/" TERN_CUBLASLT_SONAME, &table(), why, sizeof(why));
  }
#endif
  if (load.loaded) load.reason[0] = '\0';
  return load;
}

}  // namespace

bool open_cublaslt(const char* library, CublasLtApi* api, char* why, size_t why_size) {
  *api = CublasLtApi{};
  (void)dlerror();
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    std::snprintf(why, why_size, "%s not found: %s", library, e != nullptr ? e : "(no dlerror)");
    return false;
  }
  CublasLtApi loaded;
#define TERN_CUBLASLT_LOAD(name)                                               \
  loaded.name = reinterpret_cast<decltype(loaded.name)>(dlsym(handle, #name)); \
  if (loaded.name == nullptr) {                                                \
    const char* e = dlerror();                                                 \
    std::snprintf(why, why_size, "%s has no %s: %s", library, #name,           \
                  e != nullptr ? e : "(null symbol)");                         \
    dlclose(handle);                                                           \
    return false;                                                              \
  }
  TERN_CUBLASLT_FUNCTIONS(TERN_CUBLASLT_LOAD)
#undef TERN_CUBLASLT_LOAD
  *api = loaded;
  return true;
}

const CublasLtLoad& load_cublaslt() {
  static const CublasLtLoad load = run_load();
  return load;
}

const CublasLtApi& lt() { return table(); }

}  // namespace tern::cuda
