"""Every elementwise rule the CUDA emitter takes from the CPU compiler, per dtype family:
one program per family with many outputs, compiled with NVRTC and run under the CPU
emulation against pyjax's CPU results (bit for bit: the same C expressions and vector
math; the emulation's libm is the CPU compiler's)."""
import numpy as np
import pytest

import pyjax as jax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.gpu import codegen_cuda, emulate, nvrtc

from test_compiler_cuda import _x64, assert_matches

_rng = np.random.default_rng(1)
_FLOAT_UNARY = [lax.exp, lax.log, lax.sin, lax.cos, lax.tan, lax.tanh, lax.logistic, lax.log1p,
                lax.expm1, lax.exp2, lax.sqrt, lax.rsqrt, lax.cbrt, lax.asin, lax.acos, lax.atan,
                lax.sinh, lax.cosh, lax.asinh, lax.acosh, lax.atanh, lax.erf, lax.erfc, lax.floor,
                lax.ceil, lax.round, lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                lax.is_finite, lax.sign, lax.abs, lax.neg, lax.square,
                lambda x: lax.integer_pow(x, 3), lambda x: lax.integer_pow(x, -2)]
_FLOAT_BINARY = [lax.add, lax.sub, lax.mul, lax.div, lax.rem, lax.pow, lax.atan2, lax.nextafter,
                 lax.max, lax.min, lax.eq, lax.ne, lax.lt, lax.le, lax.gt, lax.ge,
                 lambda x, y: lax.select(x > y, x, y), lambda x, y: lax.clamp(-0.5, x, y)]
_INT_BINARY = [lax.add, lax.sub, lax.mul, lax.div, lax.rem, lax.max, lax.min, lax.shift_left,
               lax.shift_right_logical, lax.shift_right_arithmetic, lax.bitwise_and,
               lax.bitwise_or, lax.bitwise_xor, lax.eq, lax.lt, lax.ge]
_INT_UNARY = [lax.neg, lax.bitwise_not, lambda x: lax.integer_pow(x, 3)]
_SIGNED_UNARY = [lax.abs, lax.sign]


def _floats(dtype):
  x = _rng.standard_normal((5, 23)).astype(dtype) * 3
  x[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40 if dtype == np.float32 else 1e-310]
  y = _rng.standard_normal((5, 23)).astype(dtype)
  return x, y


def _float_program(x, y):
  outs = [f(x) for f in _FLOAT_UNARY] + [f(x, y) for f in _FLOAT_BINARY]
  outs.append(lax.erf_inv(jnp.tanh(x)) if x.dtype == jnp.float32 else x)
  outs.append(lax.bitcast_convert_type(x, jnp.int32 if x.dtype == jnp.float32 else jnp.int64))
  return outs


def _int_program(x, y):
  unary = _INT_UNARY + (_SIGNED_UNARY if jnp.issubdtype(x.dtype, jnp.signedinteger) else [])
  return [f(x) for f in unary] + [f(x, y) for f in _INT_BINARY]


_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float32",
           "float64"]


def _convert_program(x):
  return [x.astype(d) for d in _DTYPES]


def _ints(dtype):
  info = np.iinfo(dtype)
  x = _rng.integers(info.min, info.max, (4, 19), dtype=dtype, endpoint=True)
  y = _rng.integers(-3 if info.min else 0, 70, (4, 19)).astype(dtype)
  x[0, :3] = [info.min, info.max, 0]
  y[0, :3] = [-1 if info.min else 0, 0, 0]
  return x, y


# name -> (function, arguments, x64)
PROGRAMS = {
    "float32": (_float_program, lambda: _floats(np.float32), False),
    "float64": (_float_program, lambda: _floats(np.float64), True),
    "int8": (_int_program, lambda: _ints(np.int8), False),
    "int32": (_int_program, lambda: _ints(np.int32), False),
    "uint16": (_int_program, lambda: _ints(np.uint16), False),
    "int64": (_int_program, lambda: _ints(np.int64), True),
    "uint64": (_int_program, lambda: _ints(np.uint64), True),
    "convert_f64": (_convert_program, lambda: (_floats(np.float64)[0] * 1e9,), True),
    "convert_i64": (_convert_program, lambda: (_ints(np.int64)[0],), True),
}
_lowered = {}


def _lower(name):
  hit = _lowered.get(name)
  if hit is None:
    fn, make_args, x64 = PROGRAMS[name]
    with _x64(x64), np.errstate(all="ignore"):
      args = make_args()
      closed = jax.make_jaxpr(fn)(*args)
      ref = [np.asarray(r) for r in jax.jit(fn)(*args)]
      hit = _lowered[name] = (codegen_cuda.lower(closed, f"ops_{name}"), closed, args, ref)
  return hit


@pytest.mark.skipif(not nvrtc.available(), reason="cuda-bindings / NVRTC not installed")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_nvrtc_compiles_every_rule(name):
  prog, _, _, _ = _lower(name)
  assert all(k is not None for _, k in prog.steps)
  ptx, _ = nvrtc.compile_ptx(codegen_cuda.module_source(prog.kernels), f"{name}.cu")
  assert all(f".entry {k.name}(" in ptx for k in prog.kernels)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulated_rules_match_cpu(name):
  _, closed, args, ref = _lower(name)
  assert_matches(emulate.run(closed, args, max_blocks=2), ref, 0)
