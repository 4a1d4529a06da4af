"""``pallas_call`` and its primitive.

``pallas_call(kernel, out_shape, grid=..., in_specs=..., out_specs=...)(*args)`` traces the
kernel once (``stateful.py``: Ref-typed variables, then discharged), traces each block spec's
index map into a jaxpr, and binds ``pallas_call_p`` with:

- ``jaxpr``: the kernel with Ref-typed variables (scalar-prefetch, input, output and
  scratch refs -> nothing; as JAX prints it), or, for a kernel ``stateful.py`` does not
  model, the discharged kernel (grid position, scalar-prefetch operands, input / output /
  scratch blocks -> the blocks' final values; ``discharged_kernel`` gives it in both
  cases);
- ``grid_mapping``: the grid, one ``BlockMapping`` per input and output (block shape,
  index-map jaxpr, the operand's aval), the scratch avals, the grid axes added by
  ``vmap`` (invisible to the kernel);
- ``grid_loop``: the whole computation as an ordinary jaxpr -- the interpreter of
  ``interpret.py`` traced once: a ``while`` loop over the grid that slices each block
  with ``dynamic_slice``, runs the kernel and writes the blocks back with
  ``dynamic_update_slice``.  Not printed.  Backends run it: the CPU backend's NumPy tier
  evaluates it, its C compiler inlines it (the grid becomes a C loop around the kernel).

Transformations: ``vmap`` adds a leading grid axis (the batched operands get a squeezed
leading block dimension indexed by it), as JAX does; ``jvp`` differentiates the grid
program (forward mode only, as JAX: the loop cannot be transposed).
"""
from __future__ import annotations

import weakref

import numpy as np

from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad, batching, staging
from pyjax._src.pallas import core as plc
from pyjax._src.pallas import stateful
from pyjax._src.state import types as state_types
from pyjax._src.state.types import Frame, Ref

pallas_call_p = core.Primitive("pallas_call")
pallas_call_p.multiple_results = True

_INT32 = np.dtype(np.int32)


class BlockMapping:
  """One operand's blocks: canonical ``block_shape``, ``index_map`` (a ClosedJaxpr: grid
  indices and scalar-prefetch values -> one int32 per dimension: block numbers for
  ``Blocked`` dimensions, element offsets for ``Element`` and ``Squeezed`` ones),
  ``array_aval`` and ``origin`` (``args[0]``, ``outputs``...)."""
  __slots__ = ("block_shape", "index_map", "array_aval", "origin")

  def __init__(self, block_shape, index_map, array_aval, origin):
    self.block_shape, self.index_map = tuple(block_shape), index_map
    self.array_aval, self.origin = array_aval, origin

  @property
  def full_block_shape(self):
    return tuple(plc.dim_size(d) for d in self.block_shape)

  @property
  def ref_shape(self):
    return tuple(plc.dim_size(d) for d in self.block_shape if not isinstance(d, plc.Squeezed))

  def block_aval(self):
    return ShapedArray(self.ref_shape, self.array_aval.dtype, self.array_aval.weak_type)

  def __repr__(self):
    return f"BlockMapping(block_shape={self.block_shape})"


class GridMapping:
  """The grid and the block mappings of a ``pallas_call`` (``block_mappings``: inputs then
  outputs).  ``vmapped_dims``: grid axes added by ``vmap`` (not visible to the kernel)."""

  def __init__(self, grid, block_mappings, num_index_operands, num_inputs, num_outputs,
               scratch_avals, vmapped_dims=(), index_operand_avals=()):
    self.grid = tuple(grid)
    self.block_mappings = tuple(block_mappings)
    self.num_index_operands = num_index_operands
    self.num_inputs, self.num_outputs = num_inputs, num_outputs
    self.scratch_avals = tuple(scratch_avals)
    self.vmapped_dims = tuple(vmapped_dims)
    self.index_operand_avals = tuple(index_operand_avals)

  @property
  def kernel_grid(self):
    return tuple(g for d, g in enumerate(self.grid) if d not in self.vmapped_dims)

  @property
  def block_mappings_output(self):
    return self.block_mappings[self.num_inputs:]

  def replace(self, **kw):
    d = dict(grid=self.grid, block_mappings=self.block_mappings,
             num_index_operands=self.num_index_operands, num_inputs=self.num_inputs,
             num_outputs=self.num_outputs, scratch_avals=self.scratch_avals,
             vmapped_dims=self.vmapped_dims, index_operand_avals=self.index_operand_avals)
    d.update(kw)
    return GridMapping(**d)

  def __repr__(self):
    return f"GridMapping(grid={self.grid}, block_mappings={self.block_mappings})"


# --- tracing with refs ----------------------------------------------------------------------
def _trace_with_refs(fn, avals, n_plain, debug_name):
  """Trace ``fn(plain, refs)``: the first ``n_plain`` inputs are passed as values, the
  others as Refs holding them; ``fn`` returns the flat outputs.  Returns (closed jaxpr,
  tracer consts)."""

  def flat(*xs):
    frame = Frame()
    frame.interp = core._state.interp
    refs = [Ref(x, frame) for x in xs[n_plain:]]
    state_types.push_frame(frame)
    try:
      outs = fn(list(xs[:n_plain]), refs)
    finally:
      state_types.pop_frame(frame)
    return outs
  del debug_name
  return staging.trace_flat(flat, list(avals))


def _as_index(x):
  import pyjax.numpy as jnp
  return jnp.asarray(x)


def _trace_index_map(spec, block_shape, array_aval, origin, grid, scalar_avals):
  index_map = spec.index_map
  if index_map is None:
    fn, src = plc._default_index_map(len(array_aval.shape)), "<lambda>"
  else:
    fn = index_map
    src = staging.fun_source_info(getattr(index_map, "index_map", index_map))
  n = len(grid)
  avals = [ShapedArray((), _INT32)] * n + list(scalar_avals)

  def body(ids, refs):
    out = fn(*ids, *refs)
    if isinstance(out, list):
      out = tuple(out)
    if not isinstance(out, tuple):
      out = (out,)
    if len(out) != len(block_shape):
      raise ValueError(
          f"Index map function {src} for {origin} must return {len(block_shape)} values to "
          f"match block_shape={block_shape}. Currently returning {len(out)} values:")
    outs = [_as_index(o) for o in out]
    for i, (o, bd) in enumerate(zip(outs, block_shape)):
      a = core.get_aval(o)
      if isinstance(bd, plc.BoundedSlice):
        raise ValueError(f"Unsupported block dim type: {type(bd)}")
      if a.shape or a.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError(f"Index map function {src} for {origin} must return integer "
                         f"scalars. Output[{i}] has type {a}.")
    import pyjax.lax as lax
    return [lax.convert_element_type(o, _INT32) for o in outs]
  closed, tracer_consts = _trace_with_refs(body, avals, n, "index_map")
  if tracer_consts:
    raise ValueError(f"Index map function {src} for {origin} must not capture constants: "
                     f"{tracer_consts}")
  return closed


def _block_mapping(spec, aval, origin, grid, scalar_avals):
  if spec is plc.no_block_spec or spec is None:
    spec = plc.BlockSpec()
  if not hasattr(aval, "shape"):
    raise ValueError(f"Array type must have a `shape` attribute, but got {type(aval)}")
  if spec.block_shape is None:
    block_shape = tuple(plc._canonical_dim(d) for d in aval.shape)
  else:
    block_shape = tuple(plc._canonical_dim(d) for d in spec.block_shape)
    if len(aval.shape) != len(block_shape):
      raise ValueError(f"Block shape for {origin} (= {block_shape}) must have the same number "
                       f"of dimensions as the array shape {tuple(aval.shape)}.")
  index_map = _trace_index_map(spec, block_shape, aval, origin, grid, scalar_avals)
  return BlockMapping(block_shape, index_map, aval, origin)


def _out_aval(s):
  if isinstance(s, (ShapedArray,)):
    return s
  if hasattr(s, "shape") and hasattr(s, "dtype"):
    return ShapedArray(tuple(s.shape), np.dtype(s.dtype))
  raise ValueError(f"Invalid out_shape type: {type(s)}")


def _keystr(path):
  return tree_util.keystr(path)


def _pytree_mismatch(what1, tree1, what2, tree2):
  return ValueError(f"Pytree for {what1} and {what2} do not match. There are "
                    f"{tree1.num_leaves} leaves in {what1} and {tree2.num_leaves} leaves in "
                    f"{what2}: {what1}: {tree1}, {what2}: {tree2}.")


def _flat_specs(specs, tree, what, against):
  """The block specs, one per leaf of ``tree`` (all ``no_block_spec`` when not given)."""
  if specs is plc.no_block_spec:
    return [plc.no_block_spec] * tree.num_leaves
  flat, specs_tree = tree_util.tree_flatten(
      specs, is_leaf=lambda x: isinstance(x, plc.BlockSpec) or x is None)
  if specs_tree != tree:
    raise _pytree_mismatch(what, specs_tree, against, tree)
  return flat


def _scratch_aval(s):
  if hasattr(s, "get_array_aval"):
    return s.get_array_aval()
  if hasattr(s, "shape") and hasattr(s, "dtype"):
    return ShapedArray(tuple(s.shape), np.dtype(s.dtype))
  raise TypeError(f"Unsupported scratch shape: {s!r}")


def _space(memory_space, default="default"):
  """How a ref's memory space prints in its type (``Ref<vmem>{...}``)."""
  return default if memory_space is None else str(memory_space)


def _kernel_body(kernel, gm, in_tree, out_tree, scratch_tree, src):
  """``body(ids, refs)``: call ``kernel`` on ``refs`` (scalar-prefetch, input, output and
  scratch refs, in that order) with the grid position ``ids`` in its grid environment."""
  grid = gm.kernel_grid
  n_idx, n_in, n_out = gm.num_index_operands, gm.num_inputs, gm.num_outputs

  def body(ids, refs):
    idx_refs = refs[:n_idx]
    in_refs = refs[n_idx:n_idx + n_in]
    out_refs = refs[n_idx + n_in:n_idx + n_in + n_out]
    scratch = refs[n_idx + n_in + n_out:]
    args = list(tree_util.tree_unflatten(in_tree, idx_refs + in_refs))
    outs = tree_util.tree_unflatten(out_tree, out_refs)
    args += list(outs) if isinstance(outs, (tuple, list)) else [outs]
    kw = {}
    if scratch_tree is not None and scratch_tree.num_leaves:
      s = tree_util.tree_unflatten(scratch_tree, scratch)
      if isinstance(s, dict):
        kw = s
      else:
        args += list(s)
    with plc.GridEnv(ids, grid):
      ret = kernel(*args, **kw)
    if ret is not None:
      raise ValueError(f"The kernel function in the pallas_call {src} should return None. "
                       f"It returns a PyTree: {tree_util.tree_structure(ret)}")
  return body


def _captures_error(src, tracer_consts):
  shown = ", ".join(core.get_aval(c).str_short(short_dtypes=True) for c in tracer_consts)
  return ValueError(f"The kernel function in the pallas_call {src} captures constants "
                    f"[{shown}]. You should pass them as inputs.")


class _ProgramIds:
  """The grid position as the stateful trace sees it: ``program_id`` equations."""

  def __init__(self, n):
    self.n = n

  def __getitem__(self, axis):
    if not -self.n <= axis < self.n:
      raise IndexError(axis)
    return stateful.program_id_p.bind(axis=axis % self.n)


def _trace_kernel_stateful(body, gm, n_ids, spaces):
  """The kernel jaxpr with Ref-typed variables (``stateful.py``), or None when the
  kernel uses something that trace does not model (or fails in it: the box trace then
  raises the user's error)."""
  from pyjax._src.interpreters import partial_eval as pe
  avals = [stateful.KernelRefType(a, sp) for a, sp in zip(
      list(gm.index_operand_avals) + [bm.block_aval() for bm in gm.block_mappings]
      + list(gm.scratch_avals), spaces)]

  def flat(*xs):
    body(_ProgramIds(n_ids), [stateful.KernelRef(x) for x in xs])
    return []
  try:
    with stateful.Active():
      closed, tracer_consts = staging.trace_flat(flat, avals)
    if tracer_consts:
      return None
    stateful.check_refs(closed.jaxpr)
  except Exception:   # noqa: BLE001 -- the box trace reports the kernel's own errors
    return None
  jaxpr, _ = pe.dce_jaxpr(closed.jaxpr, [], instantiate=True)
  return core.ClosedJaxpr(jaxpr, closed.consts)


def _discharge(closed, gm, n_ids):
  """The pure kernel of the stateful ``closed``: grid position, values of the refs -> the
  final values of the non-prefetch refs."""
  n_idx = gm.num_index_operands
  avals = ([ShapedArray((), _INT32)] * n_ids
           + [state_types.shaped(v.aval.inner_aval) for v in closed.jaxpr.invars])

  def body(ids, refs):
    stateful.eval_with_boxes(closed.jaxpr, closed.consts, ids, refs)
    return [r.value for r in refs[n_idx:]]
  out, consts = _trace_with_refs(body, avals, n_ids, "kernel")
  assert not consts
  return out


_discharged = {}   # id(stateful kernel Jaxpr) -> (weakref to it, its discharged kernel)


def _remember_discharged(closed, pure):
  key = id(closed.jaxpr)
  _discharged[key] = (weakref.ref(closed.jaxpr), pure)
  weakref.finalize(closed.jaxpr, _discharged.pop, key, None)


def discharged_kernel(closed):
  """The pure kernel ``interpret.py`` runs for the ``jaxpr`` param of a ``pallas_call``
  (the param itself when it was traced with boxes)."""
  hit = _discharged.get(id(closed.jaxpr))
  return hit[1] if hit is not None and hit[0]() is closed.jaxpr else closed


def _trace_kernel(kernel, gm, in_tree, out_tree, scratch_tree, spaces):
  """The kernel jaxpr: stateful (Ref-typed variables, as JAX prints it) when
  ``stateful.py`` models everything the kernel does, else discharged as traced with boxes.
  ``spaces``: the memory space each ref prints with."""
  grid = gm.kernel_grid
  n_ids = len(grid)
  src = staging.fun_source_info(kernel)
  body = _kernel_body(kernel, gm, in_tree, out_tree, scratch_tree, src)
  closed = _trace_kernel_stateful(body, gm, n_ids, spaces)
  if closed is not None:
    _remember_discharged(closed, _discharge(closed, gm, n_ids))
    return closed
  avals = ([ShapedArray((), _INT32)] * n_ids + list(gm.index_operand_avals)
           + [bm.block_aval() for bm in gm.block_mappings] + list(gm.scratch_avals))
  n_idx = gm.num_index_operands

  def boxed(ids, refs):
    body(ids, refs)
    return [r.value for r in refs[n_idx:]]
  closed, tracer_consts = _trace_with_refs(boxed, avals, n_ids, "kernel")
  if tracer_consts:
    raise _captures_error(src, tracer_consts)
  return closed


def pallas_call(kernel, out_shape, *, grid_spec=None, grid=(), in_specs=plc.no_block_spec,
                out_specs=plc.no_block_spec, scratch_shapes=(), input_output_aliases=None,
                debug=False, interpret=False, name=None, compiler_params=None,
                cost_estimate=None, metadata=None):
  """A function that runs ``kernel`` over ``grid``, each invocation seeing the blocks the
  block specs select, and returns the outputs described by ``out_shape`` (JAX's
  ``pl.pallas_call``).

  ``interpret=True`` runs JAX's interpret-mode semantics (outputs start as NaN / the
  integer minimum / False unless aliased, operands padded to whole blocks with the same
  values, the grid in row-major order, blocks written back after each invocation).
  ``interpret=False`` (JAX raises on CPU: Pallas needs interpret mode there) compiles the
  same grid program with pyjax's C compiler -- bit-identical results.  Inside ``jit`` both
  are part of the jitted program.  ``compiler_params``, ``cost_estimate``, ``metadata``
  and memory spaces are accepted and ignored on CPU; ``debug=True`` prints the kernel
  jaxpr."""
  scratch_flat, scratch_tree = tree_util.tree_flatten(scratch_shapes)
  if grid_spec is None:
    grid_spec = plc.GridSpec(grid, in_specs, out_specs, scratch_flat)
  else:
    if grid:
      raise ValueError(f"If `grid_spec` is specified, then `grid` must be `()`. It is {grid}")
    if in_specs is not plc.no_block_spec:
      raise ValueError("If `grid_spec` is specified, then `in_specs` must be `no_block_spec`."
                       f" It is {in_specs}")
    if out_specs is not plc.no_block_spec:
      raise ValueError("If `grid_spec` is specified, then `out_specs` must be "
                       f"`no_block_spec`. It is {out_specs}")
    if scratch_shapes:
      raise ValueError("If `grid_spec` is specified, then `scratch_shapes` must be `()`. It "
                       f"is {scratch_shapes}")
    scratch_flat, scratch_tree = tree_util.tree_flatten(tuple(grid_spec.scratch_shapes))
  aliases = dict(input_output_aliases or {})
  if isinstance(out_shape, list):
    out_shape = tuple(out_shape)
  out_with_paths, out_tree = tree_util.tree_flatten_with_path(out_shape)
  out_paths = [p for p, _ in out_with_paths]
  out_avals = [_out_aval(s) for _, s in out_with_paths]

  traced = {}   # (input structure, avals, x64) -> the primitive's params

  def wrapped(*args):
    arg_with_paths, in_tree = tree_util.tree_flatten_with_path(args)
    import pyjax.numpy as jnp
    flat_args = [a if isinstance(a, core.Tracer) else jnp.asarray(a)
                 for _, a in arg_with_paths]
    in_avals = [state_types.shaped(core.get_aval(a)) for a in flat_args]
    from pyjax._src.config import config
    key = (in_tree, tuple(in_avals), bool(config.jax_enable_x64))
    params = traced.get(key)
    if params is None:
      params = traced[key] = prepare(args, arg_with_paths, in_tree, in_avals)
    outs = pallas_call_p.bind(*flat_args, **params)
    return tree_util.tree_unflatten(out_tree, outs)

  def prepare(args, arg_with_paths, in_tree, in_avals):
    """Trace the kernel and the index maps for these operands: the primitive's params."""
    in_origins = [f"args{_keystr(p)}" for p, _ in arg_with_paths]
    out_origins = [f"outputs{_keystr(p)}" for p in out_paths]
    g = tuple(int(d) for d in grid_spec.grid)
    n_sp = getattr(grid_spec, "num_scalar_prefetch", 0)
    if n_sp:
      sp_leaves = tree_util.tree_leaves(args[:n_sp])
      n_idx = len(sp_leaves)
      rest_tree = tree_util.tree_structure(tuple(args[n_sp:]))
    else:
      n_idx, rest_tree = 0, in_tree
    idx_avals = in_avals[:n_idx]
    specs = _flat_specs(grid_spec.in_specs, rest_tree, "`in_specs`", "`inputs`")
    ospecs = _flat_specs(grid_spec.out_specs, out_tree, "`out_specs`", "`out_shape`")
    bms = [_block_mapping(s, a, o, g, idx_avals)
           for s, a, o in zip(specs, in_avals[n_idx:], in_origins[n_idx:])]
    bms += [_block_mapping(s, a, o, g, idx_avals)
            for s, a, o in zip(ospecs, out_avals, out_origins)]
    gm = GridMapping(g, bms, n_idx, len(in_avals) - n_idx, len(out_avals),
                     [_scratch_aval(s) for s in scratch_flat], (), idx_avals)
    spaces = ([_space(None, "smem")] * n_idx
              + [_space(getattr(s, "memory_space", None)) for s in specs + ospecs]
              + [_space(getattr(s, "memory_space", None)) for s in scratch_flat])
    kjaxpr = _trace_kernel(kernel, gm, in_tree, out_tree, scratch_tree, spaces)
    for i, o in aliases.items():
      if i not in range(len(in_avals)):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with input "
                         f"index {i} outside the range [0, {len(in_avals)})")
      if o not in range(len(out_avals)):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with output "
                         f"index {o} outside the range [0, {len(out_avals)})")
      ia, oa = in_avals[i], out_avals[o]
      if ia.shape != oa.shape or ia.dtype != oa.dtype:
        raise ValueError(
            f"input_output_aliases contains the mapping '{i}:{o}' referring to "
            f"input{_keystr(arg_with_paths[i][0])} with abstract value {ia} and "
            f"to output{_keystr(out_paths[o])} with a different abstract value "
            f"{oa}.")
    if debug:
      print(f"\nJaxpr of the kernel in pallas_call {staging.fun_source_info(kernel)}:")
      print(kjaxpr)
    return with_grid_loop(in_avals, jaxpr=kjaxpr, grid_mapping=gm,
                          input_output_aliases=tuple(aliases.items()), interpret=interpret,
                          debug=debug, name=name, compiler_params=compiler_params,
                          cost_estimate=cost_estimate, out_avals=tuple(out_avals))
  return wrapped


def with_grid_loop(in_avals, **params):
  """``params`` plus the ``grid_loop`` (the grid program traced on ``in_avals``)."""
  from pyjax._src.pallas import interpret as _interp
  params["grid_loop"] = _interp.grid_program(discharged_kernel(params["jaxpr"]),
                                             params["grid_mapping"],
                                             params["input_output_aliases"], list(in_avals))
  return params


def bind(args, **params):
  """Bind ``pallas_call_p`` on ``args`` with ``params`` plus its ``grid_loop``."""
  params = with_grid_loop([state_types.shaped(core.get_aval(a)) for a in args], **params)
  return pallas_call_p.bind(*args, **params)


# --- rules ----------------------------------------------------------------------------------
@pallas_call_p.def_effectful_abstract_eval
def _abstract(*avals, out_avals, grid_loop, **_):
  return list(out_avals), core.jaxpr_effects(grid_loop.jaxpr)


_compiled = {}


@pallas_call_p.def_impl
def _impl(*args, grid_loop, interpret, **_):
  """Eagerly, the grid program runs as a jitted program (as JAX's interpret mode runs
  as an XLA computation): with ``interpret=True`` on whatever tier ``jit`` starts on (the
  NumPy plan for first calls), with ``interpret=False`` compiled to C before the first
  call.  The tiers give the same bits."""
  from pyjax._src import api
  key = (id(grid_loop), bool(interpret))
  hit = _compiled.get(key)
  if hit is None or hit[0] is not grid_loop:
    fn = api.jit(lambda *xs: core.eval_jaxpr(grid_loop.jaxpr, grid_loop.consts, *xs))
    hit = _compiled[key] = (grid_loop, fn if interpret else fn.lower(*args).compile())
    if len(_compiled) > 256:
      _compiled.pop(next(iter(_compiled)))
  return list(hit[1](*args))


def _param_printer(params):
  """JAX's params (its ``mesh`` and ``metadata`` are always None here), less the
  ``grid_loop``."""
  out = {k: v for k, v in params.items() if k != "grid_loop"}
  out.update(mesh=None, metadata=None)
  return out


pallas_call_p.param_printer = _param_printer


def _jvp(primals, tangents, *, grid_loop, **_):
  from pyjax._src import api_ad
  ts = [ad.instantiate_zeros(t) for t in tangents]
  fn = lambda *xs: list(core.eval_jaxpr(grid_loop.jaxpr, grid_loop.consts, *xs))  # noqa: E731
  return api_ad.jvp(fn, list(primals), ts)


ad.primitive_jvps[pallas_call_p] = _jvp


def _batched_index_map(bm, batched, n_idx_avals):
  """The index map of ``bm`` on a grid with a new leading axis: the batch index first for
  a batched operand (a new squeezed block dimension), else ignored."""
  old = bm.index_map
  n_grid = len(old.in_avals) - n_idx_avals
  avals = [ShapedArray((), _INT32)] + list(old.in_avals)

  def fn(*xs):
    b, rest = xs[0], xs[1:]
    outs = core.eval_jaxpr(old.jaxpr, old.consts, *rest)
    return [b] + list(outs) if batched else list(outs)
  del n_grid
  closed, _ = staging.trace_flat(fn, avals)
  return closed


def _batch(args, dims, *, jaxpr, grid_mapping, input_output_aliases, out_avals, grid_loop,
           **params):
  gm = grid_mapping
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not batching.not_mapped)
  n_idx = gm.num_index_operands
  if any(d is not batching.not_mapped for d in dims[:n_idx]):
    raise NotImplementedError("vmap of a pallas_call over scalar-prefetch operands")
  aliased_in = {i for i, _ in input_output_aliases}
  new_args, bms = list(args[:n_idx]), []
  for k, (x, d) in enumerate(zip(args[n_idx:], dims[n_idx:])):
    bm = gm.block_mappings[k]
    if d is batching.not_mapped and (n_idx + k) in aliased_in:
      x, d = batching.broadcast(x, size, 0), 0
    if d is batching.not_mapped:
      bms.append(BlockMapping(bm.block_shape, _batched_index_map(bm, False, n_idx),
                              bm.array_aval, bm.origin))
    else:
      x = batching.moveaxis(x, d, 0)
      a = bm.array_aval
      bms.append(BlockMapping((plc.squeezed,) + bm.block_shape,
                              _batched_index_map(bm, True, n_idx),
                              ShapedArray((size,) + tuple(a.shape), a.dtype, a.weak_type),
                              bm.origin))
    new_args.append(x)
  new_out = []
  for bm, oa in zip(gm.block_mappings_output, out_avals):
    bms.append(BlockMapping((plc.squeezed,) + bm.block_shape,
                            _batched_index_map(bm, True, n_idx),
                            ShapedArray((size,) + tuple(oa.shape), oa.dtype, oa.weak_type),
                            bm.origin))
    new_out.append(ShapedArray((size,) + tuple(oa.shape), oa.dtype, oa.weak_type))
  new_gm = gm.replace(grid=(size,) + gm.grid, block_mappings=bms,
                      vmapped_dims=(0,) + tuple(v + 1 for v in gm.vmapped_dims))
  outs = bind(new_args, jaxpr=jaxpr, grid_mapping=new_gm,
              input_output_aliases=input_output_aliases, out_avals=tuple(new_out), **params)
  return outs, [0] * len(outs)


batching.primitive_batchers[pallas_call_p] = _batch
