"""Key reuse checking (``jax_debug_key_reuse`` / ``jax.debug_key_reuse``), as JAX documents
it: a typed PRNG key (``jax.random.key``) may be consumed once.

Consuming operations ("sinks"): ``random_bits`` (every sampler draws through it),
``random_split``, and any ``jit``-compiled function whose traced program consumes one of its
key arguments.  ``fold_in``, ``key_data``, ``clone`` and creating keys do not consume (their
outputs are fresh keys; ``clone`` is the way to reuse a key deliberately).  Raw ``uint32``
keys (``PRNGKey``) are never checked.

Eagerly, passing a consumed key to a sink raises ``KeyReuseError("Previously-consumed key
passed to random_bits at index 0")`` (``jit-compiled function`` for a jitted sink, e.g. every
sampler).  While tracing, consuming a traced key twice raises ``"In random_bits, argument 0 is
already consumed."`` (``In jit, ...`` for a nested jitted sink), so a jitted function reusing
a key fails when traced.  A jitted function records which key arguments its program consumes
and marks them consumed after each call.

Differs from JAX: consumption is tracked per key buffer, so a key derived by indexing or
reshaping a key array is a fresh key (JAX forwards consumption through such operations);
loop bodies (``scan``, ``while_loop``, ``fori_loop``) are not analysed for reuse across
iterations.
"""
from __future__ import annotations

import weakref

from pyjax._src import config as _config
from pyjax._src import core, errors

_consumed = {}   # id(key buffer) -> weakref to it


def _msg(text):
  return errors.KeyReuseError(
      f"{text}\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.KeyReuseError")


def enabled():
  return bool(_config.config.jax_debug_key_reuse)


def is_consumed(base):
  r = _consumed.get(id(base))
  return r is not None and r() is base


def mark_consumed(base):
  i = id(base)
  try:
    _consumed[i] = weakref.ref(base, lambda _, i=i: _consumed.pop(i, None))
  except TypeError:   # (a NumPy buffer: not tracked)
    pass


def consume(base, name, index=0, jitted=False):
  """A sink ``name`` consumes the key buffer ``base`` (its argument ``index``)."""
  if is_consumed(base):
    if isinstance(base, core.Tracer):
      raise _msg(f"In {'jit' if jitted else name}, argument {index} is already consumed.")
    where = "jit-compiled function" if jitted else name
    raise _msg(f"Previously-consumed key passed to {where} at index {index}")
  mark_consumed(base)


def consumed_inputs(inputs):
  """Positions of the traced inputs a program consumed (its sink arguments)."""
  return tuple(i for i, x in enumerate(inputs) if is_consumed(x))


def check_call(sinks, leaves):
  """Before and after a jitted call: its sink arguments must be unconsumed keys; they are
  consumed by the call."""
  for i in sinks:
    if is_consumed(leaves[i]):
      consume(leaves[i], "jit", i, jitted=True)
  for i in sinks:
    mark_consumed(leaves[i])
