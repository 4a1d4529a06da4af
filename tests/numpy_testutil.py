"""Shared comparison harness for the jnp family tests (linalg, fft, setops, statistics,
...): run the same expression with pyjax.numpy and jax.numpy on the same NumPy inputs and
compare values, shapes, dtypes, weak types and exceptions (class and message)."""
import numpy as np

import pyjax
import pyjax.numpy as pjnp


def leaves(x):
  if isinstance(x, (tuple, list)):
    out = []
    for v in x:
      out.extend(leaves(v))
    return out
  return [x]


def run(fn):
  try:
    return fn(), None
  except Exception as e:  # noqa: BLE001 -- compared below
    return None, e


def compare(rp, rj, rtol=1e-5, atol=1e-6, check_weak=True, check_type=True):
  lp, lj = leaves(rp), leaves(rj)
  assert len(lp) == len(lj), (len(lp), len(lj))
  if check_type and isinstance(rj, tuple) and hasattr(type(rj), "_fields"):
    assert type(rp).__name__ == type(rj).__name__ and rp._fields == rj._fields
  for p, j in zip(lp, lj):
    if not hasattr(j, "dtype"):
      assert p == j or repr(p) == repr(j), (p, j)
      continue
    assert np.shape(p) == np.shape(j), (np.shape(p), np.shape(j))
    assert np.asarray(p).dtype == np.asarray(j).dtype, (np.asarray(p).dtype, np.asarray(j).dtype)
    if check_weak:
      assert getattr(p, "weak_type", False) == getattr(j, "weak_type", False)
    a, b = np.asarray(p), np.asarray(j)
    if a.dtype.kind in "biu":
      np.testing.assert_array_equal(a, b)
    else:
      np.testing.assert_allclose(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                                 b.astype(np.complex128 if b.dtype.kind == "c" else np.float64),
                                 rtol=rtol, atol=atol, equal_nan=True)


def check_both(expr, env, jax, rtol=1e-5, atol=1e-6, check_weak=True, jit=False):
  """Evaluate ``expr`` (source using ``jnp``, ``jit`` and names from ``env``) with
  pyjax.numpy/pyjax.jit and jax.numpy/jax.jit; compare results or exceptions (class and
  first line of the message)."""
  import jax.numpy as jjnp

  def make(jnp_mod, jit_fn):
    ns = dict(env, jnp=jnp_mod, np=np, jit=jit_fn)
    if jit:
      return lambda: jit_fn(lambda: eval(expr, ns))()
    return lambda: eval(expr, ns)
  rp, ep = run(make(pjnp, pyjax.jit))
  rj, ej = run(make(jjnp, jax.jit))
  if ej is not None or ep is not None:
    assert ej is not None and ep is not None, (expr, ep, ej)
    assert isinstance(ep, type(ej)) or type(ep).__name__ == type(ej).__name__, (type(ep), type(ej))
    assert str(ep).split("\n")[0] == str(ej).split("\n")[0], (str(ep), str(ej))
    return None
  compare(rp, rj, rtol=rtol, atol=atol, check_weak=check_weak)
  return rp
