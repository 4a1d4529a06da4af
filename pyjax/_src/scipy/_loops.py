"""Loop helpers for the special functions.

The series in jax.scipy.special run in ``lax.while_loop`` / ``lax.fori_loop`` /
``lax.scan``.  These helpers use the lax loops when ``lax`` provides them and otherwise
run the loop in Python (eager values only: a traced loop condition then raises JAX's
ConcretizationTypeError).  ``masked_while`` is the element-wise loop that JAX gets by
vmapping a ``while_loop``: it runs while any element is active and only updates the
active elements.
"""
from __future__ import annotations

from pyjax._src import tree_util
from pyjax._src.lax import lax_api as lax


def _lax_loop(name):
  f = getattr(lax, name, None)
  if f is None:
    try:  # the control-flow family may live in its own module
      from pyjax._src.lax import control_flow as cf  # type: ignore
      f = getattr(cf, name, None)
    except ImportError:
      f = None
  return f


def while_loop(cond_fun, body_fun, init_val):
  f = _lax_loop("while_loop")
  if f is not None:
    return f(cond_fun, body_fun, init_val)
  val = init_val
  while bool(cond_fun(val)):
    val = body_fun(val)
  return val


def fori_loop(lower, upper, body_fun, init_val):
  f = _lax_loop("fori_loop")
  if f is not None:
    return f(lower, upper, body_fun, init_val)
  val = init_val
  for i in range(int(lower), int(upper)):
    val = body_fun(i, val)
  return val


def scan(f, init, xs, length=None, reverse=False):
  g = _lax_loop("scan")
  if g is not None:
    return g(f, init, xs, length=length, reverse=reverse)
  import pyjax.numpy as jnp
  n = length if xs is None else tree_util.tree_leaves(xs)[0].shape[0]
  order = range(n - 1, -1, -1) if reverse else range(n)
  carry, ys = init, [None] * n
  for i in order:
    x = None if xs is None else tree_util.tree_map(lambda a: a[i], xs)
    carry, ys[i] = f(carry, x)
  if n == 0 or ys[0] is None:
    return carry, None
  return carry, tree_util.tree_map(lambda *a: jnp.stack(a), *ys)


def masked_while(active_fun, body_fun, init_val):
  """Element-wise while loop: ``active_fun(state)`` is a boolean array; the loop runs while
  any element is active, and ``body_fun``'s result replaces the state only where active
  (broadcast to each leaf)."""
  import pyjax.numpy as jnp

  def cond(val):
    return jnp.any(active_fun(val))

  def body(val):
    act = active_fun(val)
    new = body_fun(val)
    return tree_util.tree_map(lambda n, o: jnp.where(act, n, o), new, val)

  return while_loop(cond, body, init_val)
