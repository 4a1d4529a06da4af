"""jit: results, caching and retracing, static arguments, donation, device placement,
disable_jit, logging, the ahead-of-time stages, and the cost of a cache hit."""
import functools
import gc
import logging
import statistics
import timeit
import warnings
import weakref

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import api, errors
from pyjax._src.api import jit

f32 = np.float32
DTYPES = [jnp.bfloat16, np.float16, np.float32, np.int8, np.uint8, np.int32, np.bool_]


def _assert_same(ours, ref):
  assert ours.shape == ref.shape
  assert ours.dtype == ref.dtype
  assert ours.weak_type == ref.weak_type
  np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))


# --- results --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(3,), (0, 2), (1, 1), ()])
def test_jit_equals_eager(dtype, shape):
  x = jnp.asarray(np.arange(int(np.prod(shape)), dtype=f32).reshape(shape).astype(dtype))

  def f(x):
    if x.dtype == np.bool_:
      return jnp.logical_not(x), x & x
    return x * 2 + 1, -x if x.dtype.kind != "u" else x + x
  for o, r in zip(jit(f)(x), f(x)):
    _assert_same(o, r)


def test_weak_types_and_scalars(jax):
  import jax.numpy as jjnp
  cases = [
      (lambda np_: lambda x: x, (1.,)), (lambda np_: lambda x: x, (np.float64(1.),)),
      (lambda np_: lambda x: (x, 2), (np.arange(3),)),
      (lambda np_: lambda x, y: x * y, (np.ones(2, f32), 2)),
      (lambda np_: lambda x: x + 1, (3,)), (lambda np_: lambda x: x + 1, (True,)),
      (lambda np_: lambda x: x.astype(np_.bfloat16) * 2.5, (np.ones(2, f32),)),
      (lambda np_: lambda x: np_.sin(x) > 0, (np.ones((0, 2), np.float16),)),
  ]
  for mk, args in cases:
    ours = jit(mk(jnp))(*args)
    ref = jax.jit(mk(jjnp))(*args)
    for o, r in zip(pyjax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
      assert o.dtype == r.dtype and o.weak_type == r.weak_type and o.shape == r.shape
      np.testing.assert_array_equal(np.asarray(o), np.asarray(r))


def test_pytrees_in_and_out_and_kwargs():
  @jit
  def f(d, t, *, scale):
    return {"s": d["a"] + d["b"] * scale, "t": (t[0], [t[1] * 2])}, None
  out, none = f({"a": jnp.ones(2), "b": 2.}, (1, jnp.arange(3)), scale=3.)
  assert none is None
  np.testing.assert_array_equal(out["s"], [7., 7.])
  assert out["t"][0].dtype == np.int32 and out["t"][0].weak_type
  np.testing.assert_array_equal(out["t"][1][0], [0, 2, 4])
  assert jit(lambda x: ())(1.) == ()


def test_decorator_forms_and_wrapping():
  @functools.partial(jit, static_argnums=1)
  def f(x, n):
    """doc of f"""
    return x * n
  assert f(jnp.ones(2), 3).tolist() == [3., 3.]
  assert f.__name__ == "f" and f.__doc__ == "doc of f" and f.__wrapped__ is not None
  assert repr(f).startswith("<PjitFunction of <function")

  @jit(static_argnames="n")
  def g(x, n=2):
    return x * n
  assert g(jnp.ones(2), n=4).tolist() == [4., 4.]
  assert g(jnp.ones(2)).tolist() == [2., 2.]
  with pytest.raises(TypeError, match="Expected a callable value, got 3"):
    jit(3)


def test_methods():
  class A:
    def __init__(self, k):
      self.k = k

    @functools.partial(jit, static_argnums=0)
    def m(self, x):
      return x * self.k

    def __hash__(self):
      return hash(self.k)

    def __eq__(self, other):
      return type(other) is A and other.k == self.k
  assert A(3).m(jnp.ones(2)).tolist() == [3., 3.]
  assert A(4).m(jnp.ones(2)).tolist() == [4., 4.]

  class B:
    @jit
    def m(self, x):
      return x
  with pytest.raises(TypeError, match="was passed to the function at path self"):
    B().m(1.)


def test_nested_jit_and_eval_jaxpr():
  inner = jit(lambda x: jnp.sin(x) * 2)
  outer = jit(lambda x: inner(x) + inner(x * 2))
  x = jnp.arange(3.)
  np.testing.assert_allclose(outer(x), np.sin(x) * 2 + np.sin(2 * x) * 2, rtol=1e-6)


def test_closure_over_outer_tracer():
  def outer(x):
    return jit(lambda y: y + x)(x * 2)
  np.testing.assert_array_equal(jit(outer)(jnp.arange(3.)), [0., 3., 6.])


def test_inline():
  f = jit(lambda x: x * 2, inline=True)
  assert "jit" not in str(api.make_jaxpr(lambda x: f(x) + 1)(1.))
  assert float(jit(lambda x: f(x) + 1)(1.)) == 3.0


# --- caching and retracing --------------------------------------------------------------------
def test_retrace_only_when_the_key_changes():
  count = []

  def f(x, y):
    count.append(1)
    return x * y
  jf = jit(f)
  jf(jnp.ones(3), 2.)
  jf(jnp.ones(3), 2.)
  jf(jnp.ones(3), 5.)                       # same types
  assert len(count) == 1
  jf(jnp.ones(4), 2.)                       # shape
  assert len(count) == 2
  jf(jnp.ones(3), 2)                        # int weak scalar
  assert len(count) == 3
  jf(jnp.ones(3), jnp.float32(2.))          # strong scalar
  assert len(count) == 4
  jf(jnp.ones(3, jnp.int8), 2.)             # dtype
  assert len(count) == 5
  jf(jnp.ones(3), y=2.)                     # kwargs change the structure
  assert len(count) == 6
  jit(f)(jnp.ones(3), 2.)                   # another wrapper of the same function
  assert len(count) == 6
  jf(pyjax.device_put(jnp.ones(3), pyjax.devices()[0]), 2.)   # committed: no retrace
  assert len(count) == 6
  jf(np.ones(3, np.float32), 2.)            # numpy input of the same type
  assert len(count) == 6


def test_retrace_on_config_change(x64):
  count = []

  def f(x):
    count.append(1)
    return x + 1
  jf = jit(f)
  jf(jnp.ones(2, jnp.float32))
  pyjax.config.update("jax_numpy_rank_promotion", "raise")
  try:
    jf(jnp.ones(2, jnp.float32))
  finally:
    pyjax.config.update("jax_numpy_rank_promotion", "allow")
  assert len(count) == 2


def test_trace_shared_between_staged_and_eager_calls():
  count = []

  def f(x):
    count.append(1)
    return x
  jf = jit(f)
  api.make_jaxpr(lambda x: jf(x) + jf(x))(1.)
  api.make_jaxpr(lambda x: jf(x) + jf(x))(1.)
  jf(1.)
  assert len(count) == 1


def test_closure_tracer_trace_cached_within_one_trace():
  count = []

  def outer(x):
    def inner(y):
      count.append(1)
      return y + x
    g = jit(inner)
    return g(x) + g(x * 2)
  text = str(api.make_jaxpr(outer)(1.))
  assert len(count) == 1
  assert text.startswith("let inner = { lambda ; a:f32[] b:f32[]. let c:f32[] = add b a in (c,) } in")


def test_dead_function_is_collected():
  def make():
    def f(x):
      return x + 1
    return f
  f = make()
  ref = weakref.ref(f)
  jf = jit(f)
  jf(jnp.ones(3))
  jf(1.)
  api.make_jaxpr(lambda x: jf(x))(1.)
  del f, jf
  gc.collect()
  assert ref() is None


def test_fast_path_scalars_and_statics():
  count = []

  def f(x, n, y):
    count.append(1)
    return x * n + y
  jf = jit(f, static_argnums=1)
  x = jnp.ones(2)
  for _ in range(3):
    assert jf(x, 3, 1.).tolist() == [4., 4.]
  assert len(count) == 1
  out = jf(x, 3, 2)                      # int instead of float: a new key
  assert out.tolist() == [5., 5.] and out.dtype == np.float32 and len(count) == 2
  assert jf(x, 3.0, 2).tolist() == [5., 5.] and len(count) == 3
  assert jf(x, True, 2).tolist() == [3., 3.] and len(count) == 4
  with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
    jf(x, [3], 1.)
  g = jit(lambda x: x)
  g(1)
  for _ in range(2):
    with pytest.raises(OverflowError, match="An overflow was encountered while parsing an "
                       "argument to a jitted computation, whose argument path is x. Got "
                       "<class 'int'> with value 1099511627776"):
      g(2 ** 40)


def test_cache_size_and_clear():
  jf = jit(lambda x: x + 1)
  jf(jnp.ones(2))
  jf(jnp.ones(3))
  assert jf._cache_size() == 2
  jf.clear_cache()
  assert jf._cache_size() == 0


# --- static arguments ---------------------------------------------------------------------
def test_static_args():
  count = []

  def f(x, n, *, mode="a"):
    count.append(1)
    return x * n if mode == "a" else x - n
  jf = jit(f, static_argnums=1, static_argnames="mode")
  assert jf(jnp.ones(2), 3).tolist() == [3., 3.]
  assert jf(jnp.ones(2), 3).tolist() == [3., 3.]
  assert len(count) == 1
  assert jf(jnp.ones(2), 4).tolist() == [4., 4.]
  assert jf(jnp.ones(2), 4.0).tolist() == [4., 4.]   # 4 and 4.0 are different keys
  assert len(count) == 3
  assert jf(jnp.ones(2), 4, mode="b").tolist() == [-3., -3.]
  assert len(count) == 4
  # static_argnames inferred from static_argnums and vice versa
  assert jit(f, static_argnums=1)(jnp.ones(2), n=5).tolist() == [5., 5.]
  assert jit(f, static_argnames="n")(jnp.ones(2), 6).tolist() == [6., 6.]
  assert jit(f, static_argnums=-1)(jnp.ones(2), 7).tolist() == [7., 7.]


def test_static_arg_errors(jax):
  def f(x, n):
    return x * n
  for ours_fn, ref_fn in [
      (lambda m: m.jit(f, static_argnums=1)(1., np.arange(3)), None),
      (lambda m: m.jit(f, static_argnums=1)(1., [1, 2]), None),
      (lambda m: m.jit(f, static_argnames="n")(1., n=[2]), None),
      (lambda m: m.jit(f, static_argnums=3), None),
      (lambda m: m.jit(f, static_argnames="m"), None),
      (lambda m: m.jit(f, donate_argnums=1, static_argnums=1), None),
      (lambda m: m.jit(f, donate_argnums=5), None),
      (lambda m: m.jit(f)(1., "a"), None),
      (lambda m: m.jit(f)(1., {"a": "s"}), None),
      (lambda m: m.jit(lambda x: "a")(1.), None),
      (lambda m: m.jit(lambda x: (x, "a"))(1.), None),
      (lambda m: m.jit(f)(1.), None),
  ]:
    with pytest.raises(Exception) as ours:
      ours_fn(types_ns(jit))
    with pytest.raises(Exception) as ref:
      ours_fn(jax)
    assert ours.type is ref.type, (ours.value, ref.value)
    mask = lambda s: s.replace(__file__, "F")  # noqa: E731
    import re
    strip = lambda s: re.sub(r"0x[0-9a-f]+", "0x", re.sub(r" at \S+:\d+", "", mask(s)))  # noqa: E731
    assert strip(str(ours.value)) == strip(str(ref.value))


def types_ns(jit_fn):
  import types
  return types.SimpleNamespace(jit=jit_fn)


# --- donation -------------------------------------------------------------------------------
def test_donation():
  x = jnp.ones(3)
  y = jit(lambda x: x + 1, donate_argnums=0)(x)
  assert x.is_deleted() and y.tolist() == [2., 2., 2.]
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    jit(lambda x: x)(x)
  x = jnp.ones(3)
  with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[3\]"):
    jit(lambda x: x.sum(), donate_argnums=0)(x)
  assert not x.is_deleted()
  x = jnp.ones(3)
  out = jit(lambda x, y: x + y, donate_argnames="y")(x, y=jnp.ones(3))
  assert out.tolist() == [2., 2., 2.] and not x.is_deleted()
  x = jnp.ones(3)
  with pytest.raises(errors.JaxRuntimeError, match="previously donated"):
    jit(lambda x, y: x + y, donate_argnums=0)(x, x)
  assert not x.is_deleted()
  n = np.ones(3, np.float32)
  jit(lambda x: x + 1, donate_argnums=0)(n)        # NumPy inputs are copied, never donated
  assert n.tolist() == [1., 1., 1.]


# --- device placement ---------------------------------------------------------------------
def test_placement_single_device():
  d = pyjax.devices()[0]
  x = jnp.ones(3)
  y = jit(lambda x: x + 1)(x)
  assert y.devices() == {d} and not y.committed
  y = jit(lambda x: x + 1)(pyjax.device_put(x, d))
  assert y.committed
  y = jit(lambda x: (x, 1.))(pyjax.device_put(x, d))
  assert all(a.committed for a in y)
  with pytest.warns(DeprecationWarning, match="backend and device argument on jit is deprecated"):
    g = jit(lambda x: x + 1, device=d)
  y = g(x)
  assert y.committed and y.devices() == {d}
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    assert jit(lambda x: x, backend="cpu")(x).committed
  assert jit(lambda x: x)(x) is not x


def test_placement_multi_device(tmp_path):
  import subprocess
  import sys
  import textwrap
  code = textwrap.dedent("""
      import warnings; warnings.simplefilter("ignore")
      import pyjax, pyjax.numpy as jnp
      from pyjax._src.api import jit
      d0, d1 = pyjax.devices()
      x = jnp.ones(3)
      f = jit(lambda x: x + 1)
      out = []
      y = f(pyjax.device_put(x, d1)); out.append((y.devices() == {d1}, y.committed))
      y = jit(lambda x: x + 1, device=d1)(pyjax.device_put(x, d0)); out.append((y.devices() == {d1}, y.committed))
      y = jit(lambda x, y: x + y)(pyjax.device_put(x, d1), x); out.append((y.devices() == {d1}, y.committed))
      with pyjax.default_device(d1):
        y = f(x); out.append((y.devices() == {d1}, y.committed))
      try:
        jit(lambda x, y: x + y)(pyjax.device_put(x, d1), pyjax.device_put(x, d0))
      except ValueError as e:
        out.append(str(e))
      print(out)
  """)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env={**__import__("os").environ, "JAX_NUM_CPU_DEVICES": "2",
                          "JAX_PLATFORMS": "cpu"}, timeout=120)
  assert r.returncode == 0, r.stderr
  out = eval(r.stdout.strip())  # noqa: S307
  assert out[:4] == [(True, True), (True, True), (True, True), (True, False)]
  assert out[4] == ("Received incompatible devices for jitted computation. Got argument x of "
                    "<lambda> with shape float32[3] and with device ids [1] on platform CPU and "
                    "argument y of <lambda> with shape float32[3] and with device ids [0] on "
                    "platform CPU")


# --- disable_jit / ensure_compile_time_eval ----------------------------------------------------
def test_disable_jit():
  count = []

  def f(x):
    count.append(1)
    return (x, 2)
  jf = jit(f)
  with api.disable_jit():
    assert pyjax.config.jax_disable_jit
    assert jf(1.) == (1., 2)          # plain Python values, as JAX
    jf(1.)
    assert "jit" not in str(api.make_jaxpr(lambda x: jit(lambda y: y * 2)(x))(1.))
  assert not pyjax.config.jax_disable_jit
  assert len(count) == 2
  pyjax.config.update("jax_disable_jit", True)
  try:
    jf(1.)
  finally:
    pyjax.config.update("jax_disable_jit", False)
  assert len(count) == 3
  x = jnp.ones(2)
  jf(x)
  jf(x)                                # cached; the fast path checks the flag too
  with api.disable_jit():
    jf(x)
  assert len(count) == 5


def test_ensure_compile_time_eval():
  seen = []

  @jit
  def f(x):
    with api.ensure_compile_time_eval():
      y = jnp.sin(3.)
      seen.append(type(y))
      z = jnp.sin(x)
    return z + y
  np.testing.assert_allclose(f(1.), np.sin(1.) + np.sin(3.), rtol=1e-6)
  assert [t.__name__ for t in seen] == ["ArrayImpl"]  # concrete, not a tracer


# --- logging ----------------------------------------------------------------------------------
def test_log_compiles(caplog):
  pyjax.config.update("jax_log_compiles", True)
  try:
    with caplog.at_level(logging.WARNING):
      def my_fun(x, y):
        return x * y
      jit(my_fun)(jnp.ones(3), 2.)
  finally:
    pyjax.config.update("jax_log_compiles", False)
  text = "\n".join(r.getMessage() for r in caplog.records)
  assert "Finished tracing my_fun for jit in" in text
  assert ("Compiling jit(my_fun) with global shapes and types (ShapedArray(float32[3]), "
          "ShapedArray(float32[], weak_type=True)). Argument mapping: (UnspecifiedValue, "
          "UnspecifiedValue).") in text


def test_explain_cache_misses(caplog):
  def f(x, y):
    return x * y
  jf = jit(f)
  jf(jnp.ones(3), 2.)
  pyjax.config.update("jax_explain_cache_misses", True)
  try:
    with caplog.at_level(logging.WARNING):
      jf(jnp.ones(5), 2.)
      jf(jnp.ones(5), 2)
      jf(jnp.ones(5), y=2)
      g = jit(lambda x, n: x * n, static_argnums=1)
      g(1., 2)
      g(1., 3)
  finally:
    pyjax.config.update("jax_explain_cache_misses", False)
  msgs = [r.getMessage() for r in caplog.records]
  assert len(msgs) == 5
  line = f.__code__.co_firstlineno
  assert msgs[0].startswith(f"TRACING CACHE MISS at {__file__}:")
  assert (f"  for f defined at {__file__}:{line}\n"
          "  all previously seen cache keys differ. For the closest previous key:\n"
          "  different input types:\n"
          "  * at x, now f32[5] and before f32[3]") in msgs[0]
  assert "  * at y, now i32[] and before f32[]" in msgs[1]
  assert ("  different input pytree:\n  * at input path [0], now tuple of length 1 and "
          "before tuple of length 2, so the lengths do not match") in msgs[2]
  assert "  never seen function:\n    <lambda> id=" in msgs[3]
  assert ("with pytree metadata Static(val=3) and before <class 'pyjax._src.tree_util.Static'> "
          "with pytree metadata Static(val=2), so the pytree node metadata does not match"
          ) in msgs[4]


def _explain_prog(jax, jnp):
  """Cache misses of every kind; run with pyjax and with JAX."""
  def h(x, y):
    return x * y
  hj = jax.jit(h)
  hj(1., jnp.float32(2.))
  hj(1., jnp.ones(3))                   # rank change: ({}) shown, as JAX shows shardings
  hj(jnp.int32(1), jnp.ones(3))         # weak type change
  hj(jnp.int32(1), jnp.ones(4))
  for _ in range(2):
    jax.jit(lambda x: x)(1.)            # a function re-created at every call

  @jax.jit
  def k(x, n=1):
    return x
  k(1., n=2)
  k(1.)
  k2 = jax.jit(lambda x, n: x * n, static_argnums=1)
  k2(1., 2)
  k2(1., 3)
  jax.config.update("jax_enable_x64", True)
  try:
    k2(1., 3)
  finally:
    jax.config.update("jax_enable_x64", False)
  hj(jnp.int32(1), {"a": jnp.ones(4)})  # pytree change (then h fails on the dict)


def _explanations(caplog, jax, jnp, logger):
  caplog.clear()
  jax.config.update("jax_explain_cache_misses", True)
  try:
    with caplog.at_level(logging.WARNING, logger=logger):
      try:
        _explain_prog(jax, jnp)
      except TypeError:    # h(x, dict) fails after the explanation
        pass
  finally:
    jax.config.update("jax_explain_cache_misses", False)
  import re
  return [re.sub(r"id=\d+", "id=N", r.getMessage()).replace("pyjax._src", "jax._src")
          for r in caplog.records if r.name == logger]


def test_explain_cache_misses_match_jax(caplog):
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  api._miss_callsites.clear()
  ours = _explanations(caplog, pyjax, jnp, "pyjax._src.interpreters.partial_eval")
  theirs = _explanations(caplog, jax, jjnp, "jax._src.interpreters.partial_eval")
  assert len(ours) == len(theirs) >= 8
  for a, b in zip(ours, theirs):
    assert a == b
  assert any("maybe the function is\n  being re-defined repeatedly" in m for m in ours)


def test_log_compiles_and_explain_context_managers(caplog):
  with caplog.at_level(logging.WARNING):
    with pyjax.log_compiles():
      assert pyjax.config.jax_log_compiles
      jit(lambda x: x + 1)(1.)
    assert not pyjax.config.jax_log_compiles
    with pyjax.explain_cache_misses():
      jit(lambda x: x - 1)(1.)
  text = "\n".join(r.getMessage() for r in caplog.records)
  assert "Compiling jit(<lambda>)" in text and "TRACING CACHE MISS" in text


# --- leaked tracers ---------------------------------------------------------------------------
def test_leaked_tracer_errors_match_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp

  def prog(jax, jnp):
    leak = []

    @jax.jit
    def f(x):
      leak.append(x)
      return x + 1
    f(1.)
    msgs = []
    for g in [lambda: leak[0] + 1, lambda: jax.jit(lambda y: y + leak[0])(1.),
              lambda: jax.grad(lambda y: y * leak[0])(1.)]:
      with pytest.raises(Exception) as e:
        g()
      msgs.append((type(e.value).__name__, str(e.value)))
    leak2 = []
    jax.grad(lambda x: leak2.append(x) or x * 2)(1.)
    with pytest.raises(Exception) as e:
      leak2[0] + 1
    msgs.append((type(e.value).__name__, str(e.value)))
    return msgs
  for (tn, ours), (tt, theirs) in zip(prog(pyjax, jnp), prog(jax, jjnp)):
    assert tn == tt == "UnexpectedTracerError"
    # JAX adds stack frames and a JAX_CHECK_TRACER_LEAKS hint that pyjax does not have
    head = theirs.split("\n------------------------------\nWhen the value")[0]
    head = head.split("\nTo catch the leak earlier")[0]
    assert ours.startswith(head)
    assert ours.endswith("See https://docs.jax.dev/en/latest/errors.html#jax.errors."
                         "UnexpectedTracerError")


def test_leaked_intermediate_reports_its_line():
  leak = []

  @jit
  def f(x):
    y = jnp.sin(x)
    leak.append(y)
    return y
  f(1.)
  with pytest.raises(errors.UnexpectedTracerError) as e:
    leak[0] + 1
  line = f.__wrapped__.__code__.co_firstlineno + 2
  assert f"The leaked intermediate value was created on line {__file__}:{line}" in str(e.value)


# --- ahead-of-time stages ---------------------------------------------------------------------
def test_trace_lower_compile():
  f = jit(lambda x, y: x * y, static_argnums=1)
  x = jnp.ones(3)
  t = f.trace(x, 2)
  assert str(t.jaxpr) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }"
  assert t.out_info == api.ShapeDtypeStruct((3,), jnp.float32)
  assert repr(t.in_avals) == "((ShapedArray(float32[3]),), {})"
  lowered = f.lower(x, 2)
  assert lowered.as_text() == str(t.jaxpr)
  assert repr(lowered.in_tree) == "PyTreeDef(((*,), {}))"
  assert repr(lowered.args_info) == "((ArgInfo(_aval=ShapedArray(float32[3]), donated=False),), {})"
  compiled = lowered.compile()
  assert "def " in compiled.as_text()
  assert compiled(x).tolist() == [2., 2., 2.]
  with pytest.raises(TypeError, match="Function compiled with input pytree does not match the "
                     "input pytree it was called with. There are 1 mismatches, including:\n"
                     r"    \* at args, seen tuple of length 1 but now given tuple of length 2"):
    compiled(x, 2)
  with pytest.raises(TypeError, match="Argument 'x' compiled with float32\\[3\\] and called "
                     "with float32\\[4\\]"):
    compiled(jnp.ones(4))
  # abstract arguments
  s = api.ShapeDtypeStruct((2,), jnp.int8)
  assert f.eval_shape(s, 3) == api.ShapeDtypeStruct((2,), jnp.int8)
  assert str(f.lower(s, 3).as_text()) == \
      "{ lambda ; a:i8[2]. let b:i8[2] = mul a 3:i8[] in (b,) }"
  with pytest.raises(TypeError, match="of type <class 'pyjax.ShapeDtypeStruct'> is not a valid "
                     "JAX type"):
    jit(lambda x: x)(s)


# --- the cost of a cache hit ---------------------------------------------------------------------
def test_hit_path_is_cheap():
  x = jnp.arange(3.)
  f = jit(lambda x: x + 1)
  f(x)
  n = 2000
  times = [timeit.timeit(lambda: f(x), number=n) / n for _ in range(5)]
  # a few microseconds on a typical machine (JAX: ~5 us); loose bound against noise
  assert statistics.median(times) < 100e-6


def test_lax_through_jit():
  x = jnp.arange(6.).reshape(2, 3)
  out = jit(lambda x: lax.add(jnp.sum(lax.exp(x), axis=1), 1.))(x)
  np.testing.assert_allclose(out, np.exp(np.arange(6.).reshape(2, 3)).sum(1) + 1, rtol=1e-6)


@pytest.mark.parametrize("scalar", [np.float32(2), np.float64(2.5), np.int32(3), np.int64(-4),
                                    np.uint8(7), np.bool_(True), np.complex64(1 + 2j)],
                         ids=lambda s: type(s).__name__)
def test_numpy_scalar_arguments_on_the_hit_path_match_jax(scalar):
  jax = pytest.importorskip("jax")
  f = pyjax.jit(lambda x, y: x * y)
  g = jax.jit(lambda x, y: x * y)
  x = np.ones(2, np.float32)
  for _ in range(3):   # the first call installs the hit path, the next ones use it
    r = f(x, scalar)
  ref = g(x, scalar)
  assert r.dtype == ref.dtype and r.weak_type == ref.weak_type
  np.testing.assert_array_equal(np.asarray(r), np.asarray(ref))


def test_array_methods_on_jit_tracers():
  # the tracer's own fields must not shadow Array methods (``var`` was the jaxpr variable)
  x = np.arange(12, dtype=np.float32).reshape(4, 3)
  got = jit(lambda z: (z.var(0), z.std(1), z.mean(), z.sum(0), z.max(1)))(jnp.asarray(x))
  want = (x.var(0), x.std(1), x.mean(), x.sum(0), x.max(1))
  for g, w in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)
