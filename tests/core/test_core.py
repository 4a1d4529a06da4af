"""Core: primitives through the current interpreter, the jaxpr IR, its text and evaluator."""
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core, dtypes, errors
from pyjax._src.avals import ShapedArray

f32 = dtypes.float32


def trace(fun, *avals):
  return core.trace_to_jaxpr(lambda *a: list(fun(*a)), list(avals))


def test_jaxpr_text_one_line_and_multi_line():
  j = trace(lambda x: (x + 1,), ShapedArray((), f32, True))
  assert str(j) == "{ lambda ; a:f32[]. let b:f32[] = add a 1.0:f32[] in (b,) }"
  j = trace(lambda x: (x + 1 + 1,), ShapedArray((), f32, True))
  assert str(j) == ("{ lambda ; a:f32[]. let\n"
                    "    b:f32[] = add a 1.0:f32[]\n"
                    "    c:f32[] = add b 1.0:f32[]\n"
                    "  in (c,) }")
  j = trace(lambda x: (x,), ShapedArray((), f32))
  assert str(j) == "{ lambda ; a:f32[]. let  in (a,) }"


def test_jaxpr_text_matches_jax(jax):
  fns = [
      lambda x: (jnp.sin(x) * jnp.cos(x).astype(jnp.int8),),
      lambda x: (x > 2, x * 2, lax.convert_element_type(x, jnp.int8)),
      lambda x: (lax.round(x),),
      lambda x: (jnp.exp2(x), lax.integer_pow(x, 3), lax.clamp(0., x, 1.)),
  ]
  import jax.numpy as jjnp  # noqa: F401
  for f in fns:
    ours = str(trace(f, ShapedArray((2, 3), f32)))
    ref = str(jax.make_jaxpr(f.__code__ and (lambda x, f=f: _with_jax(f, x)))(np.ones((2, 3), np.float32)))
    assert ours == ref


def _with_jax(f, x):
  """Run f with pyjax's jnp/lax names replaced by JAX's (same program, other library)."""
  import jax.numpy as jjnp
  from jax import lax as jlax
  g = type(f)(f.__code__, {**f.__globals__, "jnp": jjnp, "lax": jlax}, None, f.__defaults__, f.__closure__)
  return g(x)


def test_var_names_past_z():
  def f(x):
    acc = x
    for _ in range(30):
      acc = acc * 2.0
    return (acc,)
  text = str(trace(f, ShapedArray((), f32)))
  assert "ba:f32[] = mul z 2.0:f32[]" in text


def test_constvars_for_nonscalar_constants():
  c = jnp.asarray(np.ones(3, np.float32))
  j = trace(lambda x: (c * x,), ShapedArray((), f32))
  assert str(j) == "{ lambda a:f32[3]; b:f32[]. let c:f32[3] = mul a b in (c,) }"
  assert len(j.consts) == 1


def test_eval_jaxpr_roundtrip():
  def f(x, y):
    return (jnp.sin(x) * y + 1.0, x - y)
  j = trace(f, ShapedArray((3,), f32), ShapedArray((3,), f32))
  x = jnp.asarray(np.linspace(0, 1, 3, dtype=np.float32))
  y = jnp.asarray(np.arange(3, dtype=np.float32))
  outs = core.eval_jaxpr(j.jaxpr, j.consts, x, y)
  for o, r in zip(outs, f(x, y)):
    np.testing.assert_array_equal(o, r)
    assert o.dtype == r.dtype


def test_tracer_errors_and_escape():
  leaked = []

  def f(x):
    leaked.append(x)
    with pytest.raises(errors.TracerBoolConversionError):
      bool(x > 0)
    with pytest.raises(errors.TracerArrayConversionError):
      np.asarray(x)
    with pytest.raises(errors.TracerIntegerConversionError):
      [1, 2][x]
    return (x,)
  trace(f, ShapedArray((), dtypes.int32))
  with pytest.raises(errors.UnexpectedTracerError, match="Encountered an unexpected tracer"):
    leaked[0] + 1


def test_lax_is_strict():
  with pytest.raises(TypeError, match=r"lax.add requires arguments to have the same dtypes, got int32, float32"):
    lax.add(42, 42.0)
  out = lax.add(1, 2)
  assert out.weak_type and out.dtype == np.int32


def test_tracer_error_messages_match_jax(jax):
  import pyjax

  def run(mod, f, x):
    try:
      mod.jit(f)(x)
    except Exception as e:  # noqa: BLE001
      return type(e).__name__, str(e).split("\n")[0]
    return None

  cases = [(lambda x: bool(x), np.float32(1)), (lambda x: int(x), np.float32(1)),
           (lambda x: [1, 2][x], np.float32(1)), (lambda x: [1, 2][x], np.int32(1)),
           (lambda x: np.asarray(x), np.float32(1))]
  for f, x in cases:
    assert run(pyjax, f, x) == run(jax, f, x)


def test_shaped_array_takes_scalar_types_and_names_as_dtypes():
  """As JAX's: ShapedArray((4,), jnp.float32) holds the dtype float32 (it kept the scalar
  type, and printing it raised AttributeError)."""
  for d in (jnp.float32, np.float32, "float32"):
    a = ShapedArray((4,), d)
    assert a.dtype == np.dtype("float32") and isinstance(a.dtype, np.dtype)
    assert str(a) == "float32[4]" and a == ShapedArray((4,), np.dtype("float32"))
  assert str(ShapedArray((2,), "bfloat16")) == "bfloat16[2]"
  jax = pytest.importorskip("jax")
  assert str(jax.core.ShapedArray((4,), jax.numpy.float32)) == "float32[4]"
