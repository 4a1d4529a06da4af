"""Eager NumPy implementations of the windowed reductions (``lax/windowed.py``):
``reduce_window_sum``/``_max``/``_min``, the generic ``reduce_window`` and
``select_and_scatter_add`` / ``select_and_gather_add``, with XLA's semantics: windows
skip padding and base-dilation holes, starting once from the init value; sums of half
types accumulate in float32 and round once (XLA rounds at every step: results can differ
by a few ulps); max/min follow the reductions' NaN and signed-zero rules
(``reductions.py``).
"""
from __future__ import annotations

import itertools

import numpy as np

from pyjax._src.backends.cpu.eager.reductions import (
    _Combiner, _is_floatlike, _max_identity, _min_identity, _up)
from pyjax._src.backends.cpu.eager.registry import register


# --- window geometry --------------------------------------------------------------------
class _Windows:
  """The dilated+padded layout of an operand and the strided slice of it that each window
  offset visits (one slice per offset, covering all output positions)."""

  def __init__(self, shape, window_dimensions, window_strides, padding, base_dilation=None,
               window_dilation=None):
    nd = len(shape)
    self.shape = tuple(shape)
    self.wd = tuple(window_dimensions)
    self.ws = tuple(window_strides)
    self.pads = tuple(tuple(p) for p in padding)
    self.bd = tuple(base_dilation) if base_dilation is not None else (1,) * nd
    self.wdil = tuple(window_dilation) if window_dilation is not None else (1,) * nd
    self.dilated = tuple(0 if d == 0 else (d - 1) * b + 1 for d, b in zip(shape, self.bd))
    self.padded = tuple(d + lo + hi for d, (lo, hi) in zip(self.dilated, self.pads))
    out = []
    for p, w, s, r in zip(self.padded, self.wd, self.ws, self.wdil):
      eff = (w - 1) * r + 1
      out.append((p - eff) // s + 1 if p >= eff else 0)
    self.out_shape = tuple(out)
    self.size = int(np.prod(self.wd, dtype=np.int64))

  def layout(self, x, fill):
    """``x`` dilated and padded with ``fill`` (negative pads crop)."""
    full = np.full(self.padded, fill, dtype=x.dtype)
    src, dst = [], []
    for n, b, (lo, hi), p in zip(self.shape, self.bd, self.pads, self.padded):
      # element i of x sits at padded position lo + i*b; keep those inside [0, p)
      first, last = max(0, -(lo // b)), min(n - 1, (p - 1 - lo) // b)
      if n == 0 or last < first:
        return full
      src.append(slice(first, last + 1))
      dst.append(slice(lo + first * b, lo + last * b + 1, b))
    full[tuple(dst)] = x[tuple(src)]
    return full

  def mask(self):
    return self.layout(np.ones(self.shape, np.bool_), False)

  def slices(self, outer=None):
    """Window offsets in row-major order, or with dimension ``outer`` moved outermost."""
    ranges = [range(w) for w in self.wd]
    if outer is None:
      offsets = itertools.product(*ranges)
    else:
      rest = [i for i in range(len(ranges)) if i != outer]
      perm = [outer] + rest
      inv = np.argsort(perm)
      offsets = (tuple(o[i] for i in inv)
                 for o in itertools.product(*[ranges[i] for i in perm]))
    for offs in offsets:
      yield tuple(slice(o * r, o * r + (n - 1) * s + 1, s)
                  for o, r, n, s in zip(offs, self.wdil, self.out_shape, self.ws))

  def scatter_back(self, padded_values):
    """Inverse of ``layout``: the values at the operand's own positions."""
    out = np.zeros(self.shape, padded_values.dtype)
    src, dst = [], []
    for n, b, (lo, hi), p in zip(self.shape, self.bd, self.pads, self.padded):
      first, last = max(0, -(lo // b)), min(n - 1, (p - 1 - lo) // b)
      if n == 0 or last < first:
        return out
      dst.append(slice(first, last + 1))
      src.append(slice(lo + first * b, lo + last * b + 1, b))
    out[tuple(dst)] = padded_values[tuple(src)]
    return out


def _window_fold(x, win, ufunc, ident):
  """Reduce every window with a NumPy ufunc, padding with its identity."""
  if 0 in win.out_shape:
    return np.full(win.out_shape, ident, x.dtype)
  xp = win.layout(x, ident)
  if win.size > 64:
    # one strided view: windows as trailing axes, reduced at once
    effs = tuple((w - 1) * r + 1 for w, r in zip(win.wd, win.wdil))
    view = np.lib.stride_tricks.sliding_window_view(xp, effs)
    nd = x.ndim
    view = view[tuple(slice(None, None, s) for s in win.ws) +
                tuple(slice(None, None, r) for r in win.wdil)]
    view = view[tuple(slice(0, n) for n in win.out_shape)]
    return ufunc.reduce(view, axis=tuple(range(nd, 2 * nd)), dtype=x.dtype)
  acc = None
  for sl in win.slices():
    acc = xp[sl].copy() if acc is None else ufunc(acc, xp[sl])
  return acc


def _window_params(params):
  return (params["window_dimensions"], params["window_strides"], params["padding"],
          params.get("base_dilation"), params.get("window_dilation"))


@register("reduce_window_sum")
def _reduce_window_sum(x, **params):
  """Windows of up to 64 elements add in row-major order in the operand's type (XLA's
  order and rounding); larger windows reduce at once (half types in float32)."""
  win = _Windows(x.shape, *_window_params(params))
  xu = x if win.size <= 64 else _up(x)
  out = _window_fold(xu, win, np.add, np.array(0, xu.dtype)[()])
  if xu.dtype.kind in "fcV":
    out = out + np.zeros((), xu.dtype)  # XLA's fold starts from +0: never returns -0
  return out


def _reduce_window_order(x, params, is_max):
  xu = _up(x)
  win = _Windows(x.shape, *_window_params(params))
  if x.dtype == np.bool_:
    return _window_fold(x, win, np.logical_or if is_max else np.logical_and, not is_max)
  ident = (_max_identity if is_max else _min_identity)(xu.dtype)[()]
  res = _window_fold(xu, win, np.maximum if is_max else np.minimum, ident)
  if _is_floatlike(res.dtype) and np.any(res == 0):
    zero_of_sign = (xu == 0) & (np.signbit(xu) != is_max)
    found = _window_fold(zero_of_sign, win, np.logical_or, False)
    signed = np.where(found, 0.0, -0.0) if is_max else np.where(found, -0.0, 0.0)
    res = np.where(res == 0, signed.astype(res.dtype), res)
  return res


@register("reduce_window_max")
def _reduce_window_max(x, **params):
  return _reduce_window_order(x, params, True)


@register("reduce_window_min")
def _reduce_window_min(x, **params):
  return _reduce_window_order(x, params, False)


@register("reduce_window")
def _reduce_window(*args, jaxpr, consts, **params):
  """Fold ``acc = f(acc, x)`` over each window's elements in row-major window order,
  skipping padding and holes; vectorized over all windows."""
  n = len(args) // 2
  ops, inits = args[:n], args[n:]
  win = _Windows(ops[0].shape, *_window_params(params))
  accs = [np.full(win.out_shape, i, i.dtype) for i in inits]
  if 0 in win.out_shape:
    return accs
  layouts = [win.layout(o, np.zeros((), o.dtype)[()]) for o in ops]
  mask = win.mask()
  combine = _Combiner(jaxpr, consts)
  for sl in win.slices():
    m = mask[sl]
    if not m.any():
      continue
    new = combine(accs, [lp[sl] for lp in layouts])
    accs = [np.where(m, nw, a) for nw, a in zip(new, accs)]
  return accs


# --- select_and_scatter_add / select_and_gather_add -------------------------------------
def _selector(select_prim):
  name = getattr(select_prim, "name", select_prim)
  ops = {"ge": np.greater_equal, "le": np.less_equal, "gt": np.greater, "lt": np.less}
  if name not in ops:
    raise NotImplementedError(f"select_prim {name} is not supported")
  return ops[name]


def _select(operand, win, select_prim, extra=None, outer=None):
  """Per window: the offset index chosen by ``select(selected, candidate)`` (keep the
  selected element while it holds, as XLA's SelectAndScatter does), whether any element
  was seen, and (optionally) the value of ``extra`` at the chosen position.  Window
  elements are visited in row-major order, optionally with dimension ``outer`` moved
  outermost (the visiting order decides ties and NaNs)."""
  keep = _selector(select_prim)
  xp = win.layout(_up(operand), np.zeros((), _up(operand).dtype)[()])
  ep = win.layout(extra, np.zeros((), extra.dtype)[()]) if extra is not None else None
  mask = win.mask()
  sel_val = np.zeros(win.out_shape, xp.dtype)
  sel_k = np.full(win.out_shape, -1, np.int64)
  sel_e = np.zeros(win.out_shape, extra.dtype) if extra is not None else None
  have = np.zeros(win.out_shape, np.bool_)
  for k, sl in enumerate(win.slices(outer)):
    m = mask[sl]
    cand = xp[sl]
    take = m & (~have | ~keep(sel_val, cand))
    sel_val = np.where(take, cand, sel_val)
    sel_k = np.where(take, k, sel_k)
    if extra is not None:
      sel_e = np.where(take, ep[sl], sel_e)
    have |= m
  return sel_k, have, sel_e


@register("select_and_scatter_add")
def _select_and_scatter_add(source, operand, *, select_prim, window_dimensions,
                            window_strides, padding):
  win = _Windows(operand.shape, window_dimensions, window_strides, padding)
  if 0 in win.out_shape or operand.size == 0:
    return np.zeros(operand.shape, source.dtype)
  sel_k, have, _ = _select(operand, win, select_prim)
  src = _up(source)
  acc = np.zeros(win.padded, src.dtype)
  for k, sl in enumerate(win.slices()):
    hit = have & (sel_k == k)
    if hit.any():
      acc[sl] += np.where(hit, src, np.zeros((), src.dtype))
  return win.scatter_back(acc)


@register("select_and_gather_add")
def _select_and_gather_add(tangents, operand, *, select_prim, window_dimensions,
                           window_strides, padding, base_dilation, window_dilation):
  win = _Windows(operand.shape, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation)
  if 0 in win.out_shape or operand.size == 0:
    return np.zeros(win.out_shape, tangents.dtype)
  # JAX on CPU visits a window with its last padded dimension outermost (measured), which
  # decides which tangent a tie or NaN selects.
  padded = [i for i, p in enumerate(win.pads) if tuple(p) != (0, 0)]
  outer = padded[-1] if padded else None
  _, have, sel_t = _select(operand, win, select_prim, extra=tangents, outer=outer)
  return np.where(have, sel_t, np.zeros((), tangents.dtype))
