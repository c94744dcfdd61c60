// Microbenchmark of the cpu backend's fused quantized GEMV alone (quant_gemm, m = 1) on a
// cache-resident weight, one thread (no pool) unless THREADS: G weights/s for each scheme and ISA.
// Shows whether the kernel is compute-bound (a memory-bound GEMV needs roughly 10+ G NF4
// weights/s per core). Not a test; build against a configured build tree, e.g. build-q:
//
//   g++ -O2 -std=c++17 -I. bench/quant_gemv_micro.cpp build-q/backends/cpu/kernels/libtern_cpu_kernels.a \
//       build-q/runtime/kernels/libtern_kernel_util.a -lpthreadpool -lpthread -o /tmp/quant_gemv_micro
//   /tmp/quant_gemv_micro [rows=64] [cols=4096] [reps=15]
//   (env: ISA=avx2 one ISA only; M=16 a GEMM of 16 rows of A; INNER=n calls per sample; RAW;
//   THREADS=n a pthreadpool of n threads instead of the caller's thread alone)
//
// Prints, per scheme and ISA (and AVX2 NF4 lookup, quant_gemm.h Nf4Avx2Lookup), the median (min-max) over reps of the best-of-inner-loop rate.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/quant_gemm.h"

using namespace tern::cpu;

namespace {

struct Weight {
  QuantWeightDesc d;
  QuantWeightLayout l;
  std::vector<uint64_t> store;
  uint8_t* base = nullptr;  ///< store's first 64-byte boundary (the runtime aligns constants so)
};

Weight make(QuantWeightFormat f, Fp8Granularity g, uint32_t br, uint64_t rows, uint64_t cols) {
  Weight w;
  w.d.format = f;
  w.d.rows = rows;
  w.d.cols = cols;
  const bool nf4 = f == QuantWeightFormat::Nf4 || f == QuantWeightFormat::Nf4DoubleQuant;
  if (nf4) {
    w.d.block_size = 64;
    if (f == QuantWeightFormat::Nf4DoubleQuant) w.d.dq_block_size = 256;
  } else {
    w.d.granularity = g;
    w.d.block_rows = w.d.block_cols = br;
  }
  if (!quant_weight_layout(w.d, &w.l)) std::abort();
  std::mt19937 rng(1);
  std::vector<uint8_t> packed(nf4 ? (rows * cols + 1) / 2 : rows * cols);
  for (uint8_t& b : packed) {
    b = static_cast<uint8_t>(rng());
    if (!nf4) b &= 0x3F;  // finite codes of either format
  }
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::vector<float> absmax(w.l.blocks + 1), a2(w.l.dq_groups + 1), table(256), scale(w.l.scales + 1);
  std::vector<uint8_t> dq(w.l.blocks + 1);
  for (float& v : absmax) v = u(rng) * 0.05f;
  for (float& v : a2) v = u(rng) * 0.01f;
  for (int i = 0; i < 256; ++i) table[i] = -1.0f + 2.0f * i / 255.0f;
  for (uint8_t& v : dq) v = static_cast<uint8_t>(rng());
  for (float& v : scale) v = u(rng) * 0.01f;
  w.store.assign(w.l.total_bytes / 8 + 16, 0);
  w.base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(w.store.data()) + 63) /
                                      64 * 64);
  pack_quant_weight(w.d, w.l, packed.data(), absmax.data(), dq.data(), a2.data(), table.data(),
                    0.03f, scale.data(), w.base);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const uint64_t cols = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 15;
  struct Cfg {
    const char* name;
    QuantWeightFormat f;
    Fp8Granularity g;
    uint32_t br;
  };
  const Cfg cfgs[] = {
      {"nf4 b64", QuantWeightFormat::Nf4, Fp8Granularity::PerTensor, 0},
      {"nf4 b64 double", QuantWeightFormat::Nf4DoubleQuant, Fp8Granularity::PerTensor, 0},
      {"e4m3 per_channel", QuantWeightFormat::Fp8E4M3, Fp8Granularity::PerChannel, 0},
      {"e4m3 block 128", QuantWeightFormat::Fp8E4M3, Fp8Granularity::Block, 128},
      {"e5m2 per_channel", QuantWeightFormat::Fp8E5M2, Fp8Granularity::PerChannel, 0},
  };
  // M=<rows of A> (env): a GEMM of M rows instead of the GEMV (G weights/s then counts each
  // weight once per row of A, i.e. multiply-adds).
  const int64_t m = std::getenv("M") != nullptr ? std::atoll(std::getenv("M")) : 1;
  std::vector<float> x(cols * static_cast<uint64_t>(m)), y(rows * static_cast<uint64_t>(m));
  for (uint64_t i = 0; i < x.size(); ++i) x[i] = 0.001f * static_cast<float>(i % 97) - 0.05f;
  const int threads = std::getenv("THREADS") != nullptr ? std::atoi(std::getenv("THREADS")) : 1;
  pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
  std::printf("GEMV %llu x %llu, %d thread(s), G weights/s: median (min-max) of %d\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
              threads, reps);
  for (const Cfg& c : cfgs) {
    const Weight w = make(c.f, c.g, c.br, rows, cols);
    const bool nf4 = c.f == QuantWeightFormat::Nf4 || c.f == QuantWeightFormat::Nf4DoubleQuant;
    struct Variant {
      GemmIsa isa;
      Nf4Avx2Lookup lookup;
      const char* name;
    };
    std::vector<Variant> variants = {{GemmIsa::Avx512, Nf4Avx2Lookup::Permute, "avx512"}};
    if (nf4) {
      variants.push_back({GemmIsa::Avx2, Nf4Avx2Lookup::Permute, "avx2-permute"});
      variants.push_back({GemmIsa::Avx2, Nf4Avx2Lookup::BytePlanes, "avx2-planes"});
    } else {
      variants.push_back({GemmIsa::Avx2, Nf4Avx2Lookup::Permute, "avx2"});
    }
    variants.push_back({GemmIsa::Scalar, Nf4Avx2Lookup::Permute, "scalar"});
    for (const Variant& var : variants) {
      const GemmIsa isa = var.isa;
      const char* only = std::getenv("ISA");  // e.g. ISA=avx2: that one only
      if (only != nullptr && std::string(only) != gemm_isa_name(isa)) continue;
      if (!packed_gemm_isa_supported(isa) || !packed_gemm_force_isa(isa)) continue;
      quant_force_nf4_avx2_lookup(var.lookup);
      QuantGemmProblem p;
      p.m = m;
      p.a = x.data();
      p.lda = static_cast<int64_t>(cols);
      p.w = quant_weight_view(w.d, w.l, w.base);
      p.c = y.data();
      p.ldc = static_cast<int64_t>(rows);
      const int inner = std::getenv("INNER") != nullptr ? std::atoi(std::getenv("INNER"))
                        : isa == GemmIsa::Scalar ? 5 : 200;
      std::vector<double> rates;
      for (int r = 0; r < reps; ++r) {
        quant_gemm(p, pool);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < inner; ++i) quant_gemm(p, pool);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rates.push_back(static_cast<double>(rows * cols) * static_cast<double>(m) * inner / s / 1e9);
      }
      if (std::getenv("RAW") != nullptr) {
        for (double r : rates) std::printf(" %.1f", r);
        std::printf("\n");
      }
      std::sort(rates.begin(), rates.end());
      std::printf("  %-18s %-12s %6.2f (%.2f-%.2f)\n", c.name, var.name,
                  rates[rates.size() / 2], rates.front(), rates.back());
    }
  }
  if (pool != nullptr) pthreadpool_destroy(pool);
  return 0;
}
