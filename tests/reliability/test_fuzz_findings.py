"""Defects found during the fuzzing pass of ``tests/fuzz_vs_jax.py`` (its eager tier and
extended integer edge-case ops) or beside it, each against real JAX, and a small
fixed-seed slice of the eager tier over the extended ops."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp

import fuzz_vs_jax


def _outcome(m, f):
  try:
    r = f(m)
    return str(r.dtype), np.asarray(r).tolist()
  except Exception as e:  # noqa: BLE001 -- the exception is the outcome compared
    return type(e).__name__, str(e)


@pytest.mark.parametrize("value", [2**31, -2**31 - 1, 2**40, 2**31 - 1])
@pytest.mark.parametrize("form", ["x + v", "v * x", "jnp.add(x, v)"])
def test_eager_float_op_with_int_beyond_int32(form, value):
  """Eager float32 + Python int beyond int32 (x64 off): JAX raises OverflowError (the int
  is an argument of a jitted computation); pyjax's eager weak-scalar path converted it to
  float32 silently (the jit path already raised)."""
  jax = pytest.importorskip("jax")

  def f(mods):
    m = mods.numpy
    x = m.ones(3, m.float32)
    return eval(form, {"x": x, "v": value, "jnp": m})
  assert _outcome(pyjax, f) == _outcome(jax, f)


def test_eager_float_op_with_int_beyond_int32_without_jax():
  with pytest.raises(OverflowError, match="argument path is y"):
    jnp.ones(3) + 2**40
  assert (jnp.ones(3) + (2**31 - 1)).dtype == jnp.float32


@pytest.mark.parametrize("name", ["add", "multiply", "bitwise_and", "maximum", "equal",
                                  "where"])
def test_eager_ops_on_weak_bools(name):
  """isnan of a weakly typed float is a weak bool (as in JAX); a binary op on two weak bools
  promotes to strong bool.  pyjax's eager fast paths (two Arrays of one dtype and weak
  type: nothing to convert) kept the result weak; jit did not.  Found by the eager tier
  (seed 716185: ``add(isnan(3 / b), isnan(3 / b))``)."""
  jax = pytest.importorskip("jax")

  def f(mods):
    m = mods.numpy
    w = m.isnan(3 / m.asarray(True))
    fn = (lambda a, b: m.where(a, a, b)) if name == "where" else getattr(m, name)
    r = fn(w, w)
    return r.dtype, r.weak_type, w.weak_type
  assert f(pyjax) == f(jax)


_INT_EDGE_OPS = ["div", "rem", "floor_divide", "remainder", "fmod", "shift_left",
                 "shift_right_logical", "shift_right_arithmetic", "left_shift", "right_shift"]


@pytest.mark.parametrize("dt", ["int8", "int32", "uint16"])
def test_integer_division_and_shift_edges(dt):
  """x / 0, x % 0, INT_MIN / -1 and shifts by negative or >= bit-width amounts, with the
  divisors and shift amounts as arguments (a constant 0 divisor of lax.div crashes JAX's
  XLA constant folding with SIGFPE), eager and jitted on both tiers, against JAX."""
  jax = pytest.importorskip("jax")
  from pyjax._src.backends.cpu import executable
  info = np.iinfo(dt)
  lo = int(info.min) if info.min < 0 else 2
  x = np.array([0, 1, lo, int(info.max), 7, lo, -1 if info.min < 0 else 9, 5], dt)
  y = np.array([0, 0, 0, 0, 3, -1 if info.min < 0 else 1, 2, 3], dt)
  sh = np.array([-1, 0, 1, 7, 8, 16, 31, 33]).astype(dt)

  def fn(mods, name):   # lax's div, rem and shift_*; jnp's others
    f = getattr(mods.lax, name) if hasattr(mods.lax, name) else getattr(mods.numpy, name)
    return f, (sh if "shift" in name else y)
  for name in _INT_EDGE_OPS:
    f, b = fn(jax, name)
    want = np.asarray(jax.jit(f)(x, b))
    g, _ = fn(pyjax, name)
    for mode in ("off", "sync"):
      with executable.compile_mode_override(mode):
        np.testing.assert_array_equal(np.asarray(pyjax.jit(g)(x, b)), want, err_msg=name)
    np.testing.assert_array_equal(np.asarray(g(jnp.asarray(x), jnp.asarray(b))), want,
                                  err_msg=name)


_QUOTIENTS = {   # name -> (f(jnp), args)
    "scalar_into_1": (lambda m: lambda a, b: a / b,
                      (np.array([1.9127556], np.float32), np.float32(1.6075828))),
    "row_into_1x1": (lambda m: lambda a, b: a / b,
                     (np.array([[1.9127556]], np.float32), np.array([1.6075828], np.float32))),
    "broadcast_to_1": (lambda m: lambda a, b: a / m.broadcast_to(b, (1,)),
                       (np.array([1.9127556], np.float32), np.float32(1.6075828))),
    "bool_by_zero_into_1": (lambda m: m.divide, (np.array([False]), np.float32(0))),
    "scalar_into_2": (lambda m: lambda a, b: a / b,   # a real broadcast: XLA's reciprocal
                      (np.array([1.9127556, 3.0], np.float32), np.float32(1.6075828))),
    "bool_by_zero_into_2": (lambda m: m.divide, (np.array([False, True]), np.float32(0))),
}


@pytest.mark.parametrize("name", sorted(_QUOTIENTS))
def test_jit_quotient_by_a_divisor_of_the_results_size(name):
  """XLA computes a / broadcast(b) as a * (1 / b) only when the broadcast adds elements: a
  scalar divisor of a one-element result is reshaped, and divided by (1.9127556 / 1.6075828
  and its reciprocal product differ by an ulp; [False] / 0. is NaN, not the select's 0).
  pyjax's jit took every shape change for a broadcast (found by the fuzzer, seed 717138)."""
  jax = pytest.importorskip("jax")
  from pyjax._src.backends.cpu import executable
  mk, args = _QUOTIENTS[name]
  want = np.asarray(jax.jit(mk(jax.numpy))(*args))
  for mode in ("off", "sync"):
    with executable.compile_mode_override(mode):
      got = np.asarray(pyjax.jit(mk(jnp))(*args))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=mode)


def test_fuzz_eager_tier_extended_ops():
  """The eager tier (op by op, no jit) on programs that draw the integer edge-case ops."""
  pytest.importorskip("jax")
  tally, bad = fuzz_vs_jax.campaign(4, seed=716900, tiers=("eager",), batch=4, extended=True)
  assert not bad, "\n\n".join(f"[{m.tier}] v{m.value} = {m.op}: {m.kind}: {m.detail}"
                              for m in bad[:5])
  assert tally["programs"] == 4 and tally["harness errors"] == 0, dict(tally)


_EXTREMAL_CASES = [([-3, 1], "clip"), ([1, 1], None), ([0, 7], "drop"), ([0, 7], "clip"),
                   ([-9, 2], "clip")]


@pytest.mark.parametrize("how", ["max", "min"])
def test_scatter_extremal_gradient_as_jax(how):
  """The derivative of ``x.at[i].max(u)`` / ``.min``: JAX passes the operand's tangent
  through every element no update addresses (a NaN there too) and averages the tied
  winners' tangents where updates land.  pyjax masked the whole operand by ``x == out``,
  zeroing the cotangent of every unaddressed NaN (found by the grad tier, seed 71).  With
  ``mode='clip'`` and an out-of-bounds index JAX's rule counts no update where the window
  lands (-inf/NaN there); pyjax gives the same."""
  jax = pytest.importorskip("jax")
  nan = np.nan
  x = np.array([[3.0, nan, nan], [nan, 1, 2], [3.0, 3.0, nan], [3.0, 3.0, 3.0]], np.float32)
  u = np.array([[3.0, 1, 5], [3, 1, nan]], np.float32)
  ct = np.random.RandomState(0).randn(4, 3).astype(np.float32)

  def grads(lib, idx, mode):
    ii = np.array(idx, np.int32)
    g = lambda x, u: getattr(x.at[ii], how)(u, mode=mode)
    return [np.asarray(v) for v in lib.jit(lambda x, u: lib.vjp(g, x, u)[1](ct))(x, u)]
  for idx, mode in _EXTREMAL_CASES:
    for a, b in zip(grads(pyjax, idx, mode), grads(jax, idx, mode)):
      np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=f"{idx} {mode}")


@pytest.mark.parametrize("how", ["max", "min"])
def test_scatter_extremal_signed_zeros(how):
  """``x.at[i].max(u)`` orders -0.0 below +0.0 as ``lax.max`` does: max(+0, -0) is +0
  whichever is the operand, min is -0.  pyjax's eager scatter (and so jit's NumPy tier)
  took NumPy's ``maximum.at``, which keeps either zero (found by the vmap tier, seed 176)."""
  jax = pytest.importorskip("jax")
  from pyjax._src.backends.cpu import executable
  rng = np.random.RandomState(0)
  x = rng.choice([0.0, -0.0, 1.0, -1.0], size=(4, 3)).astype(np.float32)
  u = rng.choice([0.0, -0.0, -2.0], size=(6, 3)).astype(np.float32)
  ii = np.array([0, 1, 1, 2, 2, 2], np.int32)
  f = lambda x, u: getattr(x.at[ii], how)(u)
  want = np.asarray(jax.jit(f)(x, u)).view(np.uint32)
  got = [np.asarray(f(jnp.asarray(x), jnp.asarray(u)))]
  for mode in ("off", "sync"):
    with executable.compile_mode_override(mode):
      got.append(np.asarray(pyjax.jit(f)(x, u)))
  for g in got:
    np.testing.assert_array_equal(g.view(np.uint32), want)


def test_complex64_expm1_near_minus_one():
  """complex64 ``expm1`` where its real part is near -1: NumPy's formula (expm1(a) cos(b)
  - 2 sin(b/2)^2 in complex64) was 1-2 ulps off, within the forward tolerance, but the
  derivative (expm1(x) + 1) cancels it to a 1e-5 relative error; JAX's is right (found by
  the grad tier, seed 476).  pyjax computes complex64 expm1 in complex128."""
  jax = pytest.importorskip("jax")
  from pyjax._src.backends.cpu import executable
  x = np.array([-3.6989398 + 2.4064293j, -4.0 - 3.0j], np.complex64)
  exact = np.exp(x.astype(np.complex128))
  close = lambda v: np.abs(v - exact) <= 7e-8   # expm1 rounded near -1: 0.5 ulp of 1
  assert close(np.asarray(jax.jit(lambda x: jax.numpy.expm1(x) + 1)(x))).all()
  grad = lambda lib: lib.jit(lambda x: lib.grad(lambda v: lib.numpy.expm1(v).real.sum())(x))
  want = np.asarray(grad(jax)(x))
  for mode in ("off", "sync"):
    with executable.compile_mode_override(mode):
      got = np.asarray(pyjax.jit(lambda x: jnp.expm1(x) + 1)(x))
      g = np.asarray(grad(pyjax)(x))
    assert close(got).all(), got
    np.testing.assert_allclose(g, want, rtol=2e-6)


def test_callback_error_traceback_is_formatted_without_parsing_source(monkeypatch, caplog):
  """A failing pure_callback in a jitted program runs on a pyjax stream thread, which
  formats the traceback (the JaxRuntimeError's text, the logged record).  CPython 3.11
  places traceback carets with ``ast.parse``, whose recursion counter all threads share:
  parsing there raced with the user's thread (pytest rewriting or reporting) and raised
  "SystemError: AST constructor recursion depth mismatch" now and then.  The callback may
  run on the stream thread or on the waiting one, so no parse may happen at all; the text
  still carries the frames and the error."""
  import ast
  import logging
  import threading
  parsed_on = []
  real_parse = ast.parse

  def spy(*args, **kwargs):
    parsed_on.append(threading.current_thread().name)
    return real_parse(*args, **kwargs)
  monkeypatch.setattr(ast, "parse", spy)

  def bad(x):
    return np.asarray(x) + undefined_name  # noqa: F821 -- the error under test

  f = pyjax.jit(lambda x: pyjax.pure_callback(
      bad, pyjax.ShapeDtypeStruct((3,), jnp.float32), x))
  with caplog.at_level(logging.ERROR, logger="pyjax._src.callback"):
    with pytest.raises(pyjax.errors.JaxRuntimeError) as info:
      f(jnp.ones(3)).block_until_ready()
  text = str(info.value)
  assert text.startswith("INTERNAL: CpuCallback error calling callback: Traceback")
  assert "in bad\n" in text and "NameError: name 'undefined_name' is not defined" in text
  assert "jax.pure_callback failed" in caplog.text and "in bad\n" in caplog.text
  assert parsed_on == []


def _nan_cases(m):
  lx = m.lax
  x = m.numpy.array([-2.0, -3.0, -0.5, 0.0, float("inf")], m.numpy.float32)
  y = m.numpy.array([0.5, 1.7, -2.5, 0.0, 1.0], m.numpy.float32)
  return lambda x, y: [lx.pow(x[:3], y[:3]), lx.sqrt(x[:3]), x[3:4] / y[3:4],
                       x[4:] - x[4:]], (x, y)


def _bits32(outs):
  return [np.asarray(o).view(np.uint32).tolist() for o in outs]


def test_invalid_operation_nan_bits_same_on_every_tier_and_as_jax():
  """The NaN a float32 domain error gives, bit for bit, eagerly, on jit's NumPy tier and
  natively: ``pow`` of a negative base and a non-integer exponent or'ed the magnitude's
  bits into a NaN exponent (0x7FF504F3 for (-2) ** 0.5: a payload that depended on the
  operands); it is XLA's default NaN 0xFFC00000 now, as sqrt(-x), 0/0 and inf - inf."""
  from pyjax._src.backends.cpu import executable
  f, args = _nan_cases(pyjax)
  got = {"eager": _bits32(f(*args))}
  for mode in ("off", "sync"):
    pyjax.clear_caches()   # a cached executable keeps the tier it started on
    with executable.compile_mode_override(mode):
      got[mode] = _bits32(pyjax.jit(lambda *a: f(*a))(*args))
  assert got["eager"] == got["off"] == got["sync"]
  assert got["eager"] == [[0xFFC00000] * 3, [0xFFC00000] * 3, [0xFFC00000], [0xFFC00000]]
  jax = pytest.importorskip("jax")
  jf, jargs = _nan_cases(jax)
  assert _bits32(jf(*jargs)) == got["eager"]


def test_floating_point_warnings_stay_silenced_after_an_import_inside_catch_warnings():
  """XLA never warns on overflow or invalid values; pyjax's NumPy implementations silence
  NumPy's warnings by a filter installed at import.  Imported inside a
  ``warnings.catch_warnings`` block (pytest collects and configures inside one), the
  filter went when the block closed, and eager and jitted operations warned ever after
  ("overflow encountered in exp", "invalid value encountered in divide")."""
  import subprocess
  import sys
  code = (
      "import warnings\n"
      "with warnings.catch_warnings():\n"
      "  import pyjax, pyjax.numpy as jnp\n"
      "with warnings.catch_warnings(record=True) as w:\n"
      "  x = jnp.array([1000.0, 0.0, -1.0])\n"
      "  jnp.exp(x); x / 0.0; jnp.log(x)\n"
      "  pyjax.jit(lambda x: jnp.exp(x) * x / 0.0)(x).block_until_ready()\n"
      "print(sorted({str(m.message) for m in w if m.category is RuntimeWarning}))\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**__import__("os").environ, "PYJAX_COMPILE": "off"})
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "[]"


def test_jitted_numpy_plans_never_warn_on_floating_point_like_xla():
  """A jitted call's hit path does not re-check the warnings filters, so inside a
  ``catch_warnings`` block whose filter shows every warning (pytest.warns; pytest's
  per-test block under ``-W always``) the NumPy tier's plans warned "invalid value
  encountered in subtract" from ``<pyjax jit _bessel_jn>``; JAX never warns on inf/nan
  arithmetic.  Plans now run under ``np.errstate``; also with warnings made errors."""
  import warnings
  import pyjax.scipy.special as sp
  from pyjax._src.backends.cpu import executable
  progs = [lambda x: sp.bessel_jn(x * 0, v=2), lambda x: jnp.log(x * 0),
           lambda x: (x * 0) / (x * 0), lambda x: jnp.sqrt(-x) + jnp.exp(x * 1e3)]
  x = jnp.ones(3, jnp.float32)
  with executable.compile_mode_override("off"):
    fs = [pyjax.jit(f) for f in progs]
    want = [np.asarray(f(x)) for f in fs]   # (compiled and run once: the hit path next)
    for action in ("always", "error"):
      with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter(action)
        got = [np.asarray(f(x)) for f in fs]
      assert [str(r.message) for r in rec] == []
      for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
  assert np.isnan(want[0]).all() and np.isneginf(want[1]).all() and np.isnan(want[2]).all()
