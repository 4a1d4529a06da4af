"""Branch-free float32/float64 transcendental functions for the generated C.

The C text ``SOURCE`` (part of every translation unit's prelude, ``lower_c.prelude``)
defines ``pj_expf``, ``pj_exp2f``, ``pj_expm1f``, ``pj_tanhf``, ``pj_logisticf``,
``pj_logf``, ``pj_log1pf`` and their float64 twins (no suffix).  Each is straight-line
code (selects instead of branches, bit manipulation through ``memcpy``, explicit fused
multiply-adds where the target has them), always inlined, so a ``#pragma omp simd`` loop
vectorizes it with no function call, on AVX2 as on AVX-512.

* ``exp``: x = k ln2 + r (Cody-Waite, ln2 in two parts, k from the round-to-integer
  shifter 1.5 * 2^23 / 2^52), expm1(r) = r + r^2 q(r) (float32: a degree-4 minimax q
  weighted for expm1's relative error; float64: Taylor to r^13), the scale 2^k applied as
  two steps so subnormal results are rounded once (float32: an exponent-field add, then a
  multiply); overflow / underflow thresholds by selects, one per statement (GCC turns a
  nested select into twice the compares and blends).
* ``exp2``: the same with k = round(x), r = (x - k) ln2.
* ``expm1``: 2^k (1 + p) - 1 as ``fma(2^k, p, 2^k - 1)``; x = ±0 returns x.
* ``tanh``: -e / (e + 2) with e = expm1(-2|x|) (float32: ln2 in one part, enough here),
  sign restored with ``copysign``.
* ``logistic``: 1 / (1 + exp(-x)) (no cancellation: within 2 ulp); 0 where exp(-x)
  overflows, as JAX and NumPy's ``expit`` give.
* ``log``: x = 2^e m, m in [sqrt(1/2), sqrt(2)) (subnormals prescaled), log m =
  f - f^2/2 + s (f^2/2 + R(s^2)) with f = m - 1, s = f / (2 + f) (Taylor atanh series).
* ``log1p``: log(u) + ((1 + x) - u) / u with u = 1 + x rounded, the rounding error
  recovered exactly.
* ``erf`` (float32): a + a P(a^2) below |x| = 0.875 (degree-6 P), above it
  1 - exp(-a^2) R(2 / (2 + a)) with R a degree-7 fit of erfcx and a^2 split exactly by an
  fma; both computed, one selected.
* ``sin``, ``cos``, ``tan`` (float32): exact reduction modulo pi/2 over the whole float
  range (Payne-Hanek in double, branch-free: the four 24-bit chunks of 2/pi that matter for
  x's exponent read from an 8-entry table, the leading products reduced mod 4 exactly),
  then Taylor polynomials of r in [-pi/4, pi/4] in double, rounded once to float.
* ``pow`` (float32): exp(y log|x|) with the float64 ``log`` and ``exp`` below (one rounding
  to float), C99's special cases (x = 1 or y = 0 give 1, |x| = 1 with y = +-inf gives 1,
  odd integer y keeps x's sign, negative x with a non-integer y is NaN) by selects on bit
  tests.
* ``erfc`` (float32): 1 - erf(x) below |x| = 0.45; above, exp(-a^2) R(2 / (2 + a)) in
  double (R a degree-10 fit of erfcx on [0.45, 10.1]), 2 minus that for negative x.
* ``sinh``, ``cosh``, ``atanh`` (float32): through the float64 ``expm1``, ``exp`` and
  ``log1p`` below, rounded once.
  float64 ``sin``/``cos``/``tan``/``erf``/``erfc``/``pow``/``sinh``/``cosh``/``atanh`` stay
  glibc's scalar functions.

Measured errors against correctly rounded references (float32: every bit pattern against
float64 libm; float64: about a million random bit patterns and ranges against long
double): exp, exp2, log, log1p, erf, erfc, sin, cos, tan, pow, sinh, cosh, atanh <= 1 ulp; expm1, tanh, logistic <= 2 ulp;
special values
(±0, ±inf, NaN, overflow/underflow thresholds, subnormal inputs and outputs) exact.

``prelude_defines(mvec)`` picks, per function, this code or glibc's libmvec (whichever
is faster on x86-64 with libmvec: libmvec's float32 ``logf`` and float64 ``exp``,
``exp2``, ``expm1``, ``log``, ``log1p``, float32 ``sin``, ``cos``, ``tan``, ``erf``, ``pow`` are
(``erfc``, ``sinh``, ``cosh``, ``atanh`` switch with them);
libmvec has no vector float32 ``expm1f``,
``exp2f``, ``log1pf``).  Without libmvec every function here is used.
"""
from __future__ import annotations

# (primitive, float32?) -> C function; the PJ_* macros name libmvec's function or ours
# (prelude_defines)
_NAMES = {
    ("exp", True): "pj_expf", ("exp2", True): "pj_exp2f", ("expm1", True): "pj_expm1f",
    ("tanh", True): "pj_tanhf", ("logistic", True): "pj_logisticf",
    ("log1p", True): "pj_log1pf", ("log", True): "PJ_F_LOG",
    ("erf", True): "PJ_F_ERF", ("sin", True): "PJ_F_SIN", ("cos", True): "PJ_F_COS",
    ("tan", True): "PJ_F_TAN", ("pow", True): "PJ_F_POW", ("erfc", True): "PJ_F_ERFC",
    ("sinh", True): "PJ_F_SINH", ("cosh", True): "PJ_F_COSH", ("atanh", True): "PJ_F_ATANH",
    ("tanh", False): "pj_tanh", ("logistic", False): "pj_logistic",
    ("exp", False): "PJ_D_EXP", ("exp2", False): "PJ_D_EXP2", ("expm1", False): "PJ_D_EXPM1",
    ("log", False): "PJ_D_LOG", ("log1p", False): "PJ_D_LOG1P",
}

# macro -> (libmvec function, inline function)
_SWITCHED = {"PJ_F_LOG": ("logf", "pj_logf"), "PJ_D_EXP": ("exp", "pj_exp"),
             "PJ_D_EXP2": ("exp2", "pj_exp2"), "PJ_D_EXPM1": ("expm1", "pj_expm1"),
             "PJ_D_LOG": ("log", "pj_log"), "PJ_D_LOG1P": ("log1p", "pj_log1p"),
             "PJ_F_ERF": ("erff", "pj_erff"), "PJ_F_SIN": ("sinf", "pj_sinf"),
             "PJ_F_COS": ("cosf", "pj_cosf"), "PJ_F_TAN": ("tanf", "pj_tanf"),
             "PJ_F_POW": ("powf", "pj_powf"), "PJ_F_ERFC": ("erfcf", "pj_erfcf"),
             "PJ_F_SINH": ("sinhf", "pj_sinhf"), "PJ_F_COSH": ("coshf", "pj_coshf"),
             "PJ_F_ATANH": ("atanhf", "pj_atanhf"),
             "PJ_F_SIN_S": ("sinf", "pj_sinf_s"), "PJ_F_COS_S": ("cosf", "pj_cosf_s"),
             "PJ_F_TAN_S": ("tanf", "pj_tanf_s"),
             "PJ_F_SIN_P": ("sinf", "pj_sinf_pf"), "PJ_F_COS_P": ("cosf", "pj_cosf_pf"),
             "PJ_F_TAN_P": ("tanf", "pj_tanf_pf")}

# kernels of at most this many elements call the scalar variants (``scalar_calls``)
SCALAR_MAX = 32
_SCALAR = {"PJ_F_SIN(": "PJ_F_SIN_S(", "PJ_F_COS(": "PJ_F_COS_S(", "PJ_F_TAN(": "PJ_F_TAN_S("}


def function(prim, is_f32):
  """The C function computing ``prim`` in float (``is_f32``) or double, or None."""
  return _NAMES.get((prim, bool(is_f32)))


def scalar_calls(src):
  """A small kernel's C with float32 sin/cos/tan calling their scalar variants: a loop too
  short for the vector body runs the reduction-free branch for |x| < pi/4 (about 3x
  faster than the branch-free code), the same bits (checked for every float32 there)."""
  for a, b in _SCALAR.items():
    src = src.replace(a, b)
  return src


_FLAGGED = {"PJ_F_SIN(": "PJ_F_SIN_P(", "PJ_F_COS(": "PJ_F_COS_P(", "PJ_F_TAN(": "PJ_F_TAN_P("}
# calls a kernel runs its scalar form directly after a call whose fast form missed
SMALL_TRIG_SKIP = 64


def small_trig(src, name, fast_form):
  """The C of a kernel of at most SCALAR_MAX elements (``name``: its range function
  ``<name>_range``) whose float32 sin/cos/tan are fast for small arguments.

  With ``fast_form`` (the caller's promise that the kernel may run twice -- no output
  shares memory with an input -- and that it has at least 8 elements: with fewer, the
  scalar code is as fast, a 10k-step loop of ``cos`` on 4 floats ran 127 -> 144 us
  vectorized) the range function becomes three: ``<name>_fast``, the kernel on the
  reduction-free polynomials (``pj_*f_p``: straight-line, so the loop vectorizes; they set
  ``pj_big`` when an argument has |x| >= 0.785398 or is NaN), ``<name>_full``, the kernel
  on the scalar variants (``scalar_calls``), and ``<name>_range``, which runs the fast form
  and, when it missed, the full one over the same range (every output written again).
  Both forms give the reducing functions' bits, so the result does not depend on which
  ran.  After a miss the next SMALL_TRIG_SKIP calls run the full form directly (a loop
  whose arguments stay large pays the fast form once per 65 calls).  A 10k-step scan whose
  step is ``c * 0.99 + sin(c) * 0.01`` on 8 / 12 / 16 / 32 floats: 167 / 233 / 310 / 613
  -> 138 / 146 / 164 / 429 us (one thread, loaded machine).  Otherwise, or when the range
  function is not found or has no loop to vectorize: ``scalar_calls(src)``."""
  if not any(a in src for a in _SCALAR):
    return src
  head = f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{\n"
  i = src.find(head)
  if not fast_form or i < 0:
    return scalar_calls(src)
  j = src.index("\n}\n", i) + 3
  rng = src[i:j]
  full = scalar_calls(rng).replace(f"{name}_range(", f"{name}_full(", 1)
  fast = rng.replace(head, f"static uint32_t {name}_fast(void *ctx, int64_t lo, int64_t hi) {{\n"
                     "  uint32_t pj_big = 0;\n", 1)
  for a, b in _FLAGGED.items():
    fast = fast.replace(a, b)
  # four lanes: float32 in 128 bits, the polynomials' float64 in 256 (with 16 lanes, AVX-512
  # on this AMD EPYC, the 16-wide sin carry ran 259 us per 10k steps instead of 164)
  pragma = "#pragma omp simd reduction(|:pj_big) simdlen(4)"
  if "#pragma omp simd" in fast:
    fast = fast.replace("#pragma omp simd", pragma)
  elif fast.count("for (") == 1:
    k = fast.index("for (")
    indent = fast[fast.rindex("\n", 0, k) + 1:k]
    fast = fast[:k] + pragma + "\n" + indent + fast[k:]
  else:   # nothing to vectorize
    return scalar_calls(src)
  fast = fast[:-2] + "  return pj_big;\n}\n"
  dispatch = (
      f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{\n"
      "  static unsigned pj_skip;   /* a hint: relaxed atomics, any value is correct */\n"
      "  const unsigned s = __atomic_load_n(&pj_skip, __ATOMIC_RELAXED);\n"
      f"  if (s) {{ __atomic_store_n(&pj_skip, s - 1, __ATOMIC_RELAXED); {name}_full(ctx, lo, hi); return; }}\n"
      f"  if ({name}_fast(ctx, lo, hi)) {{\n"
      f"    __atomic_store_n(&pj_skip, {SMALL_TRIG_SKIP}u, __ATOMIC_RELAXED);\n"
      f"    {name}_full(ctx, lo, hi);\n"
      "  }\n}\n")
  return src[:i] + full + fast + dispatch + src[j:]


def prelude_defines(mvec):
  """``#define`` lines choosing libmvec or the inline code for the switched functions."""
  return "\n".join(f"#define {m} {lib if mvec else own}"
                   for m, (lib, own) in _SWITCHED.items()) + "\n"


SOURCE = r"""/* --- pyjax vector math (kernels/vmath.py): branch-free exp, exp2, expm1, log, log1p, tanh and
   logistic that GCC/Clang vectorize inline in `omp simd` loops (selects, no branches,
   IEEE NaN/inf/signed zeros kept) --- */
#define PJ_VM static inline __attribute__((always_inline))
#ifdef __FP_FAST_FMAF
#define PJ_FMAF(a, b, c) fmaf(a, b, c)
#else
#define PJ_FMAF(a, b, c) ((a) * (b) + (c))
#endif
#ifdef __FP_FAST_FMA
#define PJ_FMA(a, b, c) fma(a, b, c)
#else
#define PJ_FMA(a, b, c) ((a) * (b) + (c))
#endif
PJ_VM uint32_t pj_fbits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
PJ_VM float pj_bitsf(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
PJ_VM uint64_t pj_dbits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
PJ_VM double pj_bitsd(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* expm1(r) for |r| <= 0.35: r + r^2 q(r), q a degree-4 minimax fit of (expm1(r) - r) / r^2
   weighted for the relative error of expm1 (1.8e-8 at most, 0.3 ulp) */
PJ_VM float pj_em1_core_f(float r) {   /* Estrin's scheme: a short dependency chain */
  const float r2 = r * r;
  const float a = PJ_FMAF(r, 0x1.5554aap-3f, 0x1.fffffep-2f);
  const float b = PJ_FMAF(r2, 0x1.6beb3p-10f, PJ_FMAF(r, 0x1.122cf0p-7f, 0x1.55567ep-5f));
  return PJ_FMAF(r2, PJ_FMAF(r2, b, a), r);
}
/* x = k ln2 + r (Cody-Waite, ln2 in two parts); z_ = 1.5 * 2^23 + k (bits 0x4B400000 + k) */
#define PJ_REDUCE_F(xc, z_, r_) \
  const float z_ = PJ_FMAF(xc, 1.44269504f, 12582912.0f); \
  const float r_ = PJ_FMAF(z_ - 12582912.0f, -1.42860677e-6f, \
                           PJ_FMAF(z_ - 12582912.0f, -0.693145751953125f, xc));
/* p * 2^k for k in [-152, 129], p in [0.7, 1.5], from z = 1.5 * 2^23 + k (the reduction's
   shifter sum; its bits are 0x4B400000 + k), in two steps so a subnormal result is rounded
   once: p 2^(k >> 1) is normal, so it is an integer add to p's exponent field; then a
   multiply by the normal 2^(k - (k >> 1)).  Both exponents come from z's bits with shifts
   (0x4B400000 is even, so bits >> 1 is 0x25A00000 + (k >> 1)).  A NaN p does not stay NaN:
   callers patch NaN inputs. */
PJ_VM float pj_scalef(float p, float z) {
  const uint32_t u = pj_fbits(z), h = u >> 1;
  const float ps1 = pj_bitsf(pj_fbits(p) + (h << 23) - (0x25A00000u << 23));
  const float s2 = pj_bitsf((u << 23) - (h << 23) + ((127u - 0x4B400000u + 0x25A00000u) << 23));
  return ps1 * s2;
}
/* 2^k for k in [-126, 127] from z = 1.5 * 2^23 + k */
PJ_VM float pj_pow2f(float z) {
  return pj_bitsf((pj_fbits(z) << 23) + ((127u - 0x4B400000u) << 23));
}
/* Out-of-range and special inputs are patched by one select per statement, each with a
   constant (or x) arm: GCC if-converts a nested `a ? c1 : (b ? c2 : res)` into four
   compares and three blends (NaN-correct negations), a chain of single selects into one
   compare and one blend each -- about 15% of exp's time. */
PJ_VM float pj_expf(float x) {
  PJ_REDUCE_F(x, z, r)
  const float res = pj_scalef(1.0f + pj_em1_core_f(r), z);
  const float lo = x < -104.0f ? 0.0f : res;
  return x <= 89.0f ? lo : x + INFINITY;          /* inf above 89, NaN for NaN */
}
PJ_VM float pj_exp2f(float x) {
  const float z = x + 12582912.0f;
  const float f = x - (z - 12582912.0f);        /* exact, |f| <= 1/2 */
  const float r = PJ_FMAF(f, 0.693147182f, f * -1.90465421e-9f);
  const float res = pj_scalef(1.0f + pj_em1_core_f(r), z);
  const float lo = x < -151.0f ? 0.0f : res;
  return x <= 129.0f ? lo : x + INFINITY;
}
/* pj_em1_core_f(2 h) with the powers of two folded into the coefficients (bit for bit the
   same; the caller saves the multiply by 2) */
PJ_VM float pj_em1_core_half_f(float h) {
  const float h2 = h * h;
  const float a = PJ_FMAF(h, 8.0f * 0x1.5554aap-3f, 4.0f * 0x1.fffffep-2f);
  const float b = PJ_FMAF(h2, 64.0f * 0x1.6beb3p-10f,
                          PJ_FMAF(h, 32.0f * 0x1.122cf0p-7f, 16.0f * 0x1.55567ep-5f));
  return PJ_FMAF(h2, PJ_FMAF(h2, b, a), h + h);
}
/* expm1(-2 a) for a = |x| >= 0 (a NaN stays NaN); -1 in float for a > 15.  ln2 in one part
   (k <= 0): k ln2 is off by |k| 1.9e-9, so 2^k (1 + p) - 1 is off by at most |k| 2^k 1.9e-9
   <= 1e-9 absolute, a few hundredths of an ulp of the result. */
PJ_VM float pj_expm1_neg2_f(float a0) {
  const float na = -(a0 > 15.0f ? 15.0f : a0);
  const float z = PJ_FMAF(na, 2.0f * 1.44269504f, 12582912.0f);
  const float h = PJ_FMAF(z - 12582912.0f, -0.5f * 0.693147182f, na);   /* r / 2 */
  const float t = pj_pow2f(z);
  return PJ_FMAF(t, pj_em1_core_half_f(h), t - 1.0f);    /* 2^k (1 + p) - 1 */
}
PJ_VM float pj_expm1f(float x) {
  PJ_REDUCE_F(x, z, r)
  const int32_t k = (int32_t)(pj_fbits(z) - 0x4B400000u);
  const float p = pj_em1_core_f(r);
  const int32_t kk = k > 127 ? 127 : k;           /* 2^128 is not a float */
  const float t = pj_bitsf((uint32_t)(kk + 127) << 23);
  const float res = PJ_FMAF(t, p, t - 1.0f);      /* 2^k (1 + p) - 1 */
  const float r1 = k > 127 ? res * 2.0f : res;
  const float r2 = x < -30.0f ? -1.0f : r1;
  const float r3 = x > 89.0f ? INFINITY : r2;
  return x == 0.0f ? x : r3;
}
PJ_VM float pj_tanhf(float x) {
  const float em = pj_expm1_neg2_f(fabsf(x));   /* expm1(-2|x|), in [-1, 0] */
  return copysignf(-em / (em + 2.0f), x);
}
PJ_VM float pj_logisticf(float x) {
  /* exp(-x) overflows to inf below -88.72..., giving 0 there as JAX and NumPy's expit do */
  return 1.0f / (1.0f + pj_expf(-x));
}
/* log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = f / (2 + f) */
PJ_VM float pj_logf(float x) {
  const int sub = x < 0x1p-126f;
  const float xs = sub ? x * 8388608.0f : x;
  const uint32_t u = pj_fbits(xs);
  const int32_t e = (int32_t)(u - 0x3F3504F3u) >> 23;
  const float m = pj_bitsf(u - ((uint32_t)e << 23));
  const float f = m - 1.0f;
  const float s = f / (2.0f + f), s2 = s * s;
  float q = PJ_FMAF(s2, 0.222222222f, 0.285714286f);
  q = PJ_FMAF(q, s2, 0.4f);
  q = PJ_FMAF(q, s2, 0.666666667f);
  const float hf = 0.5f * f * f;
  const float lm = f - (hf - s * (hf + s2 * q));  /* log(m) = f - f^2/2 + s (f^2/2 + R) */
  /* (float)e through the shifter 1.5 * 2^23 (an int -> float conversion has no masked form:
     GCC would leave the loop scalar once it sinks it under the selects below) */
  const float ef = pj_bitsf(0x4B400000u + (uint32_t)(sub ? e - 23 : e)) - 12582912.0f;
  const float res = PJ_FMAF(ef, 0.693145751953125f, PJ_FMAF(ef, 1.42860677e-6f, lm));
  const float r1 = x < 0.0f ? NAN : res;
  const float r2 = x == 0.0f ? -INFINITY : r1;
  return x < INFINITY ? r2 : x + x;              /* +inf, NaN */
}
PJ_VM float pj_log1pf(float x) {
  const float u = 1.0f + x;
  const float d = x > 1.0f ? (x - u) + 1.0f : (1.0f - u) + x;   /* (1 + x) - u, exact */
  const float res = pj_logf(u) + d / u;
  const float r1 = x == -1.0f ? -INFINITY : res;
  return ((x == 0.0f) | (x == INFINITY)) ? x : r1;   /* |: no branch to thread */
}
/* float64: expm1(r) for |r| <= ln2/2 + a little, Taylor to r^13 (error < 2^-56 relative) */
PJ_VM double pj_em1_core_d(double r) {
  double q = PJ_FMA(r, 1.0 / 87178291200.0, 1.0 / 6227020800.0);
  q = PJ_FMA(q, r, 1.0 / 479001600.0);
  q = PJ_FMA(q, r, 1.0 / 39916800.0);
  q = PJ_FMA(q, r, 1.0 / 3628800.0);
  q = PJ_FMA(q, r, 1.0 / 362880.0);
  q = PJ_FMA(q, r, 1.0 / 40320.0);
  q = PJ_FMA(q, r, 1.0 / 5040.0);
  q = PJ_FMA(q, r, 1.0 / 720.0);
  q = PJ_FMA(q, r, 1.0 / 120.0);
  q = PJ_FMA(q, r, 1.0 / 24.0);
  q = PJ_FMA(q, r, 1.0 / 6.0);
  q = PJ_FMA(q, r, 0.5);
  return PJ_FMA(r * r, q, r);
}
#define PJ_REDUCE_D(xc, k_, r_) \
  const double pj_z_ = PJ_FMA(xc, 1.4426950408889634, 6755399441055744.0); \
  const double pj_kf_ = pj_z_ - 6755399441055744.0; \
  const int64_t k_ = (int64_t)(pj_dbits(pj_z_) - 0x4338000000000000ull); \
  const double r_ = PJ_FMA(pj_kf_, -1.9082149292705877e-10, \
                           PJ_FMA(pj_kf_, -6.93147180369123816490e-01, xc));
PJ_VM double pj_ldexp2(double p, int64_t k) {
  const int64_t k1 = k >> 1, k2 = k - k1;
  return p * pj_bitsd((uint64_t)(k1 + 1023) << 52) * pj_bitsd((uint64_t)(k2 + 1023) << 52);
}
PJ_VM double pj_exp(double x) {
  const double x1 = x > 710.0 ? 710.0 : x;
  const double xc = x1 < -746.0 ? -746.0 : x1;
  PJ_REDUCE_D(xc, k, r)
  return pj_ldexp2(1.0 + pj_em1_core_d(r), k);
}
PJ_VM double pj_exp2(double x) {
  const double x1 = x > 1025.0 ? 1025.0 : x;
  const double xc = x1 < -1076.0 ? -1076.0 : x1;
  const double z = xc + 6755399441055744.0;
  const int64_t k = (int64_t)(pj_dbits(z) - 0x4338000000000000ull);
  const double f = xc - (z - 6755399441055744.0);
  const double r = PJ_FMA(f, 6.93147180559945286227e-01, f * 2.319046813846299558e-17);
  return pj_ldexp2(1.0 + pj_em1_core_d(r), k);
}
PJ_VM double pj_expm1(double x) {
  const double x1 = x > 710.0 ? 710.0 : x;
  const double xc = x1 < -40.0 ? -40.0 : x1;
  PJ_REDUCE_D(xc, k, r)
  const double p = pj_em1_core_d(r);
  const int64_t kk = k > 1023 ? 1023 : k;
  const double t = pj_bitsd((uint64_t)(kk + 1023) << 52);
  const double res = PJ_FMA(t, p, t - 1.0);
  const double r1 = k > 1023 ? res * 2.0 : res;
  return x == 0.0 ? x : r1;
}
/* expm1 for x <= 0 (no overflow handling) */
PJ_VM double pj_expm1_neg(double x) {
  PJ_REDUCE_D(x, k, r)
  const double t = pj_bitsd((uint64_t)(k + 1023) << 52);
  const double res = PJ_FMA(t, pj_em1_core_d(r), t - 1.0);
  return x < -40.0 ? -1.0 : res;
}
PJ_VM double pj_tanh(double x) {
  const double em = pj_expm1_neg(-2.0 * fabs(x));
  return copysign(-em / (em + 2.0), x);
}
PJ_VM double pj_logistic(double x) {
  return 1.0 / (1.0 + PJ_D_EXP(-x));
}
PJ_VM double pj_log(double x) {
  const int sub = x < 0x1p-1022;
  const double xs = sub ? x * 18014398509481984.0 : x;
  const uint64_t u = pj_dbits(xs);
  const int64_t e = (int64_t)(u - 0x3FE6A09E667F3BCDull) >> 52;
  const double m = pj_bitsd(u - ((uint64_t)e << 52));
  const double f = m - 1.0;
  const double s = f / (2.0 + f), s2 = s * s;
  double q = PJ_FMA(s2, 2.0 / 23, 2.0 / 21);
  q = PJ_FMA(q, s2, 2.0 / 19);
  q = PJ_FMA(q, s2, 2.0 / 17);
  q = PJ_FMA(q, s2, 2.0 / 15);
  q = PJ_FMA(q, s2, 2.0 / 13);
  q = PJ_FMA(q, s2, 2.0 / 11);
  q = PJ_FMA(q, s2, 2.0 / 9);
  q = PJ_FMA(q, s2, 2.0 / 7);
  q = PJ_FMA(q, s2, 2.0 / 5);
  q = PJ_FMA(q, s2, 2.0 / 3);
  const double hf = 0.5 * f * f;
  const double lm = f - (hf - s * (hf + s2 * q));
  const double ef = pj_bitsd(0x4338000000000000ull + (uint64_t)(sub ? e - 54 : e))
                   - 6755399441055744.0;   /* (double)e, as in pj_logf */
  const double res = PJ_FMA(ef, 6.93147180369123816490e-01, PJ_FMA(ef, 1.9082149292705877e-10, lm));
  const double r1 = x < 0.0 ? NAN : res;
  const double r2 = x == 0.0 ? -INFINITY : r1;
  return x < INFINITY ? r2 : x + x;
}
PJ_VM double pj_log1p(double x) {
  const double u = 1.0 + x;
  const double d = x > 1.0 ? (x - u) + 1.0 : (1.0 - u) + x;
  const double res = pj_log(u) + d / u;
  /* the patches as bit masks, not selects: with selects GCC moves a caller's conversion of
     the result into each arm (folding it for the constant one), and a conversion in an arm
     leaves the loop scalar (float32 atanh) */
  const uint64_t m1 = -(uint64_t)(x == -1.0), m0 = -(uint64_t)((x == 0.0) | (x == INFINITY));
  const uint64_t r1 = (pj_dbits(res) & ~m1) | (m1 & 0xFFF0000000000000ull);   /* -inf */
  return pj_bitsd((r1 & ~m0) | (pj_dbits(x) & m0));
}
/* erf: |x| < 0.875: a + a P(a^2); above: 1 - exp(-a^2) R(2 / (2 + a)), R ~ erfcx (a clamped to 4,
   where erf is 1 in float) with a^2 = h + l exactly (fma), exp(-a^2) = exp(-h) (1 - l) */
PJ_VM float pj_erff(float x) {
  const float a = fabsf(x);
  const float a2 = a * a;
  const float small = PJ_FMAF(a, PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(0x1.6c0eccp-14f, a2, -0x1.ae8e3cp-11f), a2, 0x1.553c76p-8f), a2, -0x1.b819dap-6f), a2, 0x1.ce2e86p-4f), a2, -0x1.812744p-2f), a2, 0x1.06eba8p-3f), a);
  const float ac = a > 4.0f ? 4.0f : a;
  const float h = ac * ac, l = PJ_FMAF(ac, ac, -h);
  const float t = 2.0f / (2.0f + ac);
  const float big = 1.0f - pj_expf(-h) * (1.0f - l) * PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(0x1.e9b7bep-4f, t, -0x1.e34d2ap-2f), t, 0x1.210196p-1f), t, -0x1.ac87d2p-4f), t, 0x1.64aa1ep-2f), t, 0x1.09c4fep-2f), t, 0x1.23c644p-2f), t, -0x1.46a61ep-13f);
  return copysignf(a < 0.875f ? small : big, x);
}
/* float32 sin/cos/tan: |x| = M 2^E reduced modulo pi/2 exactly (Payne-Hanek in double, no
   branch): x 2/pi mod 4 = sum_i M C_{j0+i} 2^(E - 24 (j0 + 1 + i)), C_j the 24-bit chunks of
   2/pi, the chunks whose terms are multiples of 4 skipped (j0 from E), the two leading
   terms reduced mod 4 exactly; then k = round(y), r = (y - k) pi/2 in [-pi/4, pi/4] and
   Taylor polynomials in double (the result rounded once to float). */
static const double pj_2opi_c[8] = {0xa2f983p0, 0x6e4e44p0, 0x1529fcp0, 0x2757d1p0, 0xf534ddp0,
                                    0xc0db62p0, 0x95993cp0, 0x439041p0};
#define PJ_TRIG_REDUCE_F(x, r_, q_) \
  const uint32_t pj_u_ = pj_fbits(x) & 0x7FFFFFFFu; \
  const uint32_t pj_be_ = pj_u_ >> 23; \
  const uint32_t pj_nz_ = (uint32_t)(pj_be_ != 0); \
  const int32_t pj_e_ = (int32_t)(pj_be_ | (pj_nz_ ^ 1u)) - 150; \
  const double pj_m_ = pj_bitsd(0x4330000000000000ull | (pj_u_ & 0x7FFFFFu) | (pj_nz_ << 23)) \
                       - 4503599627370496.0; \
  const int32_t pj_v_ = pj_e_ - 2 > 0 ? pj_e_ - 2 : 0; \
  const int32_t pj_j_ = (pj_v_ * 2731) >> 16; \
  const int32_t pj_s_ = pj_e_ - 24 * (pj_j_ + 1); \
  const double pj_sc_ = pj_bitsd((uint64_t)(int64_t)(pj_s_ + 1023) << 52); \
  const double pj_t0_ = pj_m_ * pj_2opi_c[pj_j_] * pj_sc_; \
  const double pj_t1_ = pj_m_ * pj_2opi_c[pj_j_ + 1] * (pj_sc_ * 0x1p-24); \
  const double pj_t2_ = pj_m_ * pj_2opi_c[pj_j_ + 2] * (pj_sc_ * 0x1p-48); \
  const double pj_t3_ = pj_m_ * pj_2opi_c[pj_j_ + 3] * (pj_sc_ * 0x1p-72); \
  /* t - 4 round(t / 4), exact (round by the shifter 1.5 * 2^52: no vector floor without
     -fno-trapping-math) */ \
  const double pj_z_ = (pj_t0_ - 4.0 * ((pj_t0_ * 0.25 + 6755399441055744.0) - 6755399441055744.0)) \
                     + (pj_t1_ - 4.0 * ((pj_t1_ * 0.25 + 6755399441055744.0) - 6755399441055744.0)); \
  const double pj_kf_ = (pj_z_ + pj_t2_ + 6755399441055744.0) - 6755399441055744.0; \
  const double r_ = (((pj_z_ - pj_kf_) + pj_t2_) + pj_t3_) * 1.5707963267948966; \
  const uint32_t q_ = (uint32_t)pj_dbits(pj_kf_ + 6755399441055744.0);
PJ_VM double pj_sin_poly_d(double r) {   /* |r| <= pi/4: error < 2^-33 relative */
  const double r2 = r * r;
  double p = PJ_FMA(r2, 1.0 / 362880.0, -1.0 / 5040.0);
  p = PJ_FMA(p, r2, 1.0 / 120.0);
  p = PJ_FMA(p, r2, -1.0 / 6.0);
  return PJ_FMA(r * r2, p, r);
}
PJ_VM double pj_cos_poly_d(double r) {
  const double r2 = r * r;
  double p = PJ_FMA(r2, -1.0 / 3628800.0, 1.0 / 40320.0);
  p = PJ_FMA(p, r2, -1.0 / 720.0);
  p = PJ_FMA(p, r2, 1.0 / 24.0);
  p = PJ_FMA(p, r2, -0.5);
  return PJ_FMA(r2, p, 1.0);
}
PJ_VM float pj_sinf(float x) {
  PJ_TRIG_REDUCE_F(x, r, q)
  const double s = pj_sin_poly_d(r), c = pj_cos_poly_d(r);
  const float v = (float)((q & 1u) ? c : s);   /* converted before the selects: a conversion
                                                  GCC sinks into a select's arm stops it */
  const float res = (q & 2u) ? -v : v;
  /* sin(-x) = -sin(x), by x's sign bit (keeps -0) */
  const float sg = pj_bitsf(pj_fbits(res) ^ (pj_fbits(x) & 0x80000000u));
  /* NaN for +-inf and NaN by arithmetic, not a select: GCC would sink the conversion
     above into the select's arm and leave the loop scalar */
  return sg * (1.0f + (x - x));
}
PJ_VM float pj_cosf(float x) {
  PJ_TRIG_REDUCE_F(x, r, q)
  const double s = pj_sin_poly_d(r), c = pj_cos_poly_d(r);
  const float v = (float)((q & 1u) ? s : c);
  const float res = ((q + 1u) & 2u) ? -v : v;
  return res * (1.0f + (x - x));
}
PJ_VM float pj_tanf(float x) {
  PJ_TRIG_REDUCE_F(x, r, q)
  const double s = pj_sin_poly_d(r), c = pj_cos_poly_d(r);
  const double n = (q & 1u) ? -c : s, d = (q & 1u) ? s : c;
  const float res = (float)(n / d);
  const float sg = pj_bitsf(pj_fbits(res) ^ (pj_fbits(x) & 0x80000000u));
  return sg * (1.0f + (x - x));
}
/* float32 sin/cos/tan of |x| < 0.785398 (bits below 0x3F490FD8): there the reduction gives
   k = 0, and the polynomials on x itself give the same float as the reducing functions --
   checked for every float32 of that range, both signs.  Kernels of at most 32 elements
   (vmath.small_trig) use them in two ways: the _s forms branch per element (GCC keeps the
   branch: ~3x faster than the reducing code in scalar code; they never vectorize); the
   _p forms are straight-line (they vectorize) and set the enclosing function's pj_big
   when an argument is outside the range, NaN included (the kernel then runs again on the
   _s forms) */
#define PJ_TRIG_SMALL(x) ((pj_fbits(x) & 0x7FFFFFFFu) < 0x3F490FD8u)
/* on x itself, not on |x|: every operation of the polynomials (+, *, fma, /, conversions)
   commutes exactly with negation in round-to-nearest, sin's and tan's polynomials are odd
   and cos's even -- except at -0, where sin's polynomial gives +0: x's sign bit is or'ed
   in (every other result already has it).  The fabs leaves a loop's critical path
   (a 16-wide sin carry: 271 -> 255 us per 10k steps) */
PJ_VM float pj_sinf_p(float x) {
  return pj_bitsf(pj_fbits((float)pj_sin_poly_d((double)x)) | (pj_fbits(x) & 0x80000000u));
}
PJ_VM float pj_cosf_p(float x) { return (float)pj_cos_poly_d((double)x); }
PJ_VM float pj_tanf_p(float x) {
  const double a = (double)x;
  return pj_bitsf(pj_fbits((float)(pj_sin_poly_d(a) / pj_cos_poly_d(a)))
                  | (pj_fbits(x) & 0x80000000u));
}
/* (the ordered float compare may trap, so GCC keeps it a branch: an integer compare of the
   bits would be if-converted, both arms computed) */
PJ_VM float pj_sinf_s(float x) { return fabsf(x) < 0.785398f ? pj_sinf_p(x) : pj_sinf(x); }
PJ_VM float pj_cosf_s(float x) { return fabsf(x) < 0.785398f ? pj_cosf_p(x) : pj_cosf(x); }
PJ_VM float pj_tanf_s(float x) { return fabsf(x) < 0.785398f ? pj_tanf_p(x) : pj_tanf(x); }
#define PJ_TRIG_FLAGGED(f, x) ({ const float pj_tx_ = (x); \
  pj_big |= (uint32_t)!PJ_TRIG_SMALL(pj_tx_); f(pj_tx_); })
#define pj_sinf_pf(x) PJ_TRIG_FLAGGED(pj_sinf_p, x)
#define pj_cosf_pf(x) PJ_TRIG_FLAGGED(pj_cosf_p, x)
#define pj_tanf_pf(x) PJ_TRIG_FLAGGED(pj_tanf_p, x)
/* float32 pow: |x|^y = exp(y log|x|) in double (pj_log, pj_exp: the product's error is
   far below a float ulp; one rounding to float), then C99's special cases by selects:
   x = 1 or y = 0 -> 1 (even NaN), |x| = 1 and y = +-inf -> 1, a negative x with an odd
   integer y negates, a finite negative x with a finite non-integer y -> NaN (the default
   NaN 0xFFC00000 that XLA's pow gives, not m's bits or'ed into a NaN exponent) */
PJ_VM float pj_powf(float x, float y) {
  const float ax = fabsf(x), ay = fabsf(y);
  const double yd = (double)y, ayd = (double)ay;
  const float m = (float)pj_exp(yd * pj_log((double)ax));
  /* parity and integrality of y: round(|y|) by the shifter 2^52 (|y| < 2^24; above, y is an
     even integer) */
  const double ry = ayd + 4503599627370496.0;
  const uint64_t ybits = pj_dbits(ry);
  const int small_y = (pj_fbits(y) & 0x7FFFFFFFu) < 0x4B800000u;   /* |y| < 2^24 */
  const int yint = (ry - 4503599627370496.0 == ayd) | !small_y;
  const int yodd = small_y & (int)(ybits & 1u) & yint;
  /* the tests on bit patterns (integer compares): an ordered float compare may trap on NaN,
     and GCC keeps one whose result only matters under another condition as a branch */
  const uint32_t bx = pj_fbits(x), bax = bx & 0x7FFFFFFFu, bay = pj_fbits(y) & 0x7FFFFFFFu;
  const int xneg = (bx > 0x80000000u) & (bax <= 0x7F800000u), xnegz = bx == 0x80000000u;
  const int xfin = bax < 0x7F800000u, yfin = bay < 0x7F800000u;
  const int ax1 = bax == 0x3F800000u, yinf = bay == 0x7F800000u;
  /* the patches as bit operations on m's bits, not selects: with a constant y (x ** 1.7) the
     conditions fold and GCC would sink m's computation into one select arm (a float
     conversion there keeps the loop scalar) */
  const uint32_t neg = (uint32_t)((xneg | xnegz) & yodd) << 31;
  const uint32_t nan = -(uint32_t)(xneg & xfin & yfin & !yint);
  const uint32_t one = -(uint32_t)((ax1 & yinf) | (bx == 0x3F800000u) | (bay == 0u));
  const uint32_t r = ((pj_fbits(m) ^ neg) & ~nan) | (nan & 0xFFC00000u);
  return pj_bitsf((r & ~one) | (one & 0x3F800000u));
}
/* float32 erfc: |x| < 0.45: 1 - erf(x) (erf's polynomial; erfc > 0.52, so erf's error is at
   most half an ulp of the result); above: E = exp(-a^2) R(2 / (2 + a)) in double (a^2 exact
   in double; R a degree-10 fit of erfcx on [0.45, 10.1] in u = t - 0.49, relative error
   1.2e-9), one rounding to float
   (subnormal results included); 2 - E for negative x */
PJ_VM float pj_erfcf(float x) {
  const float a = fabsf(x);
  const float a2 = a * a;
  const float erfs = PJ_FMAF(a, PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(PJ_FMAF(0x1.6c0eccp-14f, a2, -0x1.ae8e3cp-11f), a2, 0x1.553c76p-8f), a2, -0x1.b819dap-6f), a2, 0x1.ce2e86p-4f), a2, -0x1.812744p-2f), a2, 0x1.06eba8p-3f), a);
  const float small = 1.0f - pj_bitsf(pj_fbits(erfs) ^ (pj_fbits(x) & 0x80000000u));
  const double ad = (double)a;
  const double u = 2.0 / (2.0 + ad) - 0.49;
  const float e = (float)(pj_exp(-(ad * ad)) * PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(PJ_FMA(-0x1.ebfe512a26c91p-9, u, -0x1.35fcac96d3013p-4), u, 0x1.86a33778908a8p-6), u, 0x1.f7a0bab8d8e6ap-4), u, -0x1.0369564610e0dp-4), u, -0x1.c3424149e0f89p-3), u, 0x1.22322c1581742p-4), u, 0x1.422894be3e4cep-1), u, 0x1.e53b029b65aa5p-1), u, 0x1.aba30c95aab83p-1), u, 0x1.f9bfde61cae83p-3));
  const float big = x < 0.0f ? 2.0f - e : e;
  /* the last choice as a bit mask: a select would let GCC sink e's conversion into its arm
     (the loop would stay scalar) */
  const uint32_t m = -(uint32_t)(pj_fbits(a) < 0x3EE66666u);   /* |x| < 0.45 */
  return pj_bitsf((pj_fbits(small) & m) | (pj_fbits(big) & ~m));
}
/* float32 sinh, cosh, atanh through the float64 functions above (arguments exact in double,
   results rounded once to float; no overflow in double below float's limits):
   sinh = (e + e / (e + 1)) / 2 with e = expm1(min(|x|, 100)), cosh = exp(|x|) / 2 +
   1 / (2 exp(|x|)), atanh = log1p(2 |x| / (1 - |x|)) / 2; odd ones take x's sign bit (keeps
   -0).  The "+ 0.0" after widening |x| (exact: |x| is not -0) keeps GCC from folding the
   float64 functions' range compares back to float and sinking the conversion into a
   select's arm, which would leave the loop scalar. */
PJ_VM float pj_sinhf(float x) {
  const double a = (double)fabsf(x) + 0.0;
  const double e = pj_expm1(a > 100.0 ? 100.0 : a);
  const float r = (float)(0.5 * (e + e / (e + 1.0)));
  return pj_bitsf(pj_fbits(r) ^ (pj_fbits(x) & 0x80000000u));
}
PJ_VM float pj_coshf(float x) {
  const double e = pj_exp((double)fabsf(x) + 0.0);
  return (float)(0.5 * e + 0.5 / e);
}
PJ_VM float pj_atanhf(float x) {
  const double a = (double)fabsf(x) + 0.0;
  const float r = (float)(0.5 * pj_log1p(2.0 * a / (1.0 - a)));
  return pj_bitsf(pj_fbits(r) ^ (pj_fbits(x) & 0x80000000u));
}
"""
