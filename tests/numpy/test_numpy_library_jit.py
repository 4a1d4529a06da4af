"""jax.numpy functions that JAX runs as an inner ``jit`` (``numpy.util.library_function``
with ``jit=``): staged as one ``jit[name=...]`` equation with JAX's name and arguments, and
run eagerly as one cached executable per argument signature."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import compiler
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build


def _programs(j, n):
  x = n.arange(12.0, dtype="float32").reshape(4, 3)
  return [
      (lambda x: n.where(x > 2, x, 0.0) + n.clip(x, 0, 1), (x,)),
      (lambda x: n.std(x, ddof=1) + n.var(x, axis=0).sum(), (x,)),
      (lambda x: j.nn.relu(x) + n.linalg.norm(x), (x,)),
      (lambda x: n.percentile(x, 50.0, axis=1), (x,)),
      (lambda x: n.nanmean(x, axis=0) + n.nansum(x, axis=0), (x,)),
      (lambda x: n.cumsum(x, axis=1) + n.round(x, 1), (x,)),
      (lambda x: n.tril(x) + n.isclose(x, 1.0), (x,)),
  ]


def _outer(closed):
  """The top-level equations as a user sees them: primitive, jit name, operand avals."""
  return [(e.primitive.name, e.params["name"] if e.primitive.name == "jit" else None,
           [str(getattr(v, "aval", v)) for v in e.invars]) for e in closed.jaxpr.eqns]


@pytest.mark.parametrize("i", range(7))
def test_jaxpr_matches_jax(i):
  """Each function is one ``jit`` equation named and called as JAX's (the bodies use
  pyjax's own primitive sequences; for where/clip/norm the whole text is JAX's)."""
  jax = pytest.importorskip("jax")
  f, args = _programs(pyjax, jnp)[i]
  g, jargs = _programs(jax, jax.numpy)[i]
  ours, ref = pyjax.make_jaxpr(f)(*args), jax.make_jaxpr(g)(*jargs)
  assert _outer(ours) == _outer(ref)
  if i in (0, 2):
    assert str(ours) == str(ref)


def test_python_scalars_are_traced_arguments():
  x = jnp.arange(3.0)
  jaxpr = pyjax.make_jaxpr(lambda x: jnp.clip(x, 0, 2))(x).jaxpr
  eqn, = jaxpr.eqns
  assert eqn.primitive.name == "jit" and eqn.params["name"] == "clip"
  assert [(v.aval.shape, str(v.aval.dtype), v.aval.weak_type) for v in eqn.invars] == [
      ((3,), "float32", False), ((), "int32", True), ((), "int32", True)]
  # static arguments (axis) and defaults are not arguments
  eqn, = pyjax.make_jaxpr(lambda x: jnp.nansum(x, axis=0))(x).jaxpr.eqns
  assert eqn.params["name"] == "nansum" and len(eqn.invars) == 1


def test_eager_values_dtypes_and_weak_types():
  jax = pytest.importorskip("jax")
  cases = [
      lambda n: n.clip(n.arange(5), 1, 3),            # int array, int bounds
      lambda n: n.clip(n.arange(5), 0.5, 3),          # float bound promotes
      lambda n: n.where(n.arange(4) > 1, 2.0, 3),     # weak scalars only
      lambda n: n.std(n.arange(6.0).reshape(2, 3), axis=1, ddof=1),
      lambda n: n.quantile(n.arange(10.0), n.array([0.1, 0.9])),
      lambda n: n.nanmax(n.array([1.0, np.nan, 3.0])),
  ]
  for c in cases:
    ours, ref = c(jnp), c(jax.numpy)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    assert ours.aval.weak_type == ref.aval.weak_type
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)


def test_eager_calls_reuse_one_executable_and_go_native_when_hot():
  from pyjax._src import api
  from pyjax._src.numpy import reductions
  x = jnp.arange(7.0) * 3.0   # (a signature no other test uses)
  with executable.compile_mode_override("sync"):   # not built at once, even in sync mode
    jnp.nancumprod(x)
    jitted = reductions.nancumprod._jits[(("a",), ())]
    entries = [e for e in api._fun_cache(jitted).values()
               if [a.shape for a in e.closed.in_avals] == [(7,)]]
    assert len(entries) == 1
    exe, = entries[0].executables.values()
    for _ in range(compiler.LIBRARY_COMPILE_AFTER - 2):
      jnp.nancumprod(x)
    assert exe.tier == "numpy" and exe._calls == compiler.LIBRARY_COMPILE_AFTER - 1
    jnp.nancumprod(x)
    executable.drain()
  if build.toolchain() is not None:
    assert exe.tier == "native", exe.error
  np.testing.assert_allclose(jnp.nancumprod(x), np.cumprod(np.arange(7.0) * 3.0), rtol=1e-6)


def test_unhashable_static_arguments_and_lists_run_the_body():
  x = jnp.arange(6.0).reshape(2, 3)
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    jnp.nanmedian(x, axis=[0])
  with pytest.raises(TypeError, match="positional-only"):
    jnp.clip(arr=x, min=1)
  np.testing.assert_allclose(jnp.cumsum(x, axis=1), np.cumsum(np.arange(6.0).reshape(2, 3), 1))
