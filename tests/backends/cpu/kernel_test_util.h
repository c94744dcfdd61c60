// Helpers shared by the cpu kernel tests (cpu_gemm_test, cpu_conv_test, cpu_winograd_test,
// cpu_layout_test): random data, the ISAs this CPU runs, an owned pthreadpool, buffers that end
// at a PROT_NONE page, and a fixture restoring the ISA and blocking knobs.
#pragma once

#include <gtest/gtest.h>
#include <pthreadpool.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu::kernel_test {

/// `count` floats uniform in [lo, hi), reproducible from `seed`.
inline std::vector<float> random_floats(size_t count, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Every GEMM ISA this build and CPU can run.
inline std::vector<GemmIsa> supported_isas() {
  std::vector<GemmIsa> isas;
  for (GemmIsa isa : {GemmIsa::Scalar, GemmIsa::Avx2, GemmIsa::Avx512}) {
    if (packed_gemm_isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

/// A pthreadpool of `threads` workers, destroyed with this object.
struct Pool {
  explicit Pool(size_t threads) : pool(pthreadpool_create(threads)) {}
  ~Pool() { pthreadpool_destroy(pool); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  pthreadpool_t pool;
};

/// `bytes` ending exactly at a PROT_NONE page: reading or writing one byte past faults.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    data_pages_ = (bytes + page_ - 1) / page_;
    total_ = (data_pages_ + 1) * page_;
    void* base = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(base);
    if (mprotect(base_ + data_pages_ * page_, page_, PROT_NONE) != 0) return;
    data_ = reinterpret_cast<float*>(base_ + data_pages_ * page_ - bytes);
  }
  ~GuardedBuffer() {
    if (base_ != nullptr) munmap(base_, total_);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  float* data() const { return data_; }
  /// Makes the data pages read-only: a write faults too.
  bool make_read_only() { return mprotect(base_, data_pages_ * page_, PROT_READ) == 0; }

 private:
  size_t page_ = 0, data_pages_ = 0, total_ = 0;
  uint8_t* base_ = nullptr;
  float* data_ = nullptr;
};

/// A test fixture that restores dispatch's ISA choice and one set of blocking knobs (the
/// object `knobs()` returns, e.g. gemm_detail::gemm_blocking()) after each test, so a test may
/// force an ISA or shrink the blocks.
template <typename Knobs, Knobs& (*knobs)()>
class RestoresIsaAndKnobs : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_isa_ = packed_gemm_isa();
    saved_knobs_ = knobs();
  }
  void TearDown() override {
    ASSERT_TRUE(packed_gemm_force_isa(saved_isa_));
    knobs() = saved_knobs_;
  }

  GemmIsa saved_isa_ = GemmIsa::Scalar;  ///< dispatch's choice when the test started

 private:
  Knobs saved_knobs_;
};

}  // namespace tern::cpu::kernel_test
