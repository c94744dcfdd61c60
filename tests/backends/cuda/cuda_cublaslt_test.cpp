// cuBLASLt is loaded at run time (backends/cuda/runtime/cublaslt_api.h): not linked, not opened
// on a machine without a device, a clear reason when it is missing, every function resolved
// when it is there.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "backends/cuda/runtime/cublaslt_api.h"
#include "backends/cuda/runtime/register_cuda_backend.h"

namespace tern {
namespace {

std::string process_maps() {
  std::ifstream in("/proc/self/maps");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool all_null(const cuda::CublasLtApi& api) {
  bool null = true;
#define TERN_CHECK_NULL(name) null = null && api.name == nullptr;
  TERN_CUBLASLT_FUNCTIONS(TERN_CHECK_NULL)
#undef TERN_CHECK_NULL
  return null;
}

TEST(CudaCublasLt, NotLinkedAndNotOpenedWithoutADevice) {
  // Linked, the library would be mapped before main.
  ASSERT_EQ(process_maps().find("libcublasLt"), std::string::npos);
  if (cuda_backend_interface().is_available()) {
    GTEST_SKIP() << "a CUDA device is present: the probe loads cuBLASLt";
  }
  EXPECT_EQ(process_maps().find("libcublasLt"), std::string::npos)
      << "the probe opened cuBLASLt without a device (" << cuda_unavailable_reason() << ")";
  EXPECT_TRUE(all_null(cuda::lt()));
}

TEST(CudaCublasLt, MissingLibraryIsAClearReason) {
  cuda::CublasLtApi api;
  char why[512] = {};
  EXPECT_FALSE(cuda::open_cublaslt("libcublasLt.so.999", &api, why, sizeof(why)));
  const std::string reason = why;
  EXPECT_EQ(reason.rfind("libcublasLt.so.999 not found: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("libcublasLt.so.999"), std::string::npos) << reason;  // dlerror's text
  EXPECT_TRUE(all_null(api));
}

TEST(CudaCublasLt, LibraryWithoutTheFunctionsIsRefused) {
  cuda::CublasLtApi api;
  char why[512] = {};
  EXPECT_FALSE(cuda::open_cublaslt("libm.so.6", &api, why, sizeof(why)));
  EXPECT_EQ(std::string(why).rfind("libm.so.6 has no cublasLtCreate: ", 0), 0u) << why;
  EXPECT_TRUE(all_null(api));
}

TEST(CudaCublasLt, ToolkitLibraryResolvesEveryFunction) {
  const cuda::CublasLtLoad& load = cuda::load_cublaslt();
  if (!load.loaded) GTEST_SKIP() << "no cuBLASLt on this machine: " << load.reason;
  EXPECT_STREQ(load.reason, "");
#define TERN_CHECK_SET(name) EXPECT_NE(cuda::lt().name, nullptr) << #name;
  TERN_CUBLASLT_FUNCTIONS(TERN_CHECK_SET)
#undef TERN_CHECK_SET
  EXPECT_NE(process_maps().find("libcublasLt"), std::string::npos);
}

}  // namespace
}  // namespace tern
