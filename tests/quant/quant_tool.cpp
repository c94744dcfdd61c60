// The compiler's NF4 / FP8 encoders on raw little-endian files, for the Python reference tests
// (tests/quant/test_quant_reference.py):
//
//   quant_tool nf4 BLOCK IN.f32 OUT_DIR        packed.bin, absmax.bin (f32)
//   quant_tool nf4dq BLOCK IN.f32 OUT_DIR      the above plus dq_codes.bin (u8), dq_absmax2.bin,
//                                              dq_offset.bin, dq_table.bin (f32), dq_absmax.bin
//                                              (the decoded absmax values)
//   quant_tool fp8 e4m3|e5m2 IN.f32 OUT.bin    one encoded byte per value (no scale)
//   quant_tool fp8dec e4m3|e5m2 OUT.bin        the 256 decoded values (f32)
//   quant_tool fp8q e4m3|e5m2 GRAN ROWS COLS IN.f32 OUT_DIR
//                                              codes.bin, scales.bin; GRAN per_tensor,
//                                              per_channel or block=RxC
//   quant_tool dynamic_map OUT.bin             the 256-entry double-quant code table (f32)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/compiler/fp8.h"
#include "tools/compiler/nf4.h"
#include "tools/compiler/quantize.h"

namespace {

using namespace tern::compiler;

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.begin() + static_cast<long>(v.size() * 4),
            reinterpret_cast<char*>(v.data()));
  return v;
}

void write(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out) throw std::runtime_error("cannot write " + path);
}

Fp8Format format(const std::string& s) {
  if (s == "e4m3") return Fp8Format::E4M3;
  if (s == "e5m2") return Fp8Format::E5M2;
  throw std::runtime_error("format must be e4m3 or e5m2, found " + s);
}

int run(int argc, char** argv) {
  if (argc < 3) throw std::runtime_error("usage: see the comment at the top of quant_tool.cpp");
  const std::string mode = argv[1];
  if (mode == "dynamic_map") {
    const auto& t = bnb_dynamic_map();
    write(argv[2], t.data(), t.size() * 4);
    return 0;
  }
  if ((mode == "nf4" || mode == "nf4dq") && argc == 5) {
    const uint32_t block = static_cast<uint32_t>(std::stoul(argv[2]));
    const std::vector<float> x = read_f32(argv[3]);
    const std::string dir = argv[4];
    const Nf4Encoded e = nf4_quantize(x.data(), x.size(), block);
    write(dir + "/packed.bin", e.packed.data(), e.packed.size());
    write(dir + "/absmax.bin", e.absmax.data(), e.absmax.size() * 4);
    if (mode == "nf4dq") {
      const Nf4DoubleQuant dq = nf4_double_quantize(e.absmax, 256);
      write(dir + "/dq_codes.bin", dq.codes.data(), dq.codes.size());
      write(dir + "/dq_absmax2.bin", dq.absmax2.data(), dq.absmax2.size() * 4);
      write(dir + "/dq_offset.bin", &dq.offset, 4);
      write(dir + "/dq_table.bin", dq.table.data(), dq.table.size() * 4);
      std::vector<float> decoded(e.absmax.size());
      for (size_t i = 0; i < decoded.size(); ++i) decoded[i] = nf4_dq_absmax(dq, i, 256);
      write(dir + "/dq_absmax.bin", decoded.data(), decoded.size() * 4);
    }
    return 0;
  }
  if (mode == "fp8" && argc == 5) {
    const Fp8Format f = format(argv[2]);
    const std::vector<float> x = read_f32(argv[3]);
    std::vector<uint8_t> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = fp8_encode(x[i], f);
    write(argv[4], out.data(), out.size());
    return 0;
  }
  if (mode == "fp8dec" && argc == 4) {
    const Fp8Format f = format(argv[2]);
    std::vector<float> out(256);
    for (int b = 0; b < 256; ++b) out[b] = fp8_decode(static_cast<uint8_t>(b), f);
    write(argv[3], out.data(), out.size() * 4);
    return 0;
  }
  if (mode == "fp8q" && argc == 8) {
    const Fp8Format f = format(argv[2]);
    const QuantScheme s =
        parse_quant_scheme(std::string(f == Fp8Format::E4M3 ? "fp8_e4m3:" : "fp8_e5m2:") + argv[3]);
    const uint64_t rows = std::stoull(argv[4]);
    const uint64_t cols = std::stoull(argv[5]);
    const std::vector<float> x = read_f32(argv[6]);
    if (x.size() != rows * cols) throw std::runtime_error("size mismatch");
    const Fp8Encoded e = fp8_quantize(x.data(), rows, cols, f,
                                      static_cast<Fp8Granularity>(s.granularity), s.block_rows,
                                      s.block_cols);
    const std::string dir = argv[7];
    write(dir + "/codes.bin", e.codes.data(), e.codes.size());
    write(dir + "/scales.bin", e.scales.data(), e.scales.size() * 4);
    return 0;
  }
  throw std::runtime_error("bad arguments for mode " + mode);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quant_tool: %s\n", e.what());
    return 1;
  }
}
