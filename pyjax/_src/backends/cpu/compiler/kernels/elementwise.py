"""C lowering of elementwise primitives: one C expression per element.

Each rule takes the C expressions of its operands (already in their *compute* type) and
returns the C expression of the result in the result's compute type:

    dtype       storage     compute
    bool        uint8_t     uint8_t (0 or 1)
    int*/uint*  <n>_t       <n>_t
    float16     uint16_t    float   (pj_h2f / pj_f2h convert; every result rounded)
    bfloat16    uint16_t    float   (pj_bf2f / pj_f2bf, round to nearest even)
    float32     float       float
    float64     double      double

Semantics are XLA's (as the eager NumPy backend implements them): integer arithmetic
wraps (computed in unsigned types, never C's undefined signed overflow), ``x / 0`` is -1
(signed) or all ones (unsigned) and ``INT_MIN / -1`` is ``INT_MIN``, ``x % 0`` is ``x``,
shifts by at least the bit width give 0 (arithmetic right shifts: the sign), float max/min
propagate NaN and order -0.0 below +0.0, float->int conversion saturates with NaN -> 0,
float16/bfloat16 operations compute in float32 and round every result.  No
``-ffast-math``: NaN, infinities and signed zeros behave as IEEE says.

To lower a new elementwise primitive, add a rule to ``RULES`` and give it a row of kind
``ew`` in ``primitive_table.py`` (with the attributes saying which dtypes it supports and
whether a half-precision result needs rounding afterwards).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from pyjax._src.backends.cpu.compiler import primitive_table as _table
from pyjax._src.backends.cpu.compiler.kernels import vmath

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)

_INT_NAMES = {np.dtype(t): f"{'u' if np.dtype(t).kind == 'u' else ''}int{np.dtype(t).itemsize * 8}_t"
              for t in (np.int8, np.int16, np.int32, np.int64,
                        np.uint8, np.uint16, np.uint32, np.uint64)}


def storable(d):
  d = np.dtype(d)
  return d == BOOL or d in _INT_NAMES or d in (F16, BF16, F32, F64)


def is_half(d):
  return d == F16 or d == BF16


def is_float(d):
  return d in (F16, BF16, F32, F64)


def is_int(d):
  return d in _INT_NAMES


def storage_type(d):
  d = np.dtype(d)
  if d == BOOL:
    return "uint8_t"
  if d in _INT_NAMES:
    return _INT_NAMES[d]
  if is_half(d):
    return "uint16_t"
  return "float" if d == F32 else "double"


def compute_type(d):
  d = np.dtype(d)
  if is_half(d):
    return "float"
  return storage_type(d)


def _utype(d):
  """The unsigned type wrapping arithmetic of ``d`` is done in (no promotion to int)."""
  return "uint64_t" if d.itemsize == 8 else "uint32_t"


def _uwidth(d):
  return f"uint{d.itemsize * 8}_t"


def _fsuf(d):
  """libm suffix: float for float32 and the half types, none for float64."""
  return "" if d == F64 else "f"


def load(d, expr):
  """Storage -> compute."""
  if d == F16:
    return f"pj_h2f({expr})"
  if d == BF16:
    return f"pj_bf2f({expr})"
  return expr


def store(d, expr):
  """Compute -> storage (the value is already representable)."""
  if d == F16:
    return f"pj_f2h({expr})"
  if d == BF16:
    return f"pj_f2bf({expr})"
  return expr


def round_to(d, expr):
  """Round a float32 ``expr`` to the half type ``d`` (kept in float32)."""
  if d == F16:
    return f"pj_rh({expr})"
  if d == BF16:
    return f"pj_rbf({expr})"
  return expr


def literal(value, d):
  """A C literal of dtype ``d`` in its compute type."""
  d = np.dtype(d)
  if d == BOOL:
    return "((uint8_t)1)" if bool(value) else "((uint8_t)0)"
  if d in _INT_NAMES:
    v = int(value)
    t = _INT_NAMES[d]
    if d == np.int64 and v == -(1 << 63):
      return "((int64_t)(-9223372036854775807LL - 1))"
    suffix = "ULL" if d.kind == "u" else "LL"
    return f"(({t}){v}{suffix})"
  v = float(np.asarray(value, np.float64))
  ct = compute_type(d)
  if math.isnan(v):
    return f"(({ct})NAN)" if not np.signbit(v) else f"(({ct})-NAN)"
  if math.isinf(v):
    return f"(({ct})INFINITY)" if v > 0 else f"(({ct})-INFINITY)"
  return f"(({ct}){v!r})"


def identity_literal(prim, d):
  """The identity of a reduction."""
  d = np.dtype(d)
  if prim == "reduce_sum" or prim in ("reduce_or", "reduce_xor"):
    return literal(0, d)
  if prim == "reduce_prod":
    return literal(1, d)
  if prim == "reduce_and":
    return literal(1, d) if d == BOOL else literal(-1 if d.kind == "i" else np.iinfo(d).max, d)
  if prim in ("reduce_max", "argmax"):
    if d == BOOL:
      return literal(0, d)
    if d in _INT_NAMES:
      return literal(np.iinfo(d).min, d)
    return literal(-np.inf, d)
  if prim in ("reduce_min", "argmin"):
    if d == BOOL:
      return literal(1, d)
    if d in _INT_NAMES:
      return literal(np.iinfo(d).max, d)
    return literal(np.inf, d)
  raise ValueError(prim)


def combine(prim, d, acc, x):
  """C expression ``acc (op) x`` of a reduction (rounded for half types)."""
  d = np.dtype(d)
  if prim == "reduce_sum":
    return _arith("+", d, acc, x)
  if prim == "reduce_prod":
    return _arith("*", d, acc, x)
  if prim == "reduce_max":
    return _maxmin(d, acc, x, True)
  if prim == "reduce_min":
    return _maxmin(d, acc, x, False)
  op = {"reduce_and": "&", "reduce_or": "|", "reduce_xor": "^"}[prim]
  return f"(({compute_type(d)})({acc} {op} {x}))"


def reduction_supported(prim, in_dtype, out_dtype):
  d = np.dtype(in_dtype)
  if not storable(d):
    return False
  if prim in ("reduce_sum", "reduce_prod"):
    return d != BOOL
  if prim in ("reduce_and", "reduce_or", "reduce_xor"):
    return d == BOOL or d in _INT_NAMES
  if prim in ("argmax", "argmin"):
    return np.dtype(out_dtype) in _INT_NAMES
  return True


# --- arithmetic helpers -------------------------------------------------------------------
def _arith(op, d, a, b):
  if d in _INT_NAMES:
    return f"(({_INT_NAMES[d]})(({_utype(d)})({a}) {op} ({_utype(d)})({b})))"
  if d == BOOL:
    raise NotImplementedError
  return round_to(d, f"({a} {op} {b})")


def _maxmin(d, a, b, is_max):
  if is_float(d):
    f = "pj_max" if is_max else "pj_min"
    return f"{f}{'' if d == F64 else 'f'}({a}, {b})"
  op = ">" if is_max else "<"
  return f"(({a}) {op} ({b}) ? ({a}) : ({b}))"


def _int_helper(name, d):
  return f"pj_{name}_{'u' if d.kind == 'u' else 'i'}{d.itemsize * 8}"


# --- rules --------------------------------------------------------------------------------
RULES = {}


def rule(*names):
  def deco(fn):
    for n in names:
      RULES[n] = fn
    return fn
  return deco


def _out(node):
  return node.outs[0].dtype


def _in(node, i=0):
  return node.ins[i].dtype


@rule(*sorted(_table.LIBM))
def _libm_unary(node, a):
  d = _out(node)
  own = vmath.function(node.prim, d != F64)   # inline vector math (kernels/vmath.py), if any
  if own is not None:
    return f"{own}({a})"
  return f"{node.prim}{_fsuf(d)}({a})"


@rule("rsqrt")
def _rsqrt(node, a):
  d = _out(node)
  one = "1.0" if d == F64 else "1.0f"
  return f"({one} / sqrt{_fsuf(d)}({a}))"


@rule("logistic")
def _logistic(node, a):
  """1 / (1 + exp(-x)) with kernels/vmath.py's exp (float32) or libmvec's (float64): 0 where exp(-x)
  overflows, as NumPy's expit and JAX give."""
  return f"{vmath.function('logistic', _out(node) != F64)}({a})"


@rule("lgamma")
def _lgamma(node, a):
  d = _out(node)
  return f"({{ int pj_s_; lgamma{_fsuf(d)}_r({a}, &pj_s_); }})"


@rule("neg")
def _neg(node, a):
  d = _out(node)
  if d in _INT_NAMES:
    return f"(({_INT_NAMES[d]})(({_utype(d)})0 - ({_utype(d)})({a})))"
  return f"(-({a}))"


@rule("abs")
def _abs(node, a):
  d = _out(node)
  if d in _INT_NAMES:
    if d.kind == "u":
      return f"({a})"
    return f"(({a}) < 0 ? ({_INT_NAMES[d]})(({_utype(d)})0 - ({_utype(d)})({a})) : ({a}))"
  return f"fabs{_fsuf(d)}({a})"


@rule("sign")
def _sign(node, a):
  d = _out(node)
  if d in _INT_NAMES:
    t = _INT_NAMES[d]
    if d.kind == "u":
      return f"(({t})(({a}) > 0))"
    return f"(({t})((({a}) > 0) - (({a}) < 0)))"
  ct = compute_type(d)
  return f"(({a}) > 0 ? ({ct})1 : (({a}) < 0 ? ({ct})-1 : ({a})))"


@rule("floor", "ceil")
def _floor_ceil(node, a):
  return f"{node.prim}{_fsuf(_out(node))}({a})"


@rule("round")
def _round(node, a):
  d = _out(node)
  s = _fsuf(d)
  if int(node.params.get("rounding_method", 0)) == 1:
    return f"rint{s}({a})"
  half = "0.5" if d == F64 else "0.5f"
  one = "1.0" if d == F64 else "1.0f"
  return (f"({{ {compute_type(d)} pj_a_ = fabs{s}({a}), pj_r_ = floor{s}(pj_a_); "
          f"copysign{s}((pj_a_ - pj_r_ >= {half}) ? pj_r_ + {one} : pj_r_, {a}); }})")


@rule("is_finite")
def _is_finite(node, a):
  return f"((uint8_t)(isfinite({a}) != 0))"


@rule("square")
def _square(node, a):
  return _arith("*", _out(node), a, a)


@rule("not")
def _not(node, a):
  d = _out(node)
  if d == BOOL:
    return f"((uint8_t)!({a}))"
  return f"(({_INT_NAMES[d]})~({a}))"


@rule("population_count")
def _popcount(node, a):
  d = _out(node)
  fn = "__builtin_popcountll" if d.itemsize == 8 else "__builtin_popcount"
  return f"(({_INT_NAMES[d]}){fn}(({_uwidth(d)})({a})))"


@rule("clz")
def _clz(node, a):
  d = _out(node)
  bits = d.itemsize * 8
  if d.itemsize == 8:
    inner = f"__builtin_clzll((uint64_t)({a}))"
  else:
    inner = f"(__builtin_clz((uint32_t)({_uwidth(d)})({a})) - {32 - bits})"
  return f"(({_INT_NAMES[d]})((({_uwidth(d)})({a})) == 0 ? {bits} : {inner}))"


@rule("add", "sub", "mul")
def _binary_arith(node, a, b):
  op = {"add": "+", "sub": "-", "mul": "*"}[node.prim]
  return _arith(op, _out(node), a, b)


@rule("div")
def _div(node, a, b):
  d = _out(node)
  if d in _INT_NAMES:
    return f"{_int_helper('div', d)}({a}, {b})"
  return round_to(d, f"({a} / {b})")


@rule("rem")
def _rem(node, a, b):
  d = _out(node)
  if d in _INT_NAMES:
    return f"{_int_helper('rem', d)}({a}, {b})"
  return f"fmod{_fsuf(d)}({a}, {b})"


@rule("max")
def _max(node, a, b):
  return _maxmin(_out(node), a, b, True)


@rule("min")
def _min(node, a, b):
  return _maxmin(_out(node), a, b, False)


@rule("atan2")
def _atan2(node, a, b):
  return f"atan2{_fsuf(_out(node))}({a}, {b})"


@rule("nextafter")
def _nextafter(node, a, b):
  return f"nextafter{_fsuf(_out(node))}({a}, {b})"


@rule("and", "or", "xor")
def _bitwise(node, a, b):
  op = {"and": "&", "or": "|", "xor": "^"}[node.prim]
  return f"(({compute_type(_out(node))})(({a}) {op} ({b})))"


@rule("shift_left", "shift_right_logical", "shift_right_arithmetic")
def _shift(node, a, b):
  d = _out(node)
  return f"{_int_helper(node.prim, d)}({a}, {b})"


@rule("eq", "ne", "lt", "le", "gt", "ge")
def _compare(node, a, b):
  op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[node.prim]
  return f"((uint8_t)(({a}) {op} ({b})))"


@rule("pow")
def _pow(node, a, b):
  d = _out(node)
  ct = compute_type(d)
  fn = vmath.function("pow", d != F64) or f"pow{_fsuf(d)}"   # float32: kernels/vmath.py's own
  y = f"({ct})({b})"
  if is_half(d) and node.ins[1].dtype != d:   # an integer exponent rounded to the half
    y = round_to(d, y)                         # type first, as XLA converts it
  return f"{fn}({a}, {y})"


@rule("integer_pow")
def _integer_pow(node, a):
  d = _out(node)
  y = int(node.params["y"])
  ct = compute_type(d)
  if y == 0:
    return literal(1, d)
  n = abs(y)
  mul = (lambda x, z: _arith("*", d, x, z)) if d in _INT_NAMES else (
      lambda x, z: round_to(d, f"({x} * {z})"))
  stmts = [f"{ct} pj_b_ = {a};"]
  acc = None
  k = 0
  while n:
    if n & 1:
      if acc is None:
        stmts.append(f"{ct} pj_c{k}_ = pj_b_;")
      else:
        stmts.append(f"{ct} pj_c{k}_ = {mul(acc, 'pj_b_')};")
      acc = f"pj_c{k}_"
      k += 1
    n >>= 1
    if n:
      stmts.append(f"pj_b_ = {mul('pj_b_', 'pj_b_')};")
  res = acc
  if y < 0:
    one = "1.0" if d == F64 else "1.0f"
    res = round_to(d, f"({one} / {acc})")
  return "({ " + " ".join(stmts) + f" {res}; }})"


@rule("select_n")
def _select_n(node, which, *cases):
  if len(cases) == 1:
    return cases[0]
  if _in(node) == BOOL:
    return f"(({which}) ? ({cases[1]}) : ({cases[0]}))"
  expr = cases[-1]
  for i in range(len(cases) - 2, -1, -1):
    cond = f"({which}) <= {i}" if i == 0 else f"({which}) == {i}"
    expr = f"({cond} ? ({cases[i]}) : {expr})"
  return expr


@rule("clamp")
def _clamp(node, lo, x, hi):
  d = _out(node)
  return _maxmin(d, _maxmin(d, x, lo, True), hi, False)


@rule("fma")
def _fma(node, a, b, c):
  return f"fma{_fsuf(_out(node))}({a}, {b}, {c})"


_GILES_LO = ["2.81022636e-08f", "3.43273939e-07f", "-3.5233877e-06f", "-4.39150654e-06f",
             "0.00021858087f", "-0.00125372503f", "-0.00417768164f", "0.246640727f",
             "1.50140941f"]
_GILES_HI = ["-0.000200214257f", "0.000100950558f", "0.00134934322f", "-0.00367342844f",
             "0.00573950773f", "-0.0076224613f", "0.00943887047f", "1.00167406f",
             "2.83297682f"]


@rule("erf_inv")
def _erf_inv(node, a):
  """Giles' single-precision approximation (XLA's), +-1 -> +-inf, |x| > 1 -> NaN."""
  lo = "pj_p_ = " + _GILES_LO[0] + "; " + " ".join(f"pj_p_ = {c} + pj_p_ * pj_w_;"
                                                  for c in _GILES_LO[1:])
  hi = "pj_q_ = " + _GILES_HI[0] + "; " + " ".join(f"pj_q_ = {c} + pj_q_ * pj_v_;"
                                                  for c in _GILES_HI[1:])
  log1p = vmath.function("log1p", True) or "log1pf"   # inline vector math: the loop vectorizes
  return (f"({{ const float pj_x_ = {a}; const float pj_w0_ = -{log1p}(-(pj_x_ * pj_x_)); "
          f"const float pj_w_ = pj_w0_ - 2.5f; "
          f"const float pj_v_ = sqrtf(pj_w0_) - 3.0f; float pj_p_, pj_q_; {lo} {hi} "
          f"fabsf(pj_x_) == 1.0f ? copysignf(INFINITY, pj_x_) : "
          f"(pj_w0_ < 5.0f ? pj_p_ : pj_q_) * pj_x_; }})")


@rule("bitcast_convert_type")
def _bitcast(node, a):
  src, dst = _in(node), _out(node)
  st, dt = storage_type(src), storage_type(dst)
  # (a union: memcpy into an addressed local keeps GCC from vectorizing the loop)
  return (f"({{ union {{ {st} s; {dt} d; }} pj_b_ = {{ .s = {store(src, a)} }}; "
          f"{load(dst, 'pj_b_.d')}; }})")


_THREEFRY_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry_expr(k1, k2, x1, x2, which):
  lines = [f"uint32_t pj_k0_ = {k1}, pj_k1_ = {k2}; uint32_t pj_k2_ = pj_k0_ ^ pj_k1_ ^ 0x1BD11BDAu;",
           f"uint32_t pj_a_ = (uint32_t)({x1}) + pj_k0_, pj_b_ = (uint32_t)({x2}) + pj_k1_;"]
  for i in range(5):
    for r in _THREEFRY_ROT[i % 2]:
      lines.append(f"pj_a_ += pj_b_; pj_b_ = (pj_b_ << {r}) | (pj_b_ >> {32 - r}); pj_b_ ^= pj_a_;")
    lines.append(f"pj_a_ += pj_k{(i + 1) % 3}_; pj_b_ += pj_k{(i + 2) % 3}_ + {i + 1}u;")
  return "({ " + " ".join(lines) + f" {'pj_a_' if which == 0 else 'pj_b_'}; }})"


@rule("threefry2x32_0")
def _threefry0(node, k1, k2, x1, x2):
  return _threefry_expr(k1, k2, x1, x2, 0)


@rule("threefry2x32_1")
def _threefry1(node, k1, k2, x1, x2):
  return _threefry_expr(k1, k2, x1, x2, 1)


@rule("convert_element_type")
def _convert(node, a):
  src, dst = _in(node), _out(node)
  return convert_expr(src, dst, a)


def convert_expr(src, dst, a):
  """Convert compute-typed ``a`` of dtype ``src`` to dtype ``dst`` (compute type)."""
  if src == dst:
    return a
  if dst == BOOL:
    return f"((uint8_t)(({a}) != 0))"
  if src == BOOL:
    return f"(({compute_type(dst)})({a}))"
  if dst in _INT_NAMES:
    if is_float(src):
      info = np.iinfo(dst)
      t = _INT_NAMES[dst]
      lo, hi = literal(info.min, dst), literal(info.max, dst)
      return (f"({{ double pj_x_ = (double)({a}); (pj_x_ != pj_x_) ? ({t})0 : "
              f"(pj_x_ <= {float(info.min)!r} ? {lo} : (pj_x_ >= {float(info.max)!r} ? {hi} "
              f": ({t})pj_x_)); }})")
    return f"(({_INT_NAMES[dst]})({a}))"
  # dst is a float
  if dst == F16:
    if src == F64:
      return f"pj_h2f(pj_d2h({a}))"
    return f"pj_rh((float)({a}))"
  if dst == BF16:
    return f"pj_rbf((float)({a}))"
  return f"(({compute_type(dst)})({a}))"


# --- support ------------------------------------------------------------------------------
_FLOAT_ONLY = _table.FLOAT_ONLY
_INT_ONLY = _table.INT_ONLY
_NO_HALF = _table.NO_HALF


def supports(node):
  """Whether ``node`` (an elementwise primitive application) can be lowered to C."""
  fn = RULES.get(node.prim)
  if fn is None or len(node.outs) != 1:
    return False
  out = node.outs[0]
  if not storable(out.dtype):
    return False
  for x in node.ins:
    if not storable(x.dtype):
      return False
  p = node.prim
  d = out.dtype
  src = node.ins[0].dtype if node.ins else d
  if p in _FLOAT_ONLY and not is_float(src):
    return False
  if p in _INT_ONLY and d not in _INT_NAMES:
    return False
  if p in _NO_HALF and is_half(d):
    return False
  if p in ("add", "sub", "mul", "div", "square", "neg", "abs", "sign", "rem") and d == BOOL:
    return False
  if p == "integer_pow" and (d == BOOL or (d in _INT_NAMES and node.params["y"] < 0)):
    return False
  if p == "pow" and not is_float(d):
    return False
  if p == "select_n" and node.ins[0].dtype != BOOL and node.ins[0].dtype not in _INT_NAMES:
    return False
  if p == "fma" and d not in (F32, F64):
    return False
  if p == "erf_inv" and d == F64:
    return False
  if p == "bitcast_convert_type" and (src.itemsize != d.itemsize or src == BOOL or d == BOOL):
    return False
  if p.startswith("threefry2x32_") and any(x.dtype != np.dtype(np.uint32) for x in node.ins):
    return False
  return True


_ROUND_AFTER = _table.ROUND_HALF


def lower(node, args):
  """The C expression of ``node`` applied to the C expressions ``args``."""
  expr = RULES[node.prim](node, *args)
  d = node.outs[0].dtype
  if is_half(d) and node.prim in _ROUND_AFTER:
    expr = round_to(d, expr)
  return expr


# --- the C prelude ------------------------------------------------------------------------
_INT_HELPERS = r"""
#define PJ_SIGNED_HELPERS(T, U, UW, BITS, MIN) \
static inline T pj_div_i##BITS(T x, T y) { \
  return y == 0 ? (T)-1 : (y == -1 ? (T)((U)0 - (U)x) : (T)(x / y)); } \
static inline T pj_rem_i##BITS(T x, T y) { \
  return y == 0 ? x : (y == -1 ? (T)0 : (T)(x % y)); } \
static inline T pj_shift_left_i##BITS(T x, T y) { \
  return (UW)y >= BITS ? (T)0 : (T)((UW)((U)(UW)x << (UW)y)); } \
static inline T pj_shift_right_logical_i##BITS(T x, T y) { \
  return (UW)y >= BITS ? (T)0 : (T)((UW)x >> (UW)y); } \
static inline T pj_shift_right_arithmetic_i##BITS(T x, T y) { \
  return (T)(x >> ((UW)y >= BITS ? BITS - 1 : (UW)y)); }
#define PJ_UNSIGNED_HELPERS(T, U, ST, BITS) \
static inline T pj_div_u##BITS(T x, T y) { return y == 0 ? (T)~(T)0 : (T)(x / y); } \
static inline T pj_rem_u##BITS(T x, T y) { return y == 0 ? x : (T)(x % y); } \
static inline T pj_shift_left_u##BITS(T x, T y) { \
  return y >= BITS ? (T)0 : (T)((U)x << y); } \
static inline T pj_shift_right_logical_u##BITS(T x, T y) { \
  return y >= BITS ? (T)0 : (T)(x >> y); } \
static inline T pj_shift_right_arithmetic_u##BITS(T x, T y) { \
  return (T)((ST)x >> (y >= BITS ? BITS - 1 : y)); }
PJ_SIGNED_HELPERS(int8_t, uint32_t, uint8_t, 8, INT8_MIN)
PJ_SIGNED_HELPERS(int16_t, uint32_t, uint16_t, 16, INT16_MIN)
PJ_SIGNED_HELPERS(int32_t, uint32_t, uint32_t, 32, INT32_MIN)
PJ_SIGNED_HELPERS(int64_t, uint64_t, uint64_t, 64, INT64_MIN)
PJ_UNSIGNED_HELPERS(uint8_t, uint32_t, int8_t, 8)
PJ_UNSIGNED_HELPERS(uint16_t, uint32_t, int16_t, 16)
PJ_UNSIGNED_HELPERS(uint32_t, uint32_t, int32_t, 32)
PJ_UNSIGNED_HELPERS(uint64_t, uint64_t, int64_t, 64)
"""

_FLOAT_HELPERS = r"""
/* XLA's max/min: NaN propagates, -0.0 < +0.0 */
static inline float pj_maxf(float a, float b) {
  return a > b ? a : (b > a ? b : (a != a ? a : (b != b ? b : (signbit(a) ? b : a)))); }
static inline float pj_minf(float a, float b) {
  return a < b ? a : (b < a ? b : (a != a ? a : (b != b ? b : (signbit(a) ? a : b)))); }
static inline double pj_max(double a, double b) {
  return a > b ? a : (b > a ? b : (a != a ? a : (b != b ? b : (signbit(a) ? b : a)))); }
static inline double pj_min(double a, double b) {
  return a < b ? a : (b < a ? b : (a != a ? a : (b != b ? b : (signbit(a) ? a : b)))); }

/* bfloat16: the high half of a float32; round to nearest even, NaN stays a quiet NaN */
static inline float pj_bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f;
  memcpy(&f, &u, 4); return f; }
static inline uint16_t pj_f2bf(float f) { uint32_t u; memcpy(&u, &f, 4);
  if (f != f) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7FFFu + ((u >> 16) & 1u); return (uint16_t)(u >> 16); }
static inline float pj_rbf(float f) { return pj_bf2f(pj_f2bf(f)); }

/* float16 <-> float32 by integer operations and selects (no branches, no _Float16: GCC
   vectorizes these; it does not vectorize _Float16 conversions without AVX512-FP16).
   Round to nearest even; a NaN keeps its sign and the top of its payload and comes out
   quiet, as the x86 conversion instructions (and XLA) do. */
static inline uint32_t pj_hf_bits(float f) { union { float f; uint32_t u; } b = { .f = f }; return b.u; }
static inline float pj_hf_float(uint32_t u) { union { uint32_t u; float f; } b = { .u = u }; return b.f; }
static inline float pj_h2f(uint16_t h) {
  const uint32_t s = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7FFFu, o = em << 13;
  const uint32_t norm = o + ((127u - 15u) << 23);                         /* rebias */
  const uint32_t sub = pj_hf_bits(pj_hf_float(o + (113u << 23)) - pj_hf_float(113u << 23));
  const uint32_t r = em > 0x7C00u ? (o | 0x7FC00000u) : em == 0x7C00u ? 0x7F800000u
                     : em < 0x0400u ? sub : norm;
  return pj_hf_float(r | s); }
static inline uint16_t pj_f2h(float x) {
  const uint32_t u = pj_hf_bits(x), s = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  /* normal: the mantissa rounded to 10 bits (a carry rounds into the exponent, up to inf) */
  const uint32_t norm = (a - ((127u - 15u) << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
  /* subnormal: adding 0.5 leaves the half's bits, rounded by the FPU, at the bottom */
  const uint32_t sub = pj_hf_bits(pj_hf_float(a) + 0.5f) - 0x3F000000u;
  const uint32_t r = a > 0x7F800000u ? (0x7E00u | ((a >> 13) & 0x3FFu))
                     : a >= 0x47800000u ? 0x7C00u : a < 0x38800000u ? sub : norm;
  return (uint16_t)(r | s); }
#ifdef PJ_HAVE_FLOAT16
static inline uint16_t pj_d2h(double x) { _Float16 f = (_Float16)x; uint16_t h;
  memcpy(&h, &f, 2); return h; }
#else
/* portable double -> half (round to nearest even) */
static inline uint16_t pj_d2h(double x) {
  uint64_t u; memcpy(&u, &x, 8);
  uint16_t s = (uint16_t)((u >> 48) & 0x8000u);
  uint64_t a = u & 0x7FFFFFFFFFFFFFFFull;
  if (a >= 0x7FF0000000000000ull)
    return (uint16_t)(s | 0x7C00u | (a > 0x7FF0000000000000ull ? 0x200u | (uint16_t)((a >> 42) & 0x3FFu) : 0));
  int e = (int)(a >> 52) - 1023;
  if (e > 15) return (uint16_t)(s | 0x7C00u);
  uint64_t m = (a & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull;
  int shift = e >= -14 ? 42 : 42 + (-14 - e);
  if (shift > 53) return s;
  uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), halfway = 1ull << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) q++;
  uint32_t bits = e >= -14 ? (uint32_t)(((uint32_t)(e + 15) << 10) + (q - 0x400u)) : (uint32_t)q;
  return (uint16_t)(s | bits); }
#endif
/* a float rounded to the nearest half (ties to even) and back, without converting: the
   mantissa rounded to 10 bits in the normal range, to multiples of 2^-24 below it (adding
   and subtracting 0.5 lets the FPU round), infinity from 65520 on, a NaN quieted with the
   top of its payload kept -- bit for bit pj_h2f(pj_f2h(f)) */
static inline float pj_rh(float f) {
  const uint32_t u = pj_hf_bits(f), s = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  const uint32_t norm = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
  const uint32_t sub = pj_hf_bits((pj_hf_float(a) + 0.5f) - 0.5f);
  const uint32_t r = a > 0x7F800000u ? ((a | 0x00400000u) & 0xFFFFE000u)
                     : a >= 0x477FF000u ? 0x7F800000u : a < 0x38800000u ? sub : norm;
  return pj_hf_float(r | s); }
"""


_TREE_HELPERS = r"""
/* XLA's CPU reduction order for float sums and products (as the NumPy backend emulates it):
   every reduced dimension longer than 32 is padded evenly at both ends to a multiple of 32
   and cut into windows of 32; each window (row-major over its dimensions) is reduced
   sequentially; then the grid of partial results is reduced the same way, until no
   dimension is longer than 32; the last level is one sequential pass.  ``x`` is a
   contiguous row-major array of ``dims``; one window at a time per lane of 8 for 1-D. */
#define PJ_TREE(NAME, T, OP, ID)                                                          \
static T NAME(const T *x, int nd, const int64_t *dims) {                                   \
  int64_t n = 1; int split = 0;                                                            \
  for (int k = 0; k < nd; k++) { n *= dims[k]; if (dims[k] > 32) split = 1; }              \
  if (n == 0) return ID;   /* (a 0-size dimension has no windows) */                       \
  if (!split) { T a = ID; for (int64_t i = 0; i < n; i++) a = OP(a, x[i]); return a; }     \
  int64_t w[8], g[8], p[8], ng = 1;                                                        \
  for (int k = 0; k < nd; k++) {                                                           \
    w[k] = dims[k] > 32 ? 32 : dims[k]; g[k] = (dims[k] + w[k] - 1) / w[k];               \
    p[k] = (g[k] * w[k] - dims[k]) / 2; ng *= g[k]; }                                      \
  T stackbuf[512]; T *part = ng <= 512 ? stackbuf : (T *)pj_scratch(sizeof(T) * (size_t)ng); \
  if (nd == 1) {                                                                           \
    const int64_t d = dims[0], pd = p[0], gn = g[0];                                      \
    int64_t glo = pd > 0 ? 1 : 0, gend = (d + pd) / 32, c = 0;                            \
    for (; c < glo; c++) { T a = ID; for (int64_t i = 0; i < 32 - pd && i < d; i++)       \
      a = OP(a, x[i]); part[c] = a; }                                                      \
    for (; c + 8 <= gend; c += 8) {                                                        \
      const T *b = x + c * 32 - pd;                                                        \
      T a0 = ID, a1 = ID, a2 = ID, a3 = ID, a4 = ID, a5 = ID, a6 = ID, a7 = ID;            \
      for (int j = 0; j < 32; j++) {                                                       \
        a0 = OP(a0, b[j]); a1 = OP(a1, b[32 + j]); a2 = OP(a2, b[64 + j]);                 \
        a3 = OP(a3, b[96 + j]); a4 = OP(a4, b[128 + j]); a5 = OP(a5, b[160 + j]);          \
        a6 = OP(a6, b[192 + j]); a7 = OP(a7, b[224 + j]); }                                \
      part[c] = a0; part[c + 1] = a1; part[c + 2] = a2; part[c + 3] = a3;                  \
      part[c + 4] = a4; part[c + 5] = a5; part[c + 6] = a6; part[c + 7] = a7; }            \
    for (; c < gn; c++) { T a = ID; int64_t lo = c * 32 - pd, hi = lo + 32;               \
      if (lo < 0) lo = 0; if (hi > d) hi = d;                                              \
      for (int64_t i = lo; i < hi; i++) a = OP(a, x[i]); part[c] = a; }                    \
  } else {                                                                                 \
    int64_t st[8]; st[nd - 1] = 1;                                                        \
    for (int k = nd - 2; k >= 0; k--) st[k] = st[k + 1] * dims[k + 1];                     \
    for (int64_t cell = 0; cell < ng; cell++) {                                            \
      int64_t cg[8], lo[8], hi[8], idx[8], rem = cell;                                     \
      for (int k = nd - 1; k >= 0; k--) { cg[k] = rem % g[k]; rem /= g[k]; }               \
      int empty = 0;                                                                       \
      for (int k = 0; k < nd; k++) { lo[k] = cg[k] * w[k] - p[k]; hi[k] = lo[k] + w[k];    \
        if (lo[k] < 0) lo[k] = 0; if (hi[k] > dims[k]) hi[k] = dims[k];                    \
        if (lo[k] >= hi[k]) empty = 1; idx[k] = lo[k]; }                                   \
      T a = ID;                                                                            \
      if (!empty) for (;;) {                                                               \
        int64_t off = 0; for (int k = 0; k < nd; k++) off += idx[k] * st[k];               \
        a = OP(a, x[off]);                                                                 \
        int k = nd - 1;                                                                    \
        while (k >= 0) { if (++idx[k] < hi[k]) break; idx[k] = lo[k]; k--; }               \
        if (k < 0) break; }                                                                \
      part[cell] = a; }                                                                    \
  }                                                                                        \
  T r = NAME(part, nd, g);                                                                 \
  if (part != stackbuf) pj_unscratch(part);                                                \
  return r; }
#define PJ_ADD(a, b) ((a) + (b))
#define PJ_MUL(a, b) ((a) * (b))
#define PJ_ADD_H(a, b) pj_rh((a) + (b))
#define PJ_MUL_H(a, b) pj_rh((a) * (b))
#define PJ_ADD_B(a, b) pj_rbf((a) + (b))
#define PJ_MUL_B(a, b) pj_rbf((a) * (b))
PJ_TREE(pj_tree_sum_f, float, PJ_ADD, 0.0f)
PJ_TREE(pj_tree_prod_f, float, PJ_MUL, 1.0f)
PJ_TREE(pj_tree_sum_d, double, PJ_ADD, 0.0)
PJ_TREE(pj_tree_prod_d, double, PJ_MUL, 1.0)
PJ_TREE(pj_tree_sum_h, float, PJ_ADD_H, 0.0f)
PJ_TREE(pj_tree_prod_h, float, PJ_MUL_H, 1.0f)
PJ_TREE(pj_tree_sum_b, float, PJ_ADD_B, 0.0f)
PJ_TREE(pj_tree_prod_b, float, PJ_MUL_B, 1.0f)
"""


def tree_helper(prim, d):
  """The C helper reducing a contiguous compute-typed array in XLA's order."""
  op = "sum" if prim == "reduce_sum" else "prod"
  suf = {"float32": "f", "float64": "d", "float16": "h", "bfloat16": "b"}[np.dtype(d).name]
  return f"pj_tree_{op}_{suf}"


_MVEC = ["exp", "log", "sin", "cos", "tan", "exp2", "expm1", "log1p", "tanh", "asin",
         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc"]
_MVEC2 = ["pow", "atan2"]


# kernels' temporary memory: the runtime's per-thread scratch (native/runtime.py; the pointers
# are set when an executable is instantiated), else malloc
_SCRATCH = r"""typedef void *(*pj_scratch_alloc_t)(size_t);
typedef void (*pj_scratch_free_t)(void *);
static pj_scratch_alloc_t pj_scratch_alloc;
static pj_scratch_free_t pj_scratch_free;
static inline void *pj_scratch(size_t n) {
  return pj_scratch_alloc ? pj_scratch_alloc(n) : malloc(n);
}
static inline void pj_unscratch(void *p) {
  if (pj_scratch_free) pj_scratch_free(p); else free(p);
}
"""


def prelude(have_float16=True, mvec=True):
  """The C text every translation unit starts with."""
  lines = ["#define _GNU_SOURCE 1", "#include <stdint.h>", "#include <stddef.h>",
           "#include <string.h>", "#include <stdlib.h>", "#include <math.h>"]
  if have_float16:
    lines.append("#define PJ_HAVE_FLOAT16 1")
  if mvec:
    lines.append("/* vector variants from glibc's libmvec (as math.h declares them under "
                 "-ffast-math, without its other effects) */")
    for f in _MVEC:
      for suf, t in (("f", "float"), ("", "double")):
        lines.append(f"#pragma omp declare simd notinbranch\nextern {t} {f}{suf}({t});")
    for f in _MVEC2:
      for suf, t in (("f", "float"), ("", "double")):
        lines.append(f"#pragma omp declare simd notinbranch\nextern {t} {f}{suf}({t}, {t});")
  return ("\n".join(lines) + "\n" + _SCRATCH + _INT_HELPERS + _FLOAT_HELPERS + vmath.prelude_defines(mvec)
          + vmath.SOURCE + _TREE_HELPERS)
