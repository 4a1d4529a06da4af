"""jax.debug.print / jax.debug.callback / jax.pure_callback / io_callback: run-time
behaviour under jit, vmap and grad, printing format, jaxpr text (against real JAX)."""
import logging

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import errors
from pyjax.experimental import io_callback

SDS = pyjax.ShapeDtypeStruct


def _jax():
  return pytest.importorskip("jax")


def _run_both(capsys, prog):
  """Run ``prog(jax_module, jnp_module)`` with pyjax and JAX; return both stdouts."""
  jax = _jax()
  import jax.numpy as jjnp
  prog(pyjax, jnp)
  ours = capsys.readouterr().out
  prog(jax, jjnp)
  theirs = capsys.readouterr().out
  return ours, theirs


# --- debug.print ---------------------------------------------------------------------------
def test_print_eager_and_formats(capsys):
  x = jnp.float32(1.5)
  pyjax.debug.print("x: {}", x)
  pyjax.debug.print("{a} and {b:.2f} {c!r}", a=jnp.arange(3), b=x, c=jnp.int32(2))
  pyjax.debug.print("{0} {0}", 7)
  pyjax.debug.print("static {} {}", "str", None)
  out = capsys.readouterr().out.splitlines()
  assert out == ["x: 1.5", "[0 1 2] and 1.50 Array(2, dtype=int32)", "7 7", "static str None"]


def test_print_runs_at_run_time_under_jit(capsys):
  traces = []

  @pyjax.jit
  def f(x):
    traces.append(1)
    pyjax.debug.print("x = {x}", x=x)
    return x * 2

  f(jnp.arange(3.))
  f(jnp.arange(3.) + 1)
  assert len(traces) == 1
  assert capsys.readouterr().out.splitlines() == ["x = [0. 1. 2.]", "x = [1. 2. 3.]"]
  out = f(jnp.ones(2))
  np.testing.assert_array_equal(np.asarray(out), [2., 2.])
  assert capsys.readouterr().out == "x = [1. 1.]\n"


def test_print_is_not_dropped_as_dead_code(capsys):
  @pyjax.jit
  def f(x):
    y = x + 1
    pyjax.debug.print("y={}", y)   # y is otherwise unused
    return x
  f(1.0)
  assert capsys.readouterr().out == "y=2.0\n"


def test_print_under_grad_prints_primals_once(capsys):
  def f(x):
    pyjax.debug.print("g {}", x)
    return x * x
  assert float(pyjax.grad(f)(3.0)) == 6.0
  assert capsys.readouterr().out == "g 3.0\n"
  pyjax.jvp(f, (2.0,), (1.0,))
  assert capsys.readouterr().out == "g 2.0\n"
  pyjax.jit(pyjax.grad(f))(4.0)
  assert capsys.readouterr().out == "g 4.0\n"


def test_print_under_vmap_once_per_element(capsys):
  def f(x, y):
    pyjax.debug.print("x={} y={}", x, y)
    return x + y
  pyjax.vmap(f, in_axes=(0, None))(jnp.arange(6.).reshape(2, 3), 5.0)
  assert capsys.readouterr().out.splitlines() == ["x=[0. 1. 2.] y=5.0", "x=[3. 4. 5.] y=5.0"]
  pyjax.vmap(f, in_axes=(1, None))(jnp.arange(4.).reshape(2, 2), 1.0)
  assert capsys.readouterr().out.splitlines() == ["x=[0. 2.] y=1.0", "x=[1. 3.] y=1.0"]


def test_print_two_call_form_and_no_placeholders(capsys):
  pyjax.debug.print(ordered=True)("two {}", 1)
  pyjax.debug.print("plain", 1, 2, skip_format_check=True)
  assert capsys.readouterr().out.splitlines() == ["two 1", "plain 1 2"]
  with pytest.raises(TypeError, match="two-call form"):
    pyjax.debug.print(ordered=True, x=1)


def test_print_format_errors():
  with pytest.raises(ValueError, match=r"Unused positional arguments to `jax.debug.print`"):
    pyjax.debug.print("no placeholders", 1)
  with pytest.raises(ValueError, match=r"Unused keyword arguments to `jax.debug.print`: \['y'\]"
                                       r"\. You may be passing an f-string"):
    pyjax.debug.print("{x}", x=1, y=2)
  with pytest.raises(IndexError):
    pyjax.debug.print("{} {}", 1)


def test_print_uses_numpy_printoptions(capsys):
  with np.printoptions(precision=2):
    pyjax.jit(lambda x: pyjax.debug.print("{}", x))(jnp.array([1 / 3, 2 / 3]))
  assert capsys.readouterr().out == "[0.33 0.67]\n"


def test_debug_log(caplog):
  with caplog.at_level(logging.INFO, logger="pyjax._src.debugging"):
    pyjax.jit(lambda x: pyjax.debug.log("logged {}", x))(2.0)
  recs = [r for r in caplog.records if r.name == "pyjax._src.debugging"]
  assert [r.getMessage() for r in recs] == ["logged 2.0"]
  assert recs[0].pathname == __file__


def test_print_matches_jax_output(capsys):
  def prog(jax, jnp):
    def f(x, y):
      jax.debug.print("{} {y} {z:.3f}", x, y=y, z=x[0], ordered=True)
      jax.debug.print("static {} and {}", "text", 3, ordered=True)   # unordered ones may
      return x                                                          # move in JAX
    jax.jit(f)(jnp.arange(3.) / 3, jnp.int32(4))
    jax.vmap(f, in_axes=(0, None))(jnp.arange(4.).reshape(2, 2), 1)
    jax.grad(lambda x: f(x, 2)[0])(jnp.ones(2))
  ours, theirs = _run_both(capsys, prog)
  assert ours == theirs


def test_print_jaxpr_matches_jax():
  jax = _jax()

  def prog(jax):
    def f(x):
      jax.debug.print("s {} {a}", "hi", a=None)
      jax.debug.print("o {}", x, ordered=True)
      jax.debug.print("x: {x} {y}", x=x, y=2)
      return x * 2
    return [str(jax.make_jaxpr(f)(1.0)), str(jax.make_jaxpr(jax.jit(f))(1.0)),
            str(jax.make_jaxpr(jax.grad(f))(1.0)), str(jax.make_jaxpr(jax.vmap(f))(np.ones(2, np.float32)))]
  for ours, theirs in zip(prog(pyjax), prog(jax)):
    assert ours == theirs


def test_print_effects_in_jaxpr():
  jaxpr = pyjax.make_jaxpr(lambda x: pyjax.debug.print("{}", x, ordered=True))(1.0)
  assert {str(e) for e in jaxpr.effects} == {"OrderedDebug"}
  jaxpr = pyjax.make_jaxpr(pyjax.jit(lambda x: pyjax.debug.print("{}", x)))(1.0)
  assert {str(e) for e in jaxpr.effects} == {"Debug"}
  assert {str(e) for e in jaxpr.eqns[0].effects} == {"Debug"}


# --- debug.callback ------------------------------------------------------------------------
def test_debug_callback_receives_arrays():
  seen = []

  def cb(*args, **kwargs):
    seen.append([(type(a).__name__, a.dtype, a.weak_type) for a in args] +
                sorted((k, v) for k, v in kwargs.items()))

  def f(x):
    pyjax.debug.callback(cb, x, 1.0, tag="t")
    return x
  f(2.0)
  pyjax.jit(f)(2.0)
  assert seen[0] == [("ArrayImpl", np.float32, True), ("ArrayImpl", np.float32, True),
                     ("tag", "t")]
  assert seen[1] == [("ArrayImpl", np.float32, False), ("ArrayImpl", np.float32, False),
                     ("tag", "t")]


def test_debug_callback_under_transformations():
  seen = []
  cb = lambda x: seen.append(np.asarray(x).tolist())  # noqa: E731

  def f(x):
    pyjax.debug.callback(cb, x)
    return jnp.sum(x ** 2)
  pyjax.grad(f)(jnp.arange(2.))
  pyjax.vmap(f)(jnp.arange(4.).reshape(2, 2))
  pyjax.jit(pyjax.vmap(pyjax.grad(f)))(jnp.ones((2, 2)))
  assert seen == [[0., 1.], [0., 1.], [2., 3.], [1., 1.], [1., 1.]]


def test_debug_callback_errors():
  with pytest.raises(TypeError, match="first argument to jax.debug.callback must be callable"):
    pyjax.debug.callback(3, 1)

  def bad(x):
    raise RuntimeError("boom")
  with pytest.raises(RuntimeError, match="boom"):
    pyjax.debug.callback(bad, 1.0)


def test_debug_callback_jaxpr_matches_jax():
  jax = _jax()

  def prog(jax):
    def f(x):
      jax.debug.callback(lambda *a: None, x, 1.0)
      return x
    return str(jax.make_jaxpr(f)(1.0))
  assert prog(pyjax) == prog(jax)


# --- pure_callback -------------------------------------------------------------------------
def test_pure_callback_values_and_structure():
  def cb(x, y):
    assert type(x).__name__ == "ArrayImpl" and x.weak_type is False
    return np.sin(np.asarray(x)) * np.asarray(y)

  f = lambda x: pyjax.pure_callback(cb, SDS(x.shape, x.dtype), x, 2)  # noqa: E731
  x = jnp.arange(3.)
  np.testing.assert_allclose(np.asarray(f(x)), np.sin(np.arange(3.)) * 2, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(pyjax.jit(f)(x)), np.sin(np.arange(3.)) * 2,
                             rtol=1e-6)
  out = pyjax.pure_callback(lambda v: {"a": v, "b": [v * 2]},
                            {"a": SDS((), np.float32), "b": [SDS((), np.float32)]}, 1.0)
  assert float(out["a"]) == 1.0 and float(out["b"][0]) == 2.0
  assert out["a"].dtype == np.float32 and not out["a"].weak_type


def test_pure_callback_result_checks():
  for bad, msg in [(lambda x: np.ones(3, np.float32),
                    "Incorrect output shape for return value #0: Expected: (), Actual: (3,)"),
                   (lambda x: np.ones((), np.int32),
                    "Incorrect output dtype for return value #0: Expected: float32, Actual: int32"),
                   (lambda x: (x, x),
                    "Mismatched number of outputs from callback. Expected: 1, Actual: 2")]:
    for wrap in (lambda f: f, pyjax.jit):
      with pytest.raises(errors.JaxRuntimeError) as e:
        wrap(lambda x: pyjax.pure_callback(bad, SDS((), np.float32), x))(1.0)
      text = str(e.value)
      assert text.startswith("INTERNAL: CpuCallback error calling callback:")
      assert text.rstrip().endswith(msg)
  # float64 results are fine when x64 is off (they canonicalize to float32)
  assert pyjax.pure_callback(lambda x: np.float64(2.5), SDS((), np.float32), 1.0) == 2.5
  with pytest.raises(ValueError, match="cannot specify 64-bit types"):
    pyjax.pure_callback(lambda x: x, SDS((), np.float64), 1.0)
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    pyjax.pure_callback(lambda x: x, SDS((), np.float32), 1.0, vmap_method="bad")


def test_pure_callback_not_differentiable():
  f = lambda x: pyjax.pure_callback(lambda v: v, SDS((), np.float32), x)  # noqa: E731
  with pytest.raises(ValueError, match="Pure callbacks do not support JVP. Please use "
                                       "`jax.custom_jvp`"):
    pyjax.grad(f)(1.0)


def test_pure_callback_with_custom_jvp():
  @pyjax.custom_jvp
  def f(x):
    return pyjax.pure_callback(lambda v: np.sin(v), SDS(x.shape, x.dtype), x,
                               vmap_method="expand_dims")

  @f.defjvp
  def f_jvp(p, t):
    return f(p[0]), jnp.cos(p[0]) * t[0]
  x = jnp.linspace(0., 1., 4)
  np.testing.assert_allclose(np.asarray(pyjax.vmap(pyjax.grad(f))(x)), np.cos(np.asarray(x)),
                             rtol=1e-6)


def test_pure_callback_unused_result_is_dropped():
  calls = []

  def cb(x):
    calls.append(1)
    return x

  @pyjax.jit
  def f(x):
    pyjax.pure_callback(cb, SDS((), np.float32), x)
    return x + 1
  f(1.0)
  assert calls == []


@pytest.mark.parametrize("method,shapes", [
    ("sequential", [((), ()), ((), ()), ((), ())]),
    ("sequential_unrolled", [((), ()), ((), ()), ((), ())]),
    ("expand_dims", [((3,), (1,))]),
    ("broadcast_all", [((3,), (3,))]),
    ("legacy_vectorized", [((3,), ())]),
])
def test_pure_callback_vmap_methods(method, shapes):
  seen = []

  def cb(x, y):
    seen.append((x.shape, y.shape))
    return np.asarray(x) * 2 + np.asarray(y)

  f = lambda x, y: pyjax.pure_callback(cb, SDS((), np.float32), x, y,  # noqa: E731
                                       vmap_method=method)
  out = pyjax.vmap(f, in_axes=(0, None))(jnp.arange(3.), 1.0)
  np.testing.assert_array_equal(np.asarray(out), [1., 3., 5.])
  assert seen == shapes


def test_pure_callback_vmap_needs_method():
  f = lambda x: pyjax.pure_callback(lambda v: v, SDS((), np.float32), x)  # noqa: E731
  with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
    pyjax.vmap(f)(jnp.arange(3.))


def test_pure_callback_jaxpr_matches_jax():
  jax = _jax()

  def prog(jax):
    def cb(x, y):
      return x
    f = lambda x, y: jax.pure_callback(cb, jax.ShapeDtypeStruct((), np.float32), x, y,  # noqa: E731
                                       vmap_method="expand_dims")
    out = [str(jax.make_jaxpr(f)(1.0, 2)),
           str(jax.make_jaxpr(jax.vmap(f, in_axes=(0, None)))(np.ones(3, np.float32), 1.0))]
    for m in ["sequential", "sequential_unrolled", "broadcast_all", "legacy_vectorized"]:
      g = lambda x, y: jax.pure_callback(cb, jax.ShapeDtypeStruct((), np.float32), x, y,  # noqa: E731
                                         vmap_method=m)
      out.append(str(jax.make_jaxpr(jax.vmap(g, in_axes=(0, None)))(np.ones(3, np.float32), 1.0)))
    return out
  for a, b in zip(prog(pyjax), prog(jax)):
    assert a == b


# --- io_callback ----------------------------------------------------------------------------
def test_io_callback_runs_even_if_unused():
  calls = []

  def cb(x):
    calls.append(float(x))
    return np.float32(x) + 1

  @pyjax.jit
  def f(x):
    io_callback(cb, SDS((), np.float32), x)
    return x
  f(1.0)
  f(2.0)
  assert calls == [1.0, 2.0]
  out = pyjax.vmap(lambda x: io_callback(cb, SDS((), np.float32), x))(jnp.arange(3.))
  np.testing.assert_array_equal(np.asarray(out), [1., 2., 3.])
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback."):
    pyjax.vmap(lambda x: io_callback(cb, SDS((), np.float32), x, ordered=True))(jnp.ones(2))
  with pytest.raises(ValueError, match="IO callbacks do not support JVP."):
    pyjax.grad(lambda x: io_callback(cb, SDS((), np.float32), x))(1.0)
  jaxpr = pyjax.make_jaxpr(lambda x: io_callback(cb, SDS((), np.float32), x, ordered=True))(1.0)
  assert {str(e) for e in jaxpr.effects} == {"OrderedIO"}


def test_io_callback_jaxpr_matches_jax():
  jax = _jax()
  from jax.experimental import io_callback as jax_io_callback

  def prog(jax, io):
    def cb(x):
      return x
    return [str(jax.make_jaxpr(lambda x: io(cb, jax.ShapeDtypeStruct((), np.float32), x,
                                            ordered=True))(1.0)),
            str(jax.make_jaxpr(jax.vmap(lambda x: io(cb, jax.ShapeDtypeStruct((), np.float32),
                                                     x)))(np.ones(3, np.float32)))]
  assert prog(pyjax, io_callback) == prog(jax, jax_io_callback)
