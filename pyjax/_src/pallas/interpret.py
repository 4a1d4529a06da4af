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
  plan = _blocked_plan(gm, carry[n_in:n_blocks]) if all(ro[:n_in]) and n_iter else None
  if plan is not None:
    final = _run_blocked(plan, jaxpr, gm, scalars, [fixed[k] for k in range(n_in)],
                         {o: carry[n_in + o] for o in alias}, carry[n_blocks:], kernel_dims)
    return _unpad_outputs(final, gm)
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
  return _unpad_outputs(final[n_carried_in:n_carried_in + n_out], gm)


def _unpad_outputs(outs, gm):
  import pyjax.lax as lax
  results = []
  for o, bm in zip(outs, gm.block_mappings_output):
    pads = _element_padding(bm)
    if pads is not None:
      lo = [p[0] for p in pads]
      o = lax.slice(o, lo, [n - p[1] for n, p in zip(o.shape, pads)])
    if tuple(o.shape) != tuple(bm.array_aval.shape):
      o = lax.slice(o, (0,) * o.ndim, bm.array_aval.shape)
    results.append(o)
  return results


# --- grids whose outputs are written block by block ----------------------------------------
def _index_sources(index_map, n_grid):
  """For each output of an index-map jaxpr: ("axis", a) when it is grid index ``a``,
  ("const", c) for a literal, None otherwise (or None for the whole map when it reads
  scalar-prefetch operands)."""
  jx = index_map.jaxpr
  if len(jx.invars) != n_grid or index_map.consts:
    return None
  pos = {id(v): a for a, v in enumerate(jx.invars)}

  def src(v, env):
    if type(v).__name__ == "Literal":
      return ("const", int(np.asarray(v.val)))
    if id(v) in pos:
      return ("axis", pos[id(v)])
    return env.get(id(v))
  env = {}
  for e in jx.eqns:
    if e.primitive.name == "convert_element_type" and len(e.invars) == 1:
      env[id(e.outvars[0])] = src(e.invars[0], env)
  return [src(v, env) for v in jx.outvars]


def _block_sources(bm, shape, grid):
  """Per dimension of a (padded) operand of ``shape``: ("axis", a) when its block index is
  grid index ``a`` and the grid has one point per block, ("const", 0) for a dimension of
  one block; None when a dimension is neither (or not ``Blocked`` / ``Squeezed``)."""
  srcs = _index_sources(bm.index_map, len(grid))
  if srcs is None:
    return None
  for s, b, n in zip(srcs, bm.block_shape, shape):
    if s is None or not isinstance(b, (plc.Blocked, plc.Squeezed)):
      return None
    size = plc.dim_size(b)
    nblk = n // size if size else 0
    if nblk * size != n:
      return None
    if s[0] == "const" and (s[1] != 0 or nblk != 1):
      return None
    if s[0] == "axis" and grid[s[1]] != nblk:
      return None
  return srcs


def _blocked_plan(gm, padded_outs):
  """When every output block is written at exactly one point of the grid's leading axes
  ``U`` (each block dimension indexed by its own grid axis, or constant over a dimension
  of one block) and the remaining axes ``R`` come after them (revisits: an accumulation
  along trailing axes), the grid program can run as a ``scan`` over ``U`` producing the
  output blocks (``R`` inner scans carrying them): (per-output dims, U, R).  None
  otherwise."""
  grid = gm.grid
  used, dims_all = None, []
  for bm, x in zip(gm.block_mappings_output, padded_outs):
    dims = _block_sources(bm, x.shape, grid)
    if dims is None:
      return None
    axes = [s[1] for s in dims if s[0] == "axis"]
    if len(set(axes)) != len(axes) or (used is not None and used != set(axes)):
      return None
    used = set(axes)
    dims_all.append(dims)
  U = sorted(used or ())
  R = [a for a in range(len(grid)) if a not in U]
  if U and R and max(U) > min(R):
    return None
  return dims_all, U, R


def _input_layout(bm, x, U, grid):
  """How a read-only input's blocks reach the kernel in ``_run_blocked`` without a copy
  per grid point: ``("whole", None)`` when the block is the whole (padded) operand;
  ``("blocked", axes)`` when along each dimension its block index is a grid axis
  (``axes``: those, in grid order) or constant over a dimension of one block -- the
  operand is then laid out once as (block index along each of ``axes``..., block) (a
  reshape, or a transpose when the blocks are not contiguous: one copy in all) and the
  nested scans over the grid axes slice it at pointer offsets; None otherwise (the
  block is sliced with ``dynamic_slice`` at each grid point: a copy)."""
  del U
  srcs = _block_sources(bm, x.shape, grid)
  if srcs is None:
    return None
  axes = [s[1] for s in srcs if s[0] == "axis"]
  if len(set(axes)) != len(axes):
    return None
  if not axes:
    return "whole", None
  return "blocked", sorted(axes)


def _blocked_operand(x, bm, axes, U):
  """``x`` laid out as (block index along each of ``axes``, in that order, block)."""
  import pyjax.lax as lax
  srcs = _index_sources(bm.index_map, len(bm.index_map.jaxpr.invars))
  full = bm.full_block_shape
  split = []
  for n, b in zip(x.shape, full):
    split += [n // b if b else 0, b]
  y = lax.reshape(x, tuple(split))
  dim_of = {s[1]: d for d, s in enumerate(srcs) if s[0] == "axis"}
  perm = ([2 * dim_of[a] for a in axes] + [2 * d + 1 for d in range(len(full))]
          + [2 * d for d, s in enumerate(srcs) if s[0] == "const"])
  moved = [a for a in perm if split[a] != 1]
  if moved != sorted(moved):
    y = lax.transpose(y, perm)
  return lax.reshape(y, tuple(split[2 * dim_of[a]] for a in axes) + full)


def _run_blocked(plan, jaxpr, gm, scalars, ins, aliased, scratch0, kernel_dims):
  """The grid program as nested scans, one per grid axis: over the output-writing axes
  ``U`` (see ``_blocked_plan``) with the output blocks as per-iteration outputs (written
  in place by the compiled scan), then over the revisiting axes ``R`` carrying them and
  the scratch buffers; read-only inputs reached without a copy per grid point where
  ``_input_layout`` allows: the same kernel evaluations in the same order, on the same
  values."""
  import pyjax.lax as lax
  import pyjax.numpy as jnp
  dims_all, U, R = plan
  grid = gm.grid
  n_in = gm.num_inputs
  outs_bm = gm.block_mappings_output

  # inputs whose blocks need no copy per grid point (see _input_layout)
  layouts = [_input_layout(bm, x, U, grid) for x, bm in zip(ins, gm.block_mappings[:n_in])]
  laid = {k: _blocked_operand(ins[k], gm.block_mappings[k], lay[1], U)
          for k, lay in enumerate(layouts) if lay and lay[0] == "blocked"}

  def point(loop_idx, blocks, scratch, given):
    loop_idx = [lax.convert_element_type(i, jnp.int32) for i in loop_idx]   # (x64 loops)
    views = []
    for k, (x, bm) in enumerate(zip(ins, gm.block_mappings[:n_in])):
      if k in given:
        v = given[k]
      else:
        st = [jnp.asarray(s, jnp.int32) for s in _start_indices(bm, loop_idx, scalars)]
        v = lax.dynamic_slice(x, st, bm.full_block_shape)
      sq = _squeezed_dims(bm)
      views.append(lax.squeeze(v, sq) if sq else v)
    ids = [loop_idx[d] for d in kernel_dims]
    res = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *ids, *scalars, *views, *blocks,
                          *scratch)
    return list(res[n_in:n_in + len(blocks)]), list(res[n_in + len(blocks):])

  def at_point(loop_idx, arrs, scratch):
    """The output blocks of the grid point ``loop_idx`` (its ``U`` part): one kernel
    evaluation, or the scans over ``R`` revisiting them."""
    blocks = []
    for k, bm in enumerate(outs_bm):
      if k in aliased:
        st = [jnp.asarray(loop_idx[s[1]] * plc.dim_size(b), jnp.int32) if s[0] == "axis"
              else 0 for s, b in zip(dims_all[k], bm.block_shape)]
        v = lax.dynamic_slice(aliased[k], st, bm.full_block_shape)
        sq = _squeezed_dims(bm)
        blocks.append(lax.squeeze(v, sq) if sq else v)
      else:
        blocks.append(plc.uninitialized_value(bm.ref_shape, bm.array_aval.dtype))
    blocks, scratch = revisit(0, loop_idx, arrs, blocks, list(scratch))
    return scratch, blocks

  def scan_axis(a, loop_idx, arrs, carry, step):
    """A scan over grid axis ``a``: iteration t sees ``loop_idx`` with t at ``a`` and the
    laid-out operands indexed by ``a`` sliced at t; ``step(idx, operands, carry)``."""
    keys = [k for k in arrs if a in layouts[k][1]]

    def body(c, t_xs):
      t, xs = t_xs
      idx = list(loop_idx)
      idx[a] = t
      sub = dict(arrs)
      sub.update(zip(keys, xs))
      return step(idx, sub, c)
    return lax.scan(body, carry,
                    (jnp.arange(grid[a], dtype=jnp.int32), [arrs[k] for k in keys]))

  def revisit(m, loop_idx, arrs, blocks, scratch):
    """The revisiting axes ``R[m:]``: scans carrying the output blocks and scratch
    buffers, each slicing the laid-out operands indexed by its axis."""
    if m == len(R):
      given = {k: ins[k] if lay[0] == "whole" else arrs[k]
               for k, lay in enumerate(layouts) if lay}
      return point(loop_idx, blocks, scratch, given)
    c, _ = scan_axis(R[m], loop_idx, arrs, (blocks, scratch),
                     lambda idx, sub, c: (tuple(revisit(m + 1, idx, sub, *c)), None))
    return list(c[0]), list(c[1])

  def level(l, loop_idx, arrs, scratch):
    """Scans over ``U[l:]`` (row-major: the grid's order), each slicing the laid-out
    operands indexed by its axis; the stacked output blocks."""
    if l == len(U):
      return at_point(loop_idx, arrs, scratch)
    return scan_axis(U[l], loop_idx, arrs, list(scratch),
                     lambda idx, sub, sc: level(l + 1, idx, sub, list(sc)))

  _, ys = level(0, [None] * len(grid), laid, list(scratch0))
  finals = []
  for y, bm, dims in zip(ys, outs_bm, dims_all):
    full = bm.full_block_shape
    nconst = sum(1 for s in dims if s[0] == "const")
    y = lax.reshape(y, tuple(grid[a] for a in U) + (1,) * nconst + full)
    perm, c = [], 0
    for d, s in enumerate(dims):
      if s[0] == "axis":
        perm.append(U.index(s[1]))
      else:
        perm.append(len(U) + c)
        c += 1
      perm.append(len(U) + nconst + d)
    moved = [a for a in perm if y.shape[a] != 1]
    if moved != sorted(moved):   # (only size-1 axes moving: a reshape is enough)
      y = lax.transpose(y, perm)
    else:
      y = lax.reshape(y, tuple(y.shape[a] for a in perm))
    finals.append(lax.reshape(y, tuple(n * b for n, b in zip(y.shape[0::2], y.shape[1::2]))))
  return finals


def grid_program(jaxpr, grid_mapping, input_output_aliases, in_avals):
  """``run_grid`` traced on ``in_avals``: the ClosedJaxpr of the whole ``pallas_call``."""
  fn = functools.partial(run_grid, jaxpr=jaxpr, grid_mapping=grid_mapping,
                         input_output_aliases=input_output_aliases)
  closed, tracer_consts = staging.trace_flat(lambda *xs: fn(list(xs)), list(in_avals))
  assert not tracer_consts
  return closed


