#version 450
// Activations and unary math over a whole tensor: params [0] kind (UnaryKind), [1] numel;
// fparams lo, hi (clamp), the exponent (pow), the negative slope (leaky_relu) or beta and the
// threshold (softplus).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

// 1 + erf(v) with |error| < 2e-7 relative, after fdlibm's s_erf.c rational approximations
// (in f32): for v < 0 it is erfc(-v), computed directly so the GELU tail does not cancel.
float erfc_abs(float a) {  // erfc(a) for a >= 0.84375
  if (a < 1.25) {
    float s = a - 1.0;
    float P = -2.36211856e-03 + s * (4.14856118e-01 + s * (-3.72207876e-01 + s * (3.18346620e-01 +
              s * (-1.10894694e-01 + s * (3.54783043e-02 + s * (-2.16637559e-03))))));
    float Q = 1.0 + s * (1.06420880e-01 + s * (5.40397917e-01 + s * (7.18286544e-02 +
              s * (1.26171219e-01 + s * (1.36370839e-02 + s * 1.19844998e-02)))));
    return 1.0 - 8.45062911e-01 - P / Q;
  }
  if (a >= 10.0) return 0.0;
  float s = 1.0 / (a * a);
  float R, S;
  if (a < 2.857142857) {
    R = -9.86494403e-03 + s * (-6.93858572e-01 + s * (-1.05586262e+01 + s * (-6.23753324e+01 +
        s * (-1.62396669e+02 + s * (-1.84605092e+02 + s * (-8.12874355e+01 + s * (-9.81432934e+00)))))));
    S = 1.0 + s * (1.96512716e+01 + s * (1.37657754e+02 + s * (4.34565877e+02 + s * (6.45387271e+02 +
        s * (4.29008140e+02 + s * (1.08635005e+02 + s * (6.57024977e+00 + s * (-6.04244152e-02))))))));
  } else {
    R = -9.86494292e-03 + s * (-7.99283237e-01 + s * (-1.77579549e+01 + s * (-1.60636384e+02 +
        s * (-6.37566443e+02 + s * (-1.02509513e+03 + s * (-4.83519191e+02))))));
    S = 1.0 + s * (3.03380607e+01 + s * (3.25792512e+02 + s * (1.53672958e+03 + s * (3.19985821e+03 +
        s * (2.55305040e+03 + s * (4.74528541e+02 + s * (-2.24409524e+01)))))));
  }
  // exp(-a^2) split as exp(-z^2) exp((z - a)(z + a)) with z = a rounded to 12 bits, as fdlibm.
  float z = uintBitsToFloat(floatBitsToUint(a) & 0xFFFFF000u);
  return exp(-z * z - 0.5625) * exp((z - a) * (z + a) + R / S) / a;
}

float one_plus_erf(float v) {
  float a = abs(v);
  if (a < 0.84375) {
    float z = v * v;
    float num = 1.28379167e-01 + z * (-3.25042107e-01 + z * (-2.84817496e-02 +
                z * (-5.77027030e-03 + z * (-2.37630167e-05))));
    float den = 1.0 + z * (3.97917224e-01 + z * (6.50222500e-02 + z * (5.08130628e-03 +
                z * (1.32494738e-04 + z * (-3.96022828e-06)))));
    return 1.0 + (v + v * (num / den));
  }
  float e = erfc_abs(a);
  return v < 0.0 ? e : 2.0 - e;
}

float erf_f(float v) {
  if (abs(v) < 0.84375) {
    float z = v * v;
    float num = 1.28379167e-01 + z * (-3.25042107e-01 + z * (-2.84817496e-02 +
                z * (-5.77027030e-03 + z * (-2.37630167e-05))));
    float den = 1.0 + z * (3.97917224e-01 + z * (6.50222500e-02 + z * (5.08130628e-03 +
                z * (1.32494738e-04 + z * (-3.96022828e-06)))));
    return v + v * (num / den);
  }
  float e = erfc_abs(abs(v));
  return v < 0.0 ? e - 1.0 : 1.0 - e;
}

// x^e for a scalar exponent: std::pow's special cases (negative bases with integral exponents,
// zero, one) where GLSL's pow is undefined; x^2 and x^3 by multiplication, x^0.5 as sqrt.
float pow_scalar(float v, float e) {
  if (e == 2.0) return v * v;
  if (e == 1.0) return v;
  if (e == 0.0) return 1.0;
  if (e == 3.0) return v * v * v;
  if (e == 0.5) return sqrt(v);
  if (isnan(v) || isnan(e)) return v + e;
  if (v == 1.0) return 1.0;
  bool integral = e == floor(e);
  if (v < 0.0 && !integral) return uintBitsToFloat(0x7FC00000u);
  float m = abs(v);
  float r = m == 0.0 ? (e > 0.0 ? 0.0 : uintBitsToFloat(0x7F800000u)) : pow(m, e);
  bool odd = integral && abs(e) < 16777216.0 && (int(mod(abs(e), 2.0)) == 1);
  return (v < 0.0 || (v == 0.0 && floatBitsToUint(v) != 0u)) && odd ? -r : r;
}

float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }

// sin (want_cos false) or cos of v without GLSL's sin / cos, whose precision Vulkan leaves to
// the device (an absolute 2^-11 is allowed, and only on [-pi, pi]; a diffusion model's
// timestep embedding takes sines of arguments up to 1e3 or, scaled by 1000 as AuraFlow's, 1e6).
// v = k pi/2 + r with k = round(v 2/pi) and r = v - k (P1 + P2 + P3 + P4), Cody-Waite style:
// pi/2 split into three parts of at most 8 significant bits and an f32 rest (what remains of
// pi/2 is 5e-17), and k into kh (a multiple of 4096, toward 0) and kl = k - kh, so that every
// product kh Pi, kl Pi (i <= 3) is exact in f32 and every subtraction but the last two exact,
// whether or not the device fuses a multiply-add (lavapipe splits GLSL's fma): r is good to a
// few ulps for |k| < 2^24 (|v| below ~2.6e7). `precise` keeps the compiler from re-associating
// the steps. Then Cephes' minimax polynomials for sin and cos on |r| <= pi/4, picked and
// signed by the quadrant k mod 4.
float sin_cos(float v, bool want_cos) {
  precise float k = roundEven(v * 0.636619772367581343);
  precise float kh = trunc(k * (1.0 / 4096.0)) * 4096.0;  // toward 0: |v - kh P1| <= |v|
  precise float kl = k - kh;
  precise float r = v - kh * 1.5703125;
  r = r - kl * 1.5703125;
  r = r - kh * 4.8255920410156250e-4;
  r = r - kl * 4.8255920410156250e-4;
  r = r - kh * 1.2665987014770507812e-6;
  r = r - kl * 1.2665987014770507812e-6;
  r = r - k * 9.9209362947050294679e-10;
  float z = r * r;
  float s = fma(fma(fma(-1.9515295891e-4, z, 8.3321608736e-3), z, -1.6666654611e-1), z * r, r);
  float c = fma(fma(fma(2.443315711809948e-5, z, -1.388731625493765e-3), z,
                    4.166664568298827e-2), z * z, fma(-0.5, z, 1.0));
  int q = int(mod(k, 4.0)) + (want_cos ? 1 : 0);
  if (isinf(v) || isnan(v)) return uintBitsToFloat(0x7FC00000u);
  if (v == 0.0) return want_cos ? 1.0 : v;  // sin(-0) = -0 (the steps above give +0)
  switch (q & 3) {
    case 0: return s;
    case 1: return c;
    case 2: return -s;
    default: return -c;
  }
}

// log(1 + u) for u >= 0: GLSL's log is bounded only to an absolute 2^-21 near 1, so for u <= 1
// the series 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = u / (2 + u) <= 1/3 (to s^17: the
// rest is below 1e-9 relative); above, log(1 + u) (relative precision there).
float log1p_nonneg(float u) {
  if (u > 1.0) return log(1.0 + u);
  float s = u / (2.0 + u), z = s * s;
  float t = 1.0 / 17.0;
  t = fma(t, z, 1.0 / 15.0);
  t = fma(t, z, 1.0 / 13.0);
  t = fma(t, z, 1.0 / 11.0);
  t = fma(t, z, 1.0 / 9.0);
  t = fma(t, z, 1.0 / 7.0);
  t = fma(t, z, 1.0 / 5.0);
  t = fma(t, z, 1.0 / 3.0);
  return 2.0 * fma(t * z, s, s);
}

void main() {
  uint i = flat_index();
  if (i >= uint(pc.p[1])) return;
  float v = float(x[i]);
  float r;
  switch (pc.p[0]) {
    case 0: r = min(max(v, pc.f[0]), pc.f[1]); if (isnan(v)) r = v; break;
    case 1: r = 0.5 * v * one_plus_erf(v * 0.70710678118654752); break;
    case 2: {
      float u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      r = v * sigmoid(2.0 * u);
      break;
    }
    case 3: r = v * sigmoid(v); break;
    case 4: r = sigmoid(v); break;
    case 5: r = v * min(max(v + 3.0, 0.0), 6.0) / 6.0; break;
    case 6: r = min(max(v + 3.0, 0.0), 6.0) / 6.0; break;
    case 7: r = tanh(v); break;
    case 8: r = -v; break;
    case 9: r = abs(v); break;
    case 10: r = exp(v); break;
    case 11: r = log(v); break;
    case 12: r = sqrt(v); break;
    case 13: r = 1.0 / sqrt(v); break;
    case 14: r = 1.0 / v; break;
    case 15: r = erf_f(v); break;
    case 16: r = pow_scalar(v, pc.f[0]); break;
    case 17: r = v < 0.0 ? v * pc.f[0] : v; break;
    case 18: r = floor(v); break;
    case 19: r = ceil(v); break;
    case 20: r = roundEven(v); break;
    case 21: r = sin_cos(v, false); break;
    case 22: r = sin_cos(v, true); break;
    default: {  // softplus
      float bx = v * pc.f[0];
      r = bx > pc.f[1] ? v : log1p_nonneg(exp(bx)) / pc.f[0];
      break;
    }
  }
  y[i] = STORE_T(r);
}
