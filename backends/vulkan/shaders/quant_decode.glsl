// Decoding one element of a quantized weight (nf4 / fp8) exactly as the portable kernels do
// (runtime/kernels/util/quant_formats.h, QUANT.md): NF4 code[q] * absmax[block] (with double
// quantization absmax = table[dq_code] * absmax2[block / dq_block] + offset, an f32 multiply
// then an f32 add), FP8 decode(byte) * scale, each rounded once in f32 (`precise`: never fused
// into a multiply-add). The weight is one buffer of 32-bit words in QuantLayout order
// (vulkan_blob_format.h); its scheme is in the push constants at 16.. (kQFormat...):
// p[16] format (0 nf4, 1 nf4 double quant, 2 fp8 e4m3, 3 fp8 e5m2), p[17] nf4 block,
// p[18] dq block, p[19] fp8 granularity (0 tensor, 1 channel, 2 tiles), p[20] tile rows,
// p[21] tile cols, p[22] word of absmax / scales / dq codes, p[23] word of absmax2, p[24] word
// of the dq table, p[25] rows, p[26] cols; f[0] the dq offset.
// Before including: the push constants `pc` and #define QW_BINDING (the weight's binding).

layout(std430, binding = QW_BINDING) readonly buffer QuantWeight { uint qw[]; };

// The NF4 codebook (QUANT.md) as f32 bit patterns, index 0..15, high nibble first.
const uint kNf4Bits[16] = uint[16](
    0xBF800000u, 0xBF3239B1u, 0xBF066B30u, 0xBECA32A0u, 0xBE91A24Du, 0xBE3D353Fu, 0xBDBA7871u,
    0x00000000u, 0x3DA2FAFFu, 0x3E24CAE3u, 0x3E7C04DDu, 0x3EAD033Au, 0x3EE1A4B8u, 0x3F1007ABu,
    0x3F3913B3u, 0x3F800000u);

uint q_byte(uint i) { return (qw[i >> 2u] >> ((i & 3u) * 8u)) & 0xFFu; }
float q_float(uint word) { return uintBitsToFloat(qw[word]); }

// FP8 by its bits: e4m3fn S.EEEE.MMM (bias 7, NaN S.1111.111, no infinity), e5m2 S.EEEEE.MM
// (bias 15, S.11111.00 infinity); subnormals man * 2^-9 / 2^-16, exact in f32.
float fp8_decode(uint b, bool e4m3) {
  uint sign = (b & 0x80u) << 24;
  float sub;
  if (e4m3) {
    uint e = (b >> 3) & 0xFu, m = b & 7u;
    if (e == 15u && m == 7u) return uintBitsToFloat(sign | 0x7FC00000u);
    if (e != 0u) return uintBitsToFloat(sign | ((e + 120u) << 23) | (m << 20));
    sub = float(m) * (1.0 / 512.0);
  } else {
    uint e = (b >> 2) & 0x1Fu, m = b & 3u;
    if (e == 31u) return uintBitsToFloat(sign | (m == 0u ? 0x7F800000u : 0x7FC00000u));
    if (e != 0u) return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 21));
    sub = float(m) * (1.0 / 65536.0);
  }
  return sign != 0u ? -sub : sub;
}

float nf4_absmax(uint block) {
  if (pc.p[16] == 1) {
    uint code = q_byte(uint(pc.p[22]) * 4u + block);
    precise float scaled = q_float(uint(pc.p[24]) + code) * q_float(uint(pc.p[23]) + block / uint(pc.p[18]));
    precise float absmax = scaled + pc.f[0];
    return absmax;
  }
  return q_float(uint(pc.p[22]) + block);
}

// Element (r, c) of the [rows, cols] weight (r < rows, c < cols).
float q_weight(uint r, uint c) {
  uint cols = uint(pc.p[26]);
  uint e = r * cols + c;
  if (pc.p[16] <= 1) {
    uint byte = q_byte(e >> 1);
    uint code = (e & 1u) != 0u ? (byte & 15u) : (byte >> 4);
    precise float v = uintBitsToFloat(kNf4Bits[code]) * nf4_absmax(e / uint(pc.p[17]));
    return v;
  }
  float d = fp8_decode(q_byte(e), pc.p[16] == 2);
  uint s = 0u;
  if (pc.p[19] == 1) {
    s = r;
  } else if (pc.p[19] == 2) {
    uint tc = uint(pc.p[21]);
    s = (r / uint(pc.p[20])) * ((cols + tc - 1u) / tc) + c / tc;
  }
  precise float v = d * q_float(uint(pc.p[22]) + s);
  return v;
}
