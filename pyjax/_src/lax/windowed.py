"""Windowed reductions: reduce_window_{sum,max,min}, the generic variadic reduce_window,
and select_and_scatter_add / select_and_gather_add (the pieces of max-pooling's gradient).

Window geometry (as XLA): the operand is first dilated by ``base_dilation`` (holes between
elements), then padded by ``padding`` pairs (negative values crop); windows of
``window_dimensions`` elements spaced by ``window_dilation`` slide by ``window_strides``.
Padding and holes hold no elements: a window reduces only the operand elements it covers,
starting once from the init value (the identity for the dedicated primitives).
"""
from __future__ import annotations

import itertools
import operator

from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import reductions as _red
from pyjax._src.lax import shapes as _shapes

__all__ = [
    "reduce_window", "reduce_window_shape_tuple",
    "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
    "select_and_scatter_add_p", "select_and_gather_add_p",
]


# --- geometry ---------------------------------------------------------------------------
def _ints(xs):
  return tuple(operator.index(x) for x in xs)


def _dilate_shape(shape, dilation):
  return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation))


def _padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """Explicit (lo, hi) pads for 'VALID', 'SAME' or 'SAME_LOWER' (case-insensitive).

  A private copy of ``lax.padtype_to_pads`` (owned by the convolution module)."""
  kind = padding.upper() if isinstance(padding, str) else padding
  if kind not in ("VALID", "SAME", "SAME_LOWER"):
    raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                       f"'SAME_LOWER', got {padding}.")
  if kind == "VALID":
    return tuple((0, 0) for _ in in_shape)
  pads = []
  for d, w, s in zip(in_shape, window_shape, window_strides):
    out = -(-d // s)
    total = max((out - 1) * s + w - d, 0)
    lo, hi = total // 2, total - total // 2
    pads.append((hi, lo) if kind == "SAME_LOWER" else (lo, hi))
  return tuple(pads)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
  """The output shape of a windowed reduction (empty windows give size 0)."""
  if base_dilation is not None:
    operand_shape = _dilate_shape(operand_shape, base_dilation)
  if window_dilation is not None:
    window_dimensions = _dilate_shape(window_dimensions, window_dilation)
  out = []
  for d, (lo, hi), w, s in zip(operand_shape, padding, window_dimensions, window_strides):
    padded = d + lo + hi
    out.append((padded - w) // s + 1 if padded >= w else 0)
  return tuple(out)


def _check_window(shape, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
  wd = window_dimensions
  if len(wd) != len(shape):
    raise TypeError("reduce_window got the wrong number of window_dimensions for operand: "
                    f"got operand shape {shape} with window_dimensions {wd}.")
  for name, v in (("window_strides", window_strides), ("base_dilation", base_dilation),
                  ("window_dilation", window_dilation)):
    if len(v) != len(wd):
      raise TypeError(f"reduce_window got inconsistent {name} and window_dimensions: got "
                      f"{name} {v} and window_dimensions {wd}.")
  if not all(w > 0 for w in wd):
    raise TypeError("reduce_window window_dimensions must have every element be strictly "
                    f"positive, got {wd}.")
  if not all(s > 0 for s in window_strides):
    raise TypeError("reduce_window window_strides must have every element be strictly "
                    f"positive, got {window_strides}.")
  for v in (base_dilation, window_dilation):
    if not all(r > 0 for r in v):
      raise TypeError(f"All dilations must be positive, got {v}.")
  if len(padding) != len(wd):
    raise ValueError(f"reduce_window got inconsistent padding and window_dimensions: got "
                     f"padding {padding} and window_dimensions {wd}.")
  return reduce_window_shape_tuple(shape, wd, window_strides, padding, base_dilation,
                                   window_dilation)


# --- reduce_window_{sum,max,min} --------------------------------------------------------
def _window_reduction(name, number_only):
  p = core.Primitive(name)
  p.arg_names = ("operand",)

  @p.def_abstract_eval
  def abstract(operand, *, window_dimensions, window_strides, padding, base_dilation,
               window_dilation):
    if number_only and not _red._is_number(operand.dtype):
      raise TypeError(f"operand to {name} must have a number dtype, got "
                      f"{operand.dtype.name}")
    shape = _check_window(operand.shape, window_dimensions, window_strides, padding,
                          base_dilation, window_dilation)
    return ShapedArray(shape, operand.dtype, operand.weak_type)
  return p


reduce_window_sum_p = _window_reduction("reduce_window_sum", True)
reduce_window_max_p = _window_reduction("reduce_window_max", False)
reduce_window_min_p = _window_reduction("reduce_window_min", False)


def _canon_window_args(nd, window_strides, padding, base_dilation, window_dilation):
  ones = (1,) * nd
  return (ones if window_strides is None else _ints(window_strides),
          tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding),
          ones if base_dilation is None else _ints(base_dilation),
          ones if window_dilation is None else _ints(window_dilation))


def _make_window_fn(prim):
  def f(operand, window_dimensions, window_strides, padding, base_dilation=None,
        window_dilation=None):
    wd = _ints(window_dimensions)
    ws, pads, bd, wdil = _canon_window_args(len(wd), window_strides, padding, base_dilation,
                                            window_dilation)
    return prim.bind(operand, window_dimensions=wd, window_strides=ws, padding=pads,
                     base_dilation=bd, window_dilation=wdil)
  f.__name__ = "_" + prim.name
  return f


_reduce_window_sum = _make_window_fn(reduce_window_sum_p)
_reduce_window_max = _make_window_fn(reduce_window_max_p)
_reduce_window_min = _make_window_fn(reduce_window_min_p)


# --- generic reduce_window --------------------------------------------------------------
reduce_window_p = core.Primitive("reduce_window")
reduce_window_p.multiple_results = True


@reduce_window_p.def_abstract_eval
def _reduce_window_abstract(*avals, jaxpr, consts, window_dimensions, window_strides, padding,
                            base_dilation, window_dilation):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(a.dtype != i.dtype for a, i in zip(operands, inits)):
    raise TypeError("reduce_window got inconsistent dtypes for operands and init_values: got "
                    f"operand dtypes {[a.dtype for a in operands]} and init_value dtypes "
                    f"{[i.dtype for i in inits]}.")
  if any(i.shape for i in inits):
    raise TypeError("reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[i.shape for i in inits]}.")
  shape0 = operands[0].shape
  if any(a.shape != shape0 for a in operands):
    raise TypeError("reduce_window got inconsistent operand shapes: "
                    f"{[a.shape for a in operands]}.")
  out_shape = _check_window(shape0, window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
  outs = jaxpr.out_avals
  if len(outs) != n:
    raise ValueError(f"reduce_window computation must produce {n} values (one per operand), "
                     f"but produces {len(outs)}")
  for i, (o, a) in enumerate(zip(outs, operands)):
    if o.shape != () or o.dtype != a.dtype:
      raise ValueError(f"reduce_window computation's result {i} must be a scalar of dtype "
                       f"{a.dtype.name} (the operand's), got {o.str_short(short_dtypes=True)}")
  return [ShapedArray(out_shape, a.dtype, False) for a in operands]


def _get_monoid_window_reducer(computation, init_values):
  if len(init_values) != 1:
    return None
  c = _red._concrete_scalar(init_values[0])
  if c is None:
    return None
  val, d = c
  if computation is _ew.add:
    return _reduce_window_sum if _red._equal(val, 0) else None
  if computation is _ew.max:
    return _reduce_window_max if _red._equal(val, _red._max_identity(d)) else None
  if computation is _ew.min:
    return _reduce_window_min if _red._equal(val, _red._min_identity(d)) else None
  return None


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduce each window of ``operand`` (a pytree of equal-shape arrays) with
  ``computation(acc, x) -> acc``, starting once from the scalar ``init_value`` and skipping
  padding and base-dilation holes.

  ``padding`` is 'VALID', 'SAME', 'SAME_LOWER' or a sequence of (lo, hi) pairs (negative
  values crop).  ``lax.add`` with init 0 and ``lax.max``/``lax.min`` with the dtype's
  lowest/highest value become reduce_window_sum/max/min, as in JAX; anything else binds the
  generic ``reduce_window`` primitive, whose eager CPU implementation folds the window
  elements in row-major order.
  """
  tu = _red._tree()
  flat_operands, operand_tree = tu.tree_flatten(operand)
  flat_inits, init_tree = tu.tree_flatten(init_value)
  if operand_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{operand_tree} vs. {init_tree}")
  if len(flat_operands) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values: "
                     f"{len(flat_operands)} vs. {len(flat_inits)}")
  wd = _ints(window_dimensions)
  if window_strides is None:
    window_strides = (1,) * len(wd)
  window_strides = _ints(window_strides)
  if isinstance(padding, str):
    shape = core.get_aval(flat_operands[0]).shape
    win = wd if window_dilation is None else _dilate_shape(wd, _ints(window_dilation))
    padding = _padtype_to_pads(shape, win, window_strides, padding)
  ws, pads, bd, wdil = _canon_window_args(len(wd), window_strides, padding, base_dilation,
                                          window_dilation)
  monoid = _get_monoid_window_reducer(computation, flat_inits)
  if monoid is not None:
    out = monoid(flat_operands[0], wd, ws, pads, bd, wdil)
    return tu.tree_unflatten(operand_tree, [out])
  op_avals = [core.get_aval(x) for x in flat_operands]
  init_avals = [core.get_aval(x) for x in flat_inits]
  if any(a.dtype != i.dtype for a, i in zip(op_avals, init_avals)):
    raise TypeError("reduce_window got inconsistent dtypes for operands and init_values: got "
                    f"operand dtypes {[a.dtype for a in op_avals]} and init_value dtypes "
                    f"{[i.dtype for i in init_avals]}.")
  if any(i.shape for i in init_avals):
    raise TypeError("reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[i.shape for i in init_avals]}.")
  closed = _red._trace_reducer(
      computation, [ShapedArray((), i.dtype, i.weak_type) for i in init_avals], operand_tree,
      "Reduction")
  outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=closed.jaxpr,
                              consts=tuple(closed.consts), window_dimensions=wd,
                              window_strides=ws, padding=pads, base_dilation=bd,
                              window_dilation=wdil)
  return tu.tree_unflatten(operand_tree, outs)


# --- select_and_scatter_add / select_and_gather_add -------------------------------------
select_and_scatter_add_p = core.Primitive("select_and_scatter_add")
select_and_scatter_add_p.arg_names = ("source", "operand")


@select_and_scatter_add_p.def_abstract_eval
def _select_and_scatter_add_abstract(source, operand, *, select_prim, window_dimensions,
                                     window_strides, padding):
  ones = (1,) * len(window_dimensions)
  out = _check_window(operand.shape, window_dimensions, window_strides, padding, ones, ones)
  if source.shape != out:
    raise ValueError(f"select_and_scatter_add expects source of shape {out} (the windowed "
                     f"reduction's output shape), got {source.shape}")
  if source.dtype != operand.dtype:
    raise TypeError("select_and_scatter_add requires source and operand to have the same "
                    f"dtype, got {source.dtype.name} and {operand.dtype.name}")
  return ShapedArray(operand.shape, source.dtype, source.weak_type)


select_and_gather_add_p = core.Primitive("select_and_gather_add")
select_and_gather_add_p.arg_names = ("tangents", "operand")


@select_and_gather_add_p.def_abstract_eval
def _select_and_gather_add_abstract(tangents, operand, *, select_prim, window_dimensions,
                                    window_strides, padding, base_dilation, window_dilation):
  if tangents.shape != operand.shape:
    raise ValueError("select_and_gather_add requires tangents and operand of equal shapes, "
                     f"got {tangents.shape} and {operand.shape}")
  out = _check_window(operand.shape, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation)
  return ShapedArray(out, tangents.dtype, tangents.weak_type)


def _select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                            padding):
  """Add each ``source`` element to the operand position its window selects
  (``select_prim`` is ``lax.ge_p`` for max-pooling, ``lax.le_p`` for min-pooling: the
  first maximum/minimum wins); the result has the operand's shape."""
  wd = _ints(window_dimensions)
  ws, pads, _, _ = _canon_window_args(len(wd), window_strides, padding, None, None)
  return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim,
                                       window_dimensions=wd, window_strides=ws, padding=pads)


def _select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                           padding, base_dilation, window_dilation):
  """For each window of ``operand``, the ``tangents`` element at the position
  ``select_prim`` selects (0 where a window covers no element)."""
  wd = _ints(window_dimensions)
  ws, pads, bd, wdil = _canon_window_args(len(wd), window_strides, padding, base_dilation,
                                          window_dilation)
  return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim,
                                      window_dimensions=wd, window_strides=ws, padding=pads,
                                      base_dilation=bd, window_dilation=wdil)



# --- differentiation rules ----------------------------------------------------------------
# JVPs and transposes (pyjax._src.interpreters.ad's tables).  reduce_window_sum is linear
# (its transpose pads the cotangent and sums windows again, JAX's formula);
# reduce_window_max/min take the tangent at the selected element (select_and_gather_add,
# first maximum wins); select_and_gather_add and select_and_scatter_add transpose into each
# other.  The generic reduce_window's JVP folds its windows (below).
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                          lhs_dilation, rhs_dilation):
  lhs_d = _dilate_shape(in_shape, lhs_dilation)
  rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
  out_d = _dilate_shape(out_shape, window_strides)
  before = [r - lo - 1 for r, (lo, _) in zip(rhs_d, padding)]
  after = [l + r - 1 - o - b for l, r, o, b in zip(lhs_d, rhs_d, out_d, before)]
  return tuple(zip(before, after))


def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  in_shape = operand.aval.shape
  ct_shape = core.get_aval(ct).shape
  pads = _conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, ct_shape, padding,
                               base_dilation, window_dilation)
  cfg = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides))
  dt = core.get_aval(ct).dtype
  padded = _shapes.pad_p.bind(ct, _ad.scalar_const(0, dt), padding_config=cfg)
  ones = (1,) * len(in_shape)
  out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                 window_strides=tuple(base_dilation),
                                 padding=((0, 0),) * len(in_shape), base_dilation=ones,
                                 window_dilation=tuple(window_dilation))
  return [out]


_ad.deflinear2(reduce_window_sum_p, _reduce_window_sum_transpose)


def _reduce_window_chooser_jvp(prim, select_prim):
  def rule(primals, tangents, **params):
    operand, = primals
    g, = tangents
    out = prim.bind(operand, **params)
    return out, select_and_gather_add_p.bind(g, operand, select_prim=select_prim, **params)
  _ad.primitive_jvps[prim] = rule


_reduce_window_chooser_jvp(reduce_window_max_p, _ew.ge_p)
_reduce_window_chooser_jvp(reduce_window_min_p, _ew.le_p)


def _select_and_gather_add_jvp(primals, tangents, **params):
  t, operand = primals
  g = tangents[0]
  out = select_and_gather_add_p.bind(t, operand, **params)
  if type(g) is _ad.Zero:
    return out, _ad.Zero.from_primal_value(out)
  return out, select_and_gather_add_p.bind(g, operand, **params)


def _select_and_gather_add_transpose(ct, tangents, operand, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
  if _ad.is_undefined_primal(operand):
    raise ValueError("select_and_gather_add is not linear in its operand")
  if any(d != 1 for d in window_dilation):
    raise NotImplementedError("select_and_gather_add transpose is not implemented for "
                              "window_dilation != 1")
  if any(d != 1 for d in base_dilation):
    raise NotImplementedError("select_and_gather_add transpose is not implemented for "
                              "base_dilation != 1")
  out = select_and_scatter_add_p.bind(ct, operand, select_prim=select_prim,
                                      window_dimensions=window_dimensions,
                                      window_strides=window_strides, padding=padding)
  return [out, None]


_ad.primitive_jvps[select_and_gather_add_p] = _select_and_gather_add_jvp
_ad.primitive_transposes[select_and_gather_add_p] = _select_and_gather_add_transpose


def _select_and_scatter_add_jvp(primals, tangents, **params):
  source, operand = primals
  g = tangents[0]
  out = select_and_scatter_add_p.bind(source, operand, **params)
  if type(g) is _ad.Zero:
    return out, _ad.Zero.from_primal_value(out)
  return out, select_and_scatter_add_p.bind(g, operand, **params)


def _select_and_scatter_add_transpose(ct, source, operand, *, select_prim, window_dimensions,
                                      window_strides, padding):
  if _ad.is_undefined_primal(operand):
    raise ValueError("select_and_scatter_add is not linear in its operand")
  ones = (1,) * len(window_dimensions)
  out = select_and_gather_add_p.bind(ct, operand, select_prim=select_prim,
                                     window_dimensions=window_dimensions,
                                     window_strides=window_strides, padding=padding,
                                     base_dilation=ones, window_dilation=ones)
  return [out, None]


_ad.primitive_jvps[select_and_scatter_add_p] = _select_and_scatter_add_jvp
_ad.primitive_transposes[select_and_scatter_add_p] = _select_and_scatter_add_transpose


# --- the generic reduce_window's JVP ------------------------------------------------------
# Each output element folds its window, in row-major window order, starting from the init
# value.  The rule rewrites that fold as array operations -- the operand padded (and
# base-dilated) with the init value, one strided slice per window position, the reduction
# computation applied elementwise to whole slices -- and differentiates the rewrite, so
# forward and reverse mode both work (JAX's generic reduce_window has forward mode only).
# As for the generic reduce, the computation must be made of elementwise operations.
def _window_fold(operands, inits, jaxpr, consts, window_dimensions, window_strides, padding,
                 base_dilation, window_dilation, out_shape):
  padded = []
  for x, init in zip(operands, inits):
    cfg = [(lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation)]
    padded.append(_shapes.pad(x, init, cfg))
  acc = [_shapes.broadcast_in_dim(i, out_shape, ()) for i in inits]
  for pos in itertools.product(*[range(w) for w in window_dimensions]):
    start = [p * d for p, d in zip(pos, window_dilation)]
    limit = [s + (o - 1) * st + 1 for s, o, st in zip(start, out_shape, window_strides)]
    elems = [_shapes.slice(p, start, limit, window_strides) for p in padded]
    acc = core.eval_jaxpr(jaxpr, consts, *acc, *elems)
  return acc


def _reduce_window_jvp(primals, tangents, *, jaxpr, consts, window_dimensions, window_strides,
                       padding, base_dilation, window_dilation):
  params = dict(jaxpr=jaxpr, consts=consts, window_dimensions=window_dimensions,
                window_strides=window_strides, padding=padding, base_dilation=base_dilation,
                window_dilation=window_dilation)
  outs = reduce_window_p.bind(*primals, **params)
  if all(type(t) is _ad.Zero for t in tangents):
    return outs, [_ad.Zero.from_primal_value(o) for o in outs]
  n = len(primals) // 2
  out_shape = core.get_aval(outs[0]).shape
  if 0 in out_shape:
    return outs, [_ad.Zero.from_primal_value(o) for o in outs]

  def fold(*xs):
    return _window_fold(xs[:n], xs[n:], jaxpr, consts, window_dimensions, window_strides,
                        padding, base_dilation, window_dilation, out_shape)
  _, t_outs = _ad.jvp_flat(fold, list(primals), list(tangents))
  return outs, t_outs


_ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp


# --- batching rules -----------------------------------------------------------------------
# The batch dimension becomes a size-1 window dimension (no stride, padding or dilation).
from pyjax._src.interpreters import batching as _bt  # noqa: E402


def _insert(t, d, v):
  t = list(t)
  t.insert(d, v)
  return tuple(t)


def _window_params_at(d, window_dimensions, window_strides, padding, base_dilation=None,
                      window_dilation=None):
  out = dict(window_dimensions=_insert(window_dimensions, d, 1),
             window_strides=_insert(window_strides, d, 1),
             padding=_insert(padding, d, (0, 0)))
  if base_dilation is not None:
    out["base_dilation"] = _insert(base_dilation, d, 1)
    out["window_dilation"] = _insert(window_dilation, d, 1)
  return out


def _window_reduction_batch(prim):
  def rule(args, dims, *, window_dimensions, window_strides, padding, base_dilation,
           window_dilation):
    x, = args
    d, = dims
    return prim.bind(x, **_window_params_at(d, window_dimensions, window_strides, padding,
                                            base_dilation, window_dilation)), d
  return rule


for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
  _bt.primitive_batchers[_p] = _window_reduction_batch(_p)


def _reduce_window_batch(args, dims, *, jaxpr, consts, window_dimensions, window_strides,
                         padding, base_dilation, window_dilation):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  if any(d is not _bt.not_mapped for d in dims[n:]):
    raise NotImplementedError("reduce_window batching is not implemented for initial values")
  size = next(core.get_aval(x).shape[d] for x, d in zip(operands, dims[:n])
              if d is not _bt.not_mapped)
  operands = [_bt.bdim_at_front(x, d, size) for x, d in zip(operands, dims[:n])]
  outs = reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr, consts=consts,
                              **_window_params_at(0, window_dimensions, window_strides,
                                                  padding, base_dilation, window_dilation))
  return outs, [0] * n


_bt.primitive_batchers[reduce_window_p] = _reduce_window_batch


def _select_and_scatter_add_batch(args, dims, *, select_prim, window_dimensions,
                                  window_strides, padding):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _bt.not_mapped)
  source, operand = [_bt.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return select_and_scatter_add_p.bind(
      source, operand, select_prim=select_prim,
      **_window_params_at(0, window_dimensions, window_strides, padding)), 0


_bt.primitive_batchers[select_and_scatter_add_p] = _select_and_scatter_add_batch


def _select_and_gather_add_batch(args, dims, *, select_prim, window_dimensions, window_strides,
                                 padding, base_dilation, window_dilation):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _bt.not_mapped)
  tangents, operand = [_bt.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return select_and_gather_add_p.bind(
      tangents, operand, select_prim=select_prim,
      **_window_params_at(0, window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)), 0


_bt.primitive_batchers[select_and_gather_add_p] = _select_and_gather_add_batch
