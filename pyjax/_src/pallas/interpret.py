"""The grid program of a ``pallas_call``: JAX's interpret-mode semantics as ordinary lax
operations.

``grid_program`` traces, once per ``pallas_call``, a function of the call's operands that

1. starts each output as its aliased input, or else uninitialized (NaN for floats, the
   integer minimum, False: ``core.uninitialized_value``), and scratch buffers
   uninitialized;
2. pads operands with ``Element`` padding, then pads every operand and output to a whole
   number of blocks with the same uninitialized values;
3. runs a ``while`` loop over the grid in row-major order, carrying the (padded) inputs,
   outputs and scratch buffers: at each grid point it evaluates the index maps, slices each
   block with ``dynamic_slice`` (start = block index x block size for ``Blocked``
   dimensions, the index itself for ``Element`` / squeezed ones), runs the kernel jaxpr
   and writes every block back with ``dynamic_update_slice`` (inputs included: a kernel
   that writes an input block sees its write at later grid points, as in JAX);
4. slices the padding off the outputs.

This is the program JAX's interpret mode builds, so results are bit-identical wherever
the kernel body's operations are.  The resulting jaxpr is what backends run: the CPU
backend evaluates it with NumPy (interpret) or compiles it to C (the grid loop becomes a C
loop around the kernel body).
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from pyjax._src import core
from pyjax._src.interpreters import staging
from pyjax._src.pallas import core as plc


def _start_indices(bm, loop_idx, scalars):
  idx = core.eval_jaxpr(bm.index_map.jaxpr, bm.index_map.consts, *loop_idx, *scalars)
  out = []
  for i, b in zip(idx, bm.block_shape):
    if isinstance(b, (plc.Squeezed, plc.Element)):
      out.append(i)
    elif isinstance(b, plc.Blocked):
      out.append(b.block_size * i)
    else:
      raise ValueError(f"Unsupported block dim type: {type(b)}")
  return out


def _squeezed_dims(bm):
  return tuple(d for d, b in enumerate(bm.block_shape) if isinstance(b, plc.Squeezed))


def _element_padding(bm):
  pads = [b.padding if isinstance(b, plc.Element) else (0, 0) for b in bm.block_shape]
  return pads if any(p != (0, 0) for p in pads) else None


def _pad_to_blocks(x, block_shape):
  import pyjax.numpy as jnp
  padded = tuple(((n - 1) // b + 1) * b if n else 0 for n, b in zip(x.shape, block_shape))
  if padded == tuple(x.shape):
    return x
  fill = plc.uninitialized_value((), x.dtype)
  return jnp.pad(x, tuple((0, p - n) for p, n in zip(padded, x.shape)), constant_values=fill)


def _next_indices(grid, indices):
  import pyjax.numpy as jnp
  out = []
  carry = True
  for size, i in reversed(list(zip(grid, indices))):
    j = jnp.where(carry, i + 1, i)
    carry = size == j
    out.append(jnp.where(carry, 0, j))
  return tuple(reversed(out))


def run_grid(args, *, jaxpr, grid_mapping, input_output_aliases):
  """The outputs of the ``pallas_call`` on ``args`` (see the module docstring)."""
  import pyjax.lax as lax
  import pyjax.numpy as jnp
  gm = grid_mapping
  n_idx, n_in, n_out = gm.num_index_operands, gm.num_inputs, gm.num_outputs
  scalars, ins = list(args[:n_idx]), list(args[n_idx:])
  alias = {o: i for i, o in input_output_aliases}
  outs = [args[alias[k]] if k in alias else
          plc.uninitialized_value(bm.array_aval.shape, bm.array_aval.dtype)
          for k, bm in enumerate(gm.block_mappings_output)]
  carry = []
  for x, bm in zip(ins + outs, gm.block_mappings):
    pads = _element_padding(bm)
    if pads is not None:
      if input_output_aliases:
        raise NotImplementedError("Padding with aliasing not supported.")
      x = lax.pad(x, plc.uninitialized_value((), x.dtype).astype(x.dtype),
                  [(lo, hi, 0) for lo, hi in pads])
    carry.append(_pad_to_blocks(x, bm.full_block_shape))
  carry += [plc.uninitialized_value(a.shape, a.dtype) for a in gm.scratch_avals]
  grid = gm.grid
  n_blocks = n_in + n_out
  n_iter = functools.reduce(operator.mul, grid, 1)
  kernel_dims = [d for d in range(len(grid)) if d not in gm.vmapped_dims]

  # inputs the kernel never writes stay out of the loop carry (loop invariants: the
  # compiled loop does not copy them at each grid point); same values as carrying them
  kin = jaxpr.jaxpr.invars[len(kernel_dims) + n_idx:]
  kout = jaxpr.jaxpr.outvars
  ro = [k < n_in and kout[k] is kin[k] for k in range(n_blocks)]
  fixed = {k: carry[k] for k in range(n_blocks) if ro[k]}
  carry = [x for k, x in enumerate(carry) if k >= n_blocks or not ro[k]]

  def cond(c):
    return c[0] < n_iter

  def body(c):
    i, loop_idx, *vals = c
    it = iter(vals)
    blocks = [fixed[k] if ro[k] else next(it) for k in range(n_blocks)]
    scratch = list(it)
    starts = [_start_indices(bm, loop_idx, scalars) for bm in gm.block_mappings]
    views = []
    for x, st, bm in zip(blocks, starts, gm.block_mappings):
      v = lax.dynamic_slice(x, [jnp.asarray(s, jnp.int32) for s in st], bm.full_block_shape)
      sq = _squeezed_dims(bm)
      views.append(lax.squeeze(v, sq) if sq else v)
    ids = [loop_idx[d] for d in kernel_dims]
    res = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *ids, *scalars, *views, *scratch)
    new_blocks = []
    for k, (x, st, bm, b) in enumerate(zip(blocks, starts, gm.block_mappings,
                                           res[:n_blocks])):
      if ro[k]:
        continue
      full = bm.full_block_shape
      keep = tuple(d for d in range(len(full)) if d not in _squeezed_dims(bm))
      if len(keep) != len(full):
        b = lax.broadcast_in_dim(b, full, keep)
      new_blocks.append(lax.dynamic_update_slice(
          x, b, [jnp.asarray(s, jnp.int32) for s in st]))
    return (i + 1, _next_indices(grid, loop_idx), *new_blocks, *res[n_blocks:])

  init = (jnp.int32(0), tuple(jnp.int32(0) for _ in grid), *carry)
  _, _, *final = lax.while_loop(cond, body, init)
  n_carried_in = sum(1 for k in range(n_in) if not ro[k])
  results = []
  for o, bm in zip(final[n_carried_in:n_carried_in + n_out], gm.block_mappings_output):
    pads = _element_padding(bm)
    if pads is not None:
      lo = [p[0] for p in pads]
      o = lax.slice(o, lo, [n - p[1] for n, p in zip(o.shape, pads)])
    if tuple(o.shape) != tuple(bm.array_aval.shape):
      o = lax.slice(o, (0,) * o.ndim, bm.array_aval.shape)
    results.append(o)
  return results


def grid_program(jaxpr, grid_mapping, input_output_aliases, in_avals):
  """``run_grid`` traced on ``in_avals``: the ClosedJaxpr of the whole ``pallas_call``."""
  fn = functools.partial(run_grid, jaxpr=jaxpr, grid_mapping=grid_mapping,
                         input_output_aliases=input_output_aliases)
  closed, tracer_consts = staging.trace_flat(lambda *xs: fn(list(xs)), list(in_avals))
  assert not tracer_consts
  return closed


del np
