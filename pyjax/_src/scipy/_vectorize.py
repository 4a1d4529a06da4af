"""A small ``jnp.vectorize`` for the scipy modules: map a function over the broadcast
leading (batch) dimensions of its arguments, each argument having a fixed number of core
dimensions.  With no batch dimensions the function is called directly."""
from __future__ import annotations

import math

from pyjax._src import tree_util
import pyjax.numpy as jnp


def vectorize(fun, core_dims):
  """``core_dims``: the number of trailing core dimensions of each positional argument."""

  def wrapped(*args):
    args = [jnp.asarray(a) for a in args]
    batches = [a.shape[:a.ndim - k] for a, k in zip(args, core_dims)]
    batch = jnp.broadcast_shapes(*batches) if batches else ()
    if not batch:
      return fun(*args)
    size = math.prod(batch)
    flat = [jnp.reshape(jnp.broadcast_to(a, batch + a.shape[a.ndim - k:]),
                        (size,) + a.shape[a.ndim - k:]) for a, k in zip(args, core_dims)]
    if size == 0:
      # trace once on a dummy element to learn the output structure
      import pyjax
      out_sds = pyjax.eval_shape(fun, *[jnp.zeros(f.shape[1:], f.dtype) for f in flat])
      return tree_util.tree_map(lambda s: jnp.zeros(batch + s.shape, s.dtype), out_sds)
    from pyjax._src.api_vmap import vmap
    out = vmap(fun)(*flat)
    return tree_util.tree_map(lambda o: jnp.reshape(o, batch + o.shape[1:]), out)

  return wrapped
