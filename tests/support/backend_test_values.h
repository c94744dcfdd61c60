// Values and comparisons shared by the backend tests (tests/backends/{cpu,vulkan,cuda}): a
// 64-byte-aligned copy of a blob, seeded random floats, element counts, NMSE and max relative
// error against a reference, finiteness.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/core/freeable_buffer.h"

namespace tern::test_support {

/// A blob copied into 64-byte-aligned storage (the alignment a program's segments have).
class AlignedBlob {
 public:
  explicit AlignedBlob(const std::vector<uint8_t>& bytes) : size_(bytes.size()) {
    store_.resize((size_ + 63) / 64 + 1);
    if (size_ > 0) std::memcpy(data(), bytes.data(), size_);
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(store_.data()); }
  /// A view for BackendInterface::init (nothing to free).
  FreeableBuffer buffer() { return FreeableBuffer(data(), size_, nullptr); }

 private:
  struct alignas(64) Line {
    uint8_t bytes[64];
  };
  std::vector<Line> store_;
  size_t size_;
};

/// Uniform random floats in [lo, hi), seeded.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -2.0f,
                                        float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

inline size_t numel(const std::vector<int64_t>& sizes) {
  size_t n = 1;
  for (int64_t d : sizes) n *= static_cast<size_t>(d);
  return n;
}

/// sum (a - b)^2 / sum b^2 (absolute when b is all zeros); 1e30 when the sizes differ.
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? num / den : num;
}

/// max |a - b| / max |b| (absolute when b is all zeros).
inline double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::fabs(static_cast<double>(b[i])));
  }
  return ref > 0 ? err / ref : err;
}

inline bool all_finite(const std::vector<float>& v) {
  for (float f : v) {
    if (!std::isfinite(f)) return false;
  }
  return true;
}

}  // namespace tern::test_support
