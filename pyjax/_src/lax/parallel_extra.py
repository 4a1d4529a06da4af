"""More collectives over named (vmap) axes: ``pbroadcast``, ``pswapaxes``,
``ragged_all_to_all``, ``pcast``, and the point-to-point ``psend``/``precv``.

pyjax's named axes are ``vmap`` axes (there is no ``shard_map``): every member of an axis
lives in one batched array, so collectives are batching rules.  ``pbroadcast`` gives
every member the ``source`` member's value; ``ragged_all_to_all`` moves ragged slices
between members as JAX documents (and, unlike JAX, works under ``vmap``).  ``pcast``
changes the varying-manual-axes type, which only exists inside ``shard_map`` (where a
cast to 'varying' binds ``pvary``, the identity on values, read by check_vma); as in JAX
outside ``shard_map`` it is the identity for no axes and raises otherwise.
``psend``/``precv`` are device-to-device transfers paired through a token; a ``vmap`` axis
cannot pair them, so they stage (with an axis environment) but raise when run.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import parallel as _par
from pyjax._src.lax import shapes as _shapes
from pyjax._src.lax import slicing as _sl
from pyjax._src.lax import tokens as _tok

__all__ = ["pbroadcast", "pswapaxes", "pcast", "psend", "precv", "ragged_all_to_all",
           "ragged_all_to_all_p", "pvary_p"]

_nm = batching.not_mapped


def _names(axis_name):
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


# --- pbroadcast -----------------------------------------------------------------------------
pbroadcast_p = core.Primitive("pbroadcast")


@pbroadcast_p.def_abstract_eval
def _pbroadcast_abstract(x, *, axis_name, source):
  batching.check_axis_names("pbroadcast", _par._named(_names(axis_name)))
  return ShapedArray(x.shape, x.dtype, x.weak_type)


@pbroadcast_p.def_impl
def _pbroadcast_impl(x, *, axis_name, source):
  _par._unbound(_par._named(_names(axis_name)), "pbroadcast")


def _pbroadcast_collective(axis_data, args, dims, *, axis_name, source):
  names = _names(axis_name)
  if tuple(names) != (axis_data.name,):
    raise NotImplementedError("pbroadcast batcher only supports a single axis")
  x, = args
  d, = dims
  size = axis_data.size
  if not 0 <= source < size:
    raise ValueError(f"pbroadcast: source {source} is out of range for an axis of size {size}")
  if d is _nm:
    return x, _nm
  piece = _shapes.slice_in_dim(x, source, source + 1, axis=d)
  shape = list(core.get_aval(x).shape)
  return _shapes.broadcast_in_dim(piece, tuple(shape), tuple(range(len(shape)))), d


def _pbroadcast_passthrough(args, dims, **params):
  x, = args
  d, = dims
  return pbroadcast_p.bind(x, **params), d


def _pbroadcast_transpose(ct, x, *, axis_name, source):
  is_source = _ew.eq(_par.axis_index(axis_name), np.int32(source))
  total = _par.psum(ad.instantiate_zeros(ct), axis_name)
  zeros = ad.zeros_like(total)
  return [_ew.select(_shapes.broadcast_in_dim(is_source, core.get_aval(total).shape, ()),
                     total, zeros)]


batching.axis_name_getters[pbroadcast_p] = lambda params: _names(params["axis_name"])
batching.collective_batchers[pbroadcast_p] = _pbroadcast_collective
batching.primitive_batchers[pbroadcast_p] = _pbroadcast_passthrough
ad.deflinear2(pbroadcast_p, _pbroadcast_transpose)


def pbroadcast(x, axis_name, source):
  """Every member of ``axis_name`` gets the value of ``x`` (a pytree) at member
  ``source``."""
  return tree_util.tree_map(
      lambda leaf: pbroadcast_p.bind(_par._as_array(leaf), axis_name=axis_name,
                                     source=source), x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swap the named axis with positional ``axis`` (whose size must equal the axis size):
  ``all_to_all(x, axis_name, axis, axis)``."""
  return _par.all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- pcast ------------------------------------------------------------------------------------
_PCAST_TO = ("reduced", "unreduced", "varying")

# ``pvary[axes=...]``: the identity on values, recorded so that ``shard_map``'s check_vma
# walk (``shard_map_vma.py``) sees that the result varies along ``axes``.  Its transpose
# is the identity too: pyjax's shard_map transpose sums an input's cotangent over the
# axes its in_spec leaves out (where JAX transposes pvary to psum inside the body).
pvary_p = core.Primitive("pvary")
pvary_p.def_abstract_eval(lambda aval, *, axes: aval)
batching.primitive_batchers[pvary_p] = (
    lambda args, dims, *, axes: (pvary_p.bind(args[0], axes=axes), dims[0]))
ad.deflinear2(pvary_p, lambda ct, x, *, axes: [ct])


def pcast(x, axis_name, *, to):
  """Cast the varying-manual-axes type of ``x`` over ``axis_name`` (``to`` is 'varying',
  'reduced' or 'unreduced').  Those types exist only inside ``shard_map``: there, over
  its manual axes, ``to='varying'`` binds ``pvary`` (the identity on each device's value;
  ``shard_map``'s check_vma walk reads it; pyjax has no varying types on avals).
  Elsewhere (and for 'reduced'/'unreduced', which pyjax does not model) it raises as JAX
  does outside ``shard_map``; it is the identity for an empty ``axis_name``."""
  if isinstance(axis_name, (set, frozenset)):
    raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
  if not axis_name:
    return x
  if to not in _PCAST_TO:
    raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                     f"{{{', '.join(repr(t) for t in _PCAST_TO)}}}")

  manual = {n for n, _ in getattr(batching._axis_env, "frames", ())}   # shard_map's axes
  if to == "varying" and all(n in manual for n in _names(axis_name)):
    axes = tuple(_names(axis_name))
    return tree_util.tree_map(lambda leaf: pvary_p.bind(leaf, axes=axes), x)

  def one(leaf):
    if to == "varying":
      raise ValueError("pvary should be called under jax.shard_map.")
    if to == "reduced":
      raise ValueError("preduced should be called under jax.shard_map.")
    raise ValueError(f"Unsupported pcast from=invarying, to={to!r}")
  return tree_util.tree_map(one, x)


# --- psend / precv ----------------------------------------------------------------------------
_P2P_MSG = ("{} is a point-to-point transfer between devices (jax.shard_map); a vmap axis "
            "cannot pair a send with its receive, and pyjax has no shard_map")

psend_p = core.Primitive("psend")


@psend_p.def_abstract_eval
def _psend_abstract(x, *, axis_name, perm):
  batching.check_axis_names("psend", _par._named(axis_name))
  return _tok.abstract_token


@psend_p.def_impl
def _psend_impl(x, *, axis_name, perm):
  _par._unbound(_par._named(axis_name), "psend")


def _p2p_collective(name):
  def rule(axis_data, args, dims, **params):
    raise NotImplementedError(_P2P_MSG.format(name))
  return rule


def _p2p_passthrough(name):
  def rule(args, dims, **params):
    raise NotImplementedError(_P2P_MSG.format(name))
  return rule


precv_p = core.Primitive("precv")


@precv_p.def_abstract_eval
def _precv_abstract(token, *, out_shape, axis_name, perm):
  batching.check_axis_names("precv", _par._named(axis_name))
  return out_shape


@precv_p.def_impl
def _precv_impl(token, *, out_shape, axis_name, perm):
  _par._unbound(_par._named(axis_name), "precv")


for _p, _n in ((psend_p, "psend"), (precv_p, "precv")):
  batching.axis_name_getters[_p] = lambda params: params["axis_name"]
  batching.collective_batchers[_p] = _p2p_collective(_n)
  batching.primitive_batchers[_p] = _p2p_passthrough(_n)


def psend(x, axis_name, perm):
  """Send ``x`` (a pytree) along ``axis_name`` by ``perm`` ((source, destination) pairs);
  returns a token for ``precv``.  Stages with an axis environment; cannot run in pyjax
  (see the module docstring)."""
  names = _names(axis_name)
  perm = tuple(tuple(int(i) for i in p) for p in perm)
  return tree_util.tree_map(
      lambda leaf: psend_p.bind(_par._as_array(leaf), axis_name=names, perm=perm), x)


def precv(token, out_shape, axis_name, perm):
  """Receive a value of ``out_shape`` (a ShapeDtypeStruct) sent by ``psend``.  Stages
  with an axis environment; cannot run in pyjax (see the module docstring)."""
  names = _names(axis_name)
  return precv_p.bind(token, out_shape=ShapedArray(tuple(out_shape.shape),
                                                   np.dtype(out_shape.dtype)),
                      axis_name=names, perm=tuple(tuple(int(i) for i in p) for p in perm))


# --- ragged_all_to_all ------------------------------------------------------------------------
ragged_all_to_all_p = core.Primitive("ragged_all_to_all")


@ragged_all_to_all_p.def_abstract_eval
def _ragged_a2a_abstract(operand, output, input_offsets, send_sizes, output_offsets,
                         recv_sizes, *, axis_name, axis_index_groups):
  for name, a in (("input_offsets", input_offsets), ("send_sizes", send_sizes),
                  ("output_offsets", output_offsets), ("recv_sizes", recv_sizes)):
    if not dtypes.is_int(a.dtype):
      raise ValueError(f"ragged_all_to_all {name} must be integer type.")
  for name, a in (("input_offsets", input_offsets), ("send_sizes", send_sizes),
                  ("output_offsets", output_offsets), ("recv_sizes", recv_sizes)):
    if len(a.shape) != 1 or a.shape[0] < 1:
      raise ValueError(f"ragged_all_to_all {name} must be rank 1 with positive dimension "
                       f"size, but got shape {a.shape}")
  batching.check_axis_names("ragged_all_to_all", _par._named(axis_name))
  return ShapedArray(output.shape, output.dtype, False)


@ragged_all_to_all_p.def_impl
def _ragged_a2a_impl(*args, **params):
  raise RuntimeError("ragged_all_to_all must be used within a mapped context like vmap or "
                     "shard_map.")


def _ragged_a2a_collective(axis_data, args, dims, *, axis_name, axis_index_groups):
  """Every member's slices written into the receivers' outputs: member d's slice i (rows
  ``input_offsets[d, i] + [0, send_sizes[d, i])``) goes to member ``i // (K / N)`` at rows
  ``output_offsets[d, i] + [0, send_sizes[d, i])``."""
  _par._no_groups(axis_index_groups)
  if tuple(axis_name) != (axis_data.name,):
    raise NotImplementedError("ragged_all_to_all over several named axes at once is not "
                              "supported")
  n = axis_data.size
  operand, output, in_off, send, out_off, _ = [batching.bdim_at_front(x, d, n)
                                               for x, d in zip(args, dims)]
  oa, ua = core.get_aval(operand), core.get_aval(output)
  r, m = oa.shape[1], ua.shape[1]
  k = core.get_aval(in_off).shape[1]
  if k % n:
    raise ValueError(f"ragged_all_to_all: the number of slices ({k}) must be divisible by the "
                     f"axis size ({n})")
  spd = k // n
  idt = np.dtype(np.int32)
  conv = lambda x: _ew.convert_element_type(x, idt)
  in_off, send, out_off = conv(in_off), conv(send), conv(out_off)
  shape3 = (n, k, r)
  rows = _shapes.broadcasted_iota(idt, shape3, 2)
  b = lambda x: _shapes.broadcast_in_dim(x, shape3, (0, 1))
  lo = b(in_off)
  inside = _ew.bitwise_and(_ew.ge(rows, lo), _ew.lt(rows, _ew.add(lo, b(send))))
  dest_dev = _ew.div(_shapes.broadcasted_iota(idt, shape3, 1), np.int32(spd))
  dest_row = _ew.add(b(out_off), _ew.sub(rows, lo))
  inside = _ew.bitwise_and(inside, _ew.bitwise_and(_ew.ge(dest_row, np.int32(0)),
                                                   _ew.lt(dest_row, np.int32(m))))
  flat = _ew.add(_ew.mul(dest_dev, np.int32(m)), dest_row)
  flat = _ew.select(inside, flat, _shapes.full(shape3, n * m, idt))   # out of range: dropped
  rest = oa.shape[2:]
  upd = _shapes.broadcast_in_dim(operand, (n, k, r) + rest,
                                 (0, 2) + tuple(range(3, 3 + len(rest))))
  upd = _shapes.reshape(upd, (n * k * r,) + rest)
  idx = _shapes.reshape(flat, (n * k * r, 1))
  target = _shapes.reshape(output, (n * m,) + rest)
  dn = _sl.ScatterDimensionNumbers(update_window_dims=tuple(range(1, 1 + len(rest))),
                                   inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  out = _sl.scatter(target, idx, upd, dn, mode=_sl.GatherScatterMode.FILL_OR_DROP)
  return _shapes.reshape(out, (n, m) + rest), 0


def _ragged_a2a_passthrough(args, dims, *, axis_name, axis_index_groups):
  # Another axis is vmapped: fold its members into the ragged rows (each example's rows
  # and output rows become consecutive blocks), as JAX does.
  if axis_index_groups:
    raise NotImplementedError("Please open a feature request!")
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _nm)
  operand, output = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:2], dims[:2])]
  nrows, mrows = core.get_aval(operand).shape[1], core.get_aval(output).shape[1]

  def second(x, d):
    return batching.bdim_to(x, d, 1, size)
  in_off, send, out_off, recv = [second(x, d) for x, d in zip(args[2:], dims[2:])]
  it = lambda x, nn: _ew.add(x, _shapes.broadcast_in_dim(
      _ew.mul(_shapes.iota(core.get_aval(x).dtype, size),
              np.array(nn, core.get_aval(x).dtype)), core.get_aval(x).shape, (1,)))
  in_off, out_off = it(in_off, nrows), it(out_off, mrows)
  def merge(x):
    shape = core.get_aval(x).shape
    return _shapes.reshape(x, (shape[0] * shape[1],) + tuple(shape[2:]))
  vals = [merge(v) for v in (operand, output, in_off, send, out_off, recv)]
  out = ragged_all_to_all_p.bind(*vals, axis_name=axis_name, axis_index_groups=None)
  return _shapes.reshape(out, (size, mrows) + tuple(core.get_aval(out).shape[1:])), 0


def _ragged_a2a_jvp(primals, tangents, **params):
  operand, output, *rest = primals
  dop, dout, *_ = tangents
  res = ragged_all_to_all_p.bind(operand, output, *rest, **params)
  if type(dop) is ad.Zero and type(dout) is ad.Zero:
    return res, ad.Zero.from_primal_value(res)
  t = ragged_all_to_all_p.bind(ad.instantiate_zeros(dop), ad.instantiate_zeros(dout), *rest,
                               **params)
  return res, t


def _ragged_a2a_transpose(ct, operand, output, input_offsets, send_sizes, output_offsets,
                          recv_sizes, *, axis_name, axis_index_groups):
  ct = ad.instantiate_zeros(ct)
  op_aval = operand.aval if ad.is_undefined_primal(operand) else core.get_aval(operand)
  zero = ad.zeros_like_aval(op_aval)
  out_off_ = _par.all_to_all(output_offsets, axis_name, 0, 0, tiled=True)
  in_off_ = _par.all_to_all(input_offsets, axis_name, 0, 0, tiled=True)
  operand_t = ragged_all_to_all_p.bind(ct, zero, out_off_, recv_sizes, in_off_, send_sizes,
                                       axis_name=axis_name, axis_index_groups=axis_index_groups)
  # the output's cotangent: zero where received rows overwrote it
  m = core.get_aval(ct).shape[0]
  rows = _shapes.broadcasted_iota(np.dtype(np.int32), (core.get_aval(out_off_).shape[0], m), 1)
  lo = _shapes.broadcast_in_dim(_ew.convert_element_type(out_off_, np.int32), core.get_aval(rows).shape, (0,))
  hi = _ew.add(lo, _shapes.broadcast_in_dim(_ew.convert_element_type(recv_sizes, np.int32),
                                            core.get_aval(rows).shape, (0,)))
  from pyjax._src.lax import reductions as _red
  hit = _red.reduce_or(_ew.bitwise_and(_ew.ge(rows, lo), _ew.lt(rows, hi)), (0,))
  ca = core.get_aval(ct)
  hit = _shapes.broadcast_in_dim(hit, ca.shape, (0,))
  output_t = _ew.select(hit, ad.zeros_like_aval(ca), ct)
  return [operand_t if ad.is_undefined_primal(operand) else None,
          output_t if ad.is_undefined_primal(output) else None, None, None, None, None]


batching.axis_name_getters[ragged_all_to_all_p] = lambda params: params["axis_name"]
batching.collective_batchers[ragged_all_to_all_p] = _ragged_a2a_collective
batching.primitive_batchers[ragged_all_to_all_p] = _ragged_a2a_passthrough
ad.primitive_jvps[ragged_all_to_all_p] = _ragged_a2a_jvp
ad.primitive_transposes[ragged_all_to_all_p] = _ragged_a2a_transpose


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):
  """Ragged all-to-all over ``axis_name``: each member sends rows
  ``operand[input_offsets[i]:input_offsets[i]+send_sizes[i]]`` to member
  ``i // (len(input_offsets) / axis_size)``, which writes them at rows
  ``output_offsets[i]`` (the *sender's* offsets) of its copy of ``output``; ``recv_sizes``
  are the sizes each member receives.  Differs from JAX: works under ``vmap`` over the
  named axis (JAX raises NotImplementedError there)."""
  names = _names(axis_name)
  groups = None if axis_index_groups is None else tuple(tuple(g) for g in axis_index_groups)
  return ragged_all_to_all_p.bind(operand, output, input_offsets, send_sizes, output_offsets,
                                  recv_sizes, axis_name=names, axis_index_groups=groups)
