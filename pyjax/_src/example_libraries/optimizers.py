"""First-order optimizers on pytrees (``jax.example_libraries.optimizers``).

Each optimizer constructor returns an ``Optimizer`` triple ``(init_fun, update_fun,
get_params)``: ``init_fun(params)`` builds an ``OptimizerState``, ``update_fun(step,
grads, state)`` returns the next state, ``get_params(state)`` reads the parameters back.
Constructors are written for one array and lifted to pytrees by :func:`optimizer`.
Step sizes are numbers or schedules (functions of the step index).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import pyjax.numpy as jnp
from pyjax._src import tree_util

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state", "Array", "Params", "State",
           "Updates", "InitFn", "Step", "UpdateFn", "ParamsFn", "Schedule"]

# The state of a whole pytree: the flattened per-leaf states, the parameters' treedef and
# each leaf state's own treedef.  A pytree whose only child is ``packed_state``.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Array = Any
Params = Any
State = Any
Updates = Params
InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
  """``(init_fn, update_fn, params_fn)`` of an optimizer."""
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def _flatten_each(trees):
  """``[flatten(t) for t in trees]`` split into (tuple of leaf lists, tuple of treedefs)."""
  pairs = [tree_util.tree_flatten(t) for t in trees]
  return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def optimizer(opt_maker):
  """Decorator lifting an optimizer written for single arrays to pytrees of arrays.

  ``opt_maker(*args, **kwargs)`` returns ``(init, update, get_params)`` acting on one array
  (its state may be any pytree); the decorated constructor returns an ``Optimizer`` whose
  functions take parameter pytrees and keep an ``OptimizerState``.  ``update_fun`` raises
  ``TypeError`` when the gradient tree's structure differs from the parameters', or when
  ``update`` changes the structure of a leaf's state.
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      leaves, treedef = tree_util.tree_flatten(x0_tree)
      states_flat, subtrees = _flatten_each([init(x) for x in leaves])
      return OptimizerState(states_flat, treedef, subtrees)

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, treedef, subtrees = opt_state
      grads, grad_def = tree_util.tree_flatten(grad_tree)
      if grad_def != treedef:
        raise TypeError(
            "optimizer update function was passed a gradient tree that did not match the "
            f"parameter tree structure with which it was initialized: parameter tree "
            f"{treedef} and grad tree {grad_def}.")
      states = [tree_util.tree_unflatten(d, s) for d, s in zip(subtrees, states_flat)]
      new_flat, new_subtrees = _flatten_each([update(i, g, s) for g, s in zip(grads, states)])
      for before, after in zip(subtrees, new_subtrees):
        if before != after:
          raise TypeError(
              "optimizer update function produced an output structure that did not match "
              f"its input structure: input {before} and output {after}.")
      return OptimizerState(new_flat, treedef, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, treedef, subtrees = opt_state
      params = [get_params(tree_util.tree_unflatten(d, s))
                for d, s in zip(subtrees, states_flat)]
      return tree_util.tree_unflatten(treedef, params)

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


def _first(state):
  return state[0]


@optimizer
def sgd(step_size):
  """Stochastic gradient descent: ``x - step_size(i) * g``."""
  step_size = make_schedule(step_size)
  return Optimizer(lambda x0: x0, lambda i, g, x: x - step_size(i) * g, lambda x: x)


@optimizer
def momentum(step_size: Schedule, mass: float):
  """SGD with momentum: ``v = mass * v + g; x -= step_size(i) * v``."""
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, v = state
    v = mass * v + g
    return x - step_size(i) * v, v
  return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
  """SGD with Nesterov momentum: ``v = mass * v + g; x -= step_size(i) * (mass * v + g)``."""
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, v = state
    v = mass * v + g
    return x - step_size(i) * (mass * v + g), v
  return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (Duchi et al. 2011) with momentum on the normalized gradient."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    scale = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * scale) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp: a running mean of squared gradients (decay ``gamma``) scales each step."""
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, avg_sq = state
    avg_sq = avg_sq * gamma + jnp.square(g) * (1. - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq
  return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp with momentum on the scaled step."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq, mom = state
    avg_sq = avg_sq * gamma + jnp.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
    return x - mom, avg_sq, mom
  return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam (Kingma & Ba 2015) with bias-corrected moment estimates."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
  return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax: Adam with the infinity norm in place of the second moment."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    corrected = step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    return x - corrected * m / (u + eps), m, u
  return init, update, _first


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil et al. 2019): one accumulator per axis slice instead of per element."""
  step_size = make_schedule(step_size)

  def along(ndim, v, axis):
    # v (1-D) broadcast along ``axis`` of an ndim-dimensional array (a scalar gradient
    # of a parameter kept as shape (1,) indexes as 1-D)
    idx = [None] * ndim
    idx[axis:axis + 1] = [slice(None)]
    return v[tuple(idx)]

  def init(x0):
    shape = x0.shape
    x0 = jnp.atleast_1d(x0)
    return x0, jnp.zeros_like(x0), [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

  def update(i, g, state):
    x, m, vs, shape = state
    accum = functools.reduce(jnp.minimum, [along(g.ndim, v, a) for a, v in enumerate(vs)])
    accum = accum + jnp.square(g)
    inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
    m = (1. - momentum) * (g * inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [accum.max(tuple(a for a in range(x.ndim) if a != j)) for j in range(x.ndim)]
    return x, m, vs, shape

  def get_params(state):
    return state[0].reshape(state[3])
  return init, update, get_params


# -- step-size schedules ---------------------------------------------------------------------

def constant(step_size) -> Schedule:
  """The schedule returning ``step_size`` at every step."""
  return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
  """``step_size * decay_rate ** (i / decay_steps)``."""
  return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  """``step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase`` the ratio
  ``i / decay_steps`` is floored."""
  if staircase:
    return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  """From ``step_size`` to ``final_step_size`` over ``decay_steps`` steps along
  ``(1 - i / decay_steps) ** power``; constant afterwards."""
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    mult = (1 - step_num / decay_steps) ** power
    return mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any):
  """``values[k]`` where ``k`` counts the boundaries below the step.  ``ValueError``
  unless both are 1-D with ``len(values) == len(boundaries) + 1``."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")
  return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
  """A callable as is, a scalar as a constant schedule; ``TypeError`` otherwise."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# -- utilities -------------------------------------------------------------------------------

def l2_norm(tree):
  """The l2 norm of all the leaves of a pytree together."""
  leaves = tree_util.tree_leaves(tree)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """Scale a gradient pytree down to l2 norm ``max_norm`` when its norm exceeds it."""
  norm = l2_norm(grad_tree)
  return tree_util.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                            grad_tree)


class JoinPoint:
  """A leaf of the outer pytree holding one parameter's state pytree (see
  :func:`unpack_optimizer_state`)."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An ``OptimizerState`` as the parameters' pytree with a ``JoinPoint`` (holding that
  parameter's state) at each leaf -- a form that serializes with ordinary pytree tools."""
  states_flat, treedef, subtrees = opt_state
  joins = [JoinPoint(tree_util.tree_unflatten(d, s)) for d, s in zip(subtrees, states_flat)]
  return tree_util.tree_unflatten(treedef, joins)


def pack_optimizer_state(marked_pytree):
  """The inverse of :func:`unpack_optimizer_state`."""
  joins, treedef = tree_util.tree_flatten(marked_pytree)
  assert all(isinstance(j, JoinPoint) for j in joins)
  states_flat, subtrees = _flatten_each([j.subtree for j in joins])
  return OptimizerState(states_flat, treedef, subtrees)
