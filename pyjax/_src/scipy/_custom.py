"""Custom-JVP helpers for the scipy/nn modules.

pyjax's ``custom_jvp`` may hand a JVP rule its primal inputs as plain Python scalars where
JAX hands typed scalars (with ``dtype``/``shape``); these wrappers turn the primals (and
the primal output) into arrays first, so the rules can use ``x.dtype`` as in JAX."""
from __future__ import annotations

import functools

import pyjax.numpy as jnp


def _arr(x):
  if x is None or (hasattr(x, "dtype") and hasattr(x, "shape")):
    return x
  return jnp.asarray(x)


def jvp_rule(rule, nondiff=0):
  """Wrap a ``defjvp`` rule ``rule(*nondiff_args, primals, tangents)``."""
  @functools.wraps(rule)
  def wrapped(*args):
    *static, primals, tangents = args
    return rule(*static, tuple(_arr(p) for p in primals), tangents)
  return wrapped


def jvps_rule(fn):
  """Wrap a ``defjvps`` entry ``fn(g, ans, *primals)``."""
  @functools.wraps(fn)
  def wrapped(g, ans, *primals):
    return fn(g, _arr(ans), *(_arr(p) for p in primals))
  return wrapped


def defjvps(f, *fns):
  f.defjvps(*(None if fn is None else jvps_rule(fn) for fn in fns))


def defjvp(f, rule):
  f.defjvp(jvp_rule(rule))
  return rule
