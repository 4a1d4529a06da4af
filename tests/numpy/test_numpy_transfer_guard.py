"""Eager reductions and statistics under ``transfer_guard``: the constants a jax.numpy
function makes from Python scalars (element counts, 0.5, inf) are not transfers (JAX
compiles them into the function's program); the host arrays and traced Python-scalar
arguments (``ddof`` of var, ``q`` of quantile) are, as in JAX.  Each case is run under
real JAX too and the outcomes (ok, or the transferred aval in the error) compared."""
import logging

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp

# name -> f(jax, jnp, x) where x is a float32 (2, 3) Array
_CASES = {
    "mean": lambda j, n, x: n.mean(x),
    "mean_int_axis": lambda j, n, x: n.mean(x.astype("int32"), axis=1),
    "var_ddof": lambda j, n, x: n.var(x, ddof=1),
    "std": lambda j, n, x: n.std(x, axis=0),
    "average_weights": lambda j, n, x: n.average(x, axis=1, weights=x),
    "nanmean": lambda j, n, x: n.nanmean(x),
    "nanstd": lambda j, n, x: n.nanstd(x, axis=1),
    "median": lambda j, n, x: n.median(x),
    "quantile": lambda j, n, x: n.quantile(x, 0.25),
    "norm_1": lambda j, n, x: n.linalg.norm(x, ord=1),
    "norm_3_axis": lambda j, n, x: n.linalg.norm(x, ord=3, axis=1),
    "count_nonzero": lambda j, n, x: n.count_nonzero(x),
    "cov": lambda j, n, x: n.cov(x),
    "mean_numpy_arg": lambda j, n, x: n.mean(np.ones(3, np.float32)),
    "add_python_int": lambda j, n, x: x + 1,
    "where_python_scalar": lambda j, n, x: n.where(x, x, 0.0),
    "clip_arrays": lambda j, n, x: n.clip(x, x, x),
    # JAX jits these: the Python scalars they are given are arguments (transfers)
    "clip_python_scalars": lambda j, n, x: n.clip(x, 0, 1),
    "nanstd_ddof": lambda j, n, x: n.nanstd(x, ddof=1, axis=1),
    "diff_prepend": lambda j, n, x: n.diff(x, prepend=0),
    # ... unless they are static (decimals) or left at their defaults (rtol, atol)
    "round_decimals": lambda j, n, x: n.round(x, 2),
    "isclose_defaults": lambda j, n, x: n.isclose(x, x),
}


def _outcome(jax_mod, jnp_mod, name):
  x = jnp_mod.arange(6.0, dtype="float32").reshape(2, 3)
  try:
    with jax_mod.transfer_guard("disallow"):
      r = _CASES[name](jax_mod, jnp_mod, x)
      jax_mod.block_until_ready(r)
  except Exception as e:  # the error names the aval of the disallowed transfer
    return type(e).__name__, str(e).split("aval=")[1].split(", dst_sharding")[0]
  return "ok", np.asarray(r).tolist()


@pytest.mark.parametrize("name", sorted(_CASES))
def test_disallow_matches_jax(name):
  jax = pytest.importorskip("jax")
  want = _outcome(jax, jax.numpy, name)
  got = _outcome(pyjax, jnp, name)
  assert got[0] == want[0]
  if got[0] == "ok":
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
  else:
    assert got[1] == want[1]


def test_disallow_without_jax():
  """The defect alone (no oracle needed): the element count of mean/var/std and the
  statistics' constants are not implicit transfers; a host argument still is."""
  x = jnp.arange(6.0).reshape(2, 3)
  with pyjax.transfer_guard("disallow"):
    np.testing.assert_allclose(jnp.mean(x), 2.5)
    np.testing.assert_allclose(jnp.nanstd(x, axis=1), [np.sqrt(2 / 3)] * 2, rtol=1e-6)
    np.testing.assert_allclose(jnp.nanvar(x), np.var(np.arange(6.0)), rtol=1e-6)
    np.testing.assert_allclose(jnp.linalg.norm(x, ord=np.inf), 12.0)
    with pytest.raises(pyjax.errors.JaxRuntimeError, match="float32\\[3\\]"):
      jnp.mean(np.ones(3, np.float32))
    with pytest.raises(pyjax.errors.JaxRuntimeError, match="int32\\[\\], weak_type=True"):
      jnp.nanstd(x, ddof=1)   # a traced argument of JAX's jitted nanstd
    with pytest.raises(pyjax.errors.JaxRuntimeError, match="int32\\[\\], weak_type=True"):
      x > 1


def test_log_reports_only_arguments(caplog):
  """'log': jnp.mean of a NumPy array logs that array's transfer once, not the count."""
  with caplog.at_level(logging.WARNING, logger="pyjax._src.transfer_guard"):
    with pyjax.transfer_guard("log"):
      r = jnp.mean(np.arange(4, dtype=np.float32))
      jnp.var(jnp.ones(3), ddof=1)  # a Python int ddof is an argument of JAX's jitted _var
  assert float(r) == 1.5
  msgs = [m.getMessage() for m in caplog.records]
  assert len(msgs) == 2, msgs
  assert "aval=ShapedArray(float32[4])" in msgs[0]
  assert "aval=ShapedArray(int32[], weak_type=True)" in msgs[1]
