"""Property-based differential tests (hypothesis) for jnp shape manipulation against real
JAX: reshape/transpose/moveaxis/squeeze/expand_dims, concatenate/stack and friends,
split, flip/rot90/roll, tile/repeat, broadcasting, where/clip, append/insert/delete, pad,
resize, trim_zeros -- with 0- and 1-sized dimensions, negative axes, every dtype (x64 on
and off), NaN/inf values and Python scalars (weak types); grads for the differentiable
ones."""
import numpy as np
import pytest
from hypothesis import strategies as st

import hypothesis_strategies as hs
from hypothesis_strategies import check, check_grad, draw_array, prop, x64_mode

jax = pytest.importorskip("jax")


def _reshape_targets(shape):
  size = int(np.prod(shape))
  out = [(-1,), (size,), (1, -1), (-1, 1), tuple(reversed(shape)), shape + (1,), (1,) + shape]
  if len(shape) >= 2:
    out.append((shape[0], -1))
    out.append((-1, shape[-1]))
  out.append((size + 1,))           # invalid: both must raise
  out.append((-1, -1))              # invalid
  return out


@prop(n=12, slow=150, data=st.data(), x64=st.booleans())
def test_reshape_ravel(data, x64):
  with x64_mode(x64):
    x = draw_array(data)
    new = data.draw(st.sampled_from(_reshape_targets(x.shape)), label="newshape")
    order = data.draw(st.sampled_from(["C", "F"]), label="order")
    check(lambda jnp, x: jnp.reshape(x, new, order=order), x)
    if data.draw(st.booleans(), label="ravel"):
      check(lambda jnp, x: jnp.ravel(x, order=order), x)


@prop(n=12, slow=150, data=st.data())
def test_transpose_moveaxis_swapaxes(data):
  x = draw_array(data)
  nd = x.ndim
  perm = data.draw(st.permutations(range(nd)), label="perm")
  perm = tuple(p - nd if data.draw(st.booleans()) else p for p in perm)
  check(lambda jnp, x: (jnp.transpose(x, perm), jnp.transpose(x)), x)
  if nd < 2:
    check(lambda jnp, x: jnp.matrix_transpose(x), x)
  else:
    a = data.draw(st.integers(-nd - 1, nd), label="src")
    b = data.draw(st.integers(-nd - 1, nd), label="dst")
    if -nd <= a < nd and -nd <= b < nd:
      check(lambda jnp, x: (jnp.matrix_transpose(x), jnp.moveaxis(x, a, b),
                            jnp.swapaxes(x, a, b), jnp.rollaxis(x, a, b % nd)), x)
    else:   # out of bounds: all must raise
      check(lambda jnp, x: jnp.moveaxis(x, a, b), x)
      check(lambda jnp, x: jnp.swapaxes(x, a, b), x)


@prop(n=12, slow=150, data=st.data())
def test_squeeze_expand_dims(data):
  x = draw_array(data, hs.REAL)
  nd = x.ndim
  ones = [i for i, d in enumerate(x.shape) if d == 1]
  sq = data.draw(st.one_of(st.none(), st.sampled_from(ones or [None]),
                           st.just(tuple(i - nd for i in ones)),
                           st.integers(-nd - 1, nd) if nd else st.none()), label="sq_axis")
  check(lambda jnp, x: jnp.squeeze(x, sq), x)
  k = data.draw(st.integers(0, 2), label="k")
  ex = data.draw(st.lists(st.integers(-(nd + k) - 1, nd + k), min_size=k, max_size=k),
                 label="ex_axes")
  ex = tuple(ex) if k != 1 else ex[0]
  if ex == ():
    ex = 0
  check(lambda jnp, x: jnp.expand_dims(x, ex), x)


@prop(n=10, slow=200, data=st.data(), x64=st.booleans())
def test_concatenate_stack(data, x64):
  with x64_mode(x64):
    base = data.draw(hs.shapes(1, 3), label="shape")
    nd = len(base)
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    n = data.draw(st.integers(1, 3), label="n")
    arrs = []
    for _ in range(n):
      s = list(base)
      s[axis] = data.draw(st.integers(0, 3))
      arrs.append(draw_array(data, shape=tuple(s)))
    dt = data.draw(st.sampled_from([None, "float32", "int32", "complex64"]), label="dtype")
    check(lambda jnp, *a: (jnp.concatenate(a, axis=axis), jnp.concatenate(a, axis=None),
                           jnp.concatenate(a, axis=axis, dtype=dt)), *arrs)
    same = [draw_array(data, shape=base) for _ in range(n)]
    saxis = data.draw(st.integers(-nd - 2, nd + 1), label="stack_axis")
    check(lambda jnp, *a: jnp.stack(a, axis=saxis), *same)
    check(lambda jnp, *a: (jnp.hstack(a), jnp.vstack(a), jnp.dstack(a), jnp.column_stack(a)),
          *same)


@prop(n=10, slow=100, data=st.data())
def test_stack_python_scalars(data):
  """Stacking Python scalars with arrays: weak types and promotion."""
  x = draw_array(data, shape=())
  s = data.draw(hs.python_scalars(), label="scalar")
  check(lambda jnp, x: (jnp.stack([x, s]), jnp.hstack([s, x]), jnp.stack([s, s]),
                        jnp.append(x, s)), x)


@prop(n=12, slow=150, data=st.data())
def test_split(data):
  x = draw_array(data, shape=data.draw(hs.shapes(1, 3)))
  nd = x.ndim
  axis = data.draw(st.integers(-nd, nd - 1), label="axis")
  ios = data.draw(st.one_of(st.integers(1, 4),
                            st.lists(st.integers(-5, 6), max_size=3)), label="ios")
  check(lambda jnp, x: jnp.split(x, ios, axis=axis), x)
  check(lambda jnp, x: jnp.array_split(x, ios, axis=axis), x)
  if isinstance(ios, int) and x.shape[axis]:
    check(lambda jnp, x: jnp.unstack(x, axis=axis), x)


@prop(n=15, slow=200, data=st.data())
def test_flip_rot90_roll(data):
  x = draw_array(data)
  nd = x.ndim
  fa = data.draw(hs.axes_for(nd), label="flip_axis")
  shift = data.draw(st.one_of(st.integers(-7, 7), st.lists(st.integers(-7, 7), min_size=1,
                                                            max_size=2).map(tuple)),
                    label="shift")
  raxis = data.draw(st.one_of(st.none(), hs.axis_for(nd) if nd else st.none()), label="raxis")
  if isinstance(shift, tuple) and raxis is not None and len(shift) > 1:
    raxis = (raxis,) * len(shift)
  check(lambda jnp, x: (jnp.flip(x, fa), jnp.roll(x, shift, raxis)), x)
  if nd >= 2:
    k = data.draw(st.integers(-5, 5), label="k")
    axes = data.draw(st.sampled_from([(0, 1), (1, 0), (-1, -2), (0, -1)]), label="axes")
    check(lambda jnp, x: (jnp.rot90(x, k, axes), jnp.fliplr(x), jnp.flipud(x)), x)


@prop(n=10, slow=200, data=st.data())
def test_tile_repeat(data):
  x = draw_array(data, shape=data.draw(hs.shapes(0, 3, max_side=3)))
  nd = x.ndim
  reps = data.draw(st.one_of(st.integers(0, 3),
                             st.lists(st.integers(0, 3), max_size=4).map(tuple)), label="reps")
  check(lambda jnp, x: jnp.tile(x, reps), x)
  axis = data.draw(st.one_of(st.none(), hs.axis_for(nd) if nd else st.none()), label="axis")
  n_along = x.size if axis is None else x.shape[axis]
  repeats = data.draw(st.one_of(
      st.integers(0, 3),
      st.lists(st.integers(0, 3), min_size=n_along, max_size=n_along).map(np.array)),
      label="repeats")
  check(lambda jnp, x: jnp.repeat(x, repeats, axis=axis), x)
  if isinstance(repeats, np.ndarray):
    total = int(repeats.sum()) + data.draw(st.integers(-1, 2))
    if total >= 0:
      check(lambda jnp, x, r: jnp.repeat(x, r, axis=axis, total_repeat_length=total),
            x, repeats)


@prop(n=15, slow=200, data=st.data(), x64=st.booleans())
def test_broadcast(data, x64):
  with x64_mode(x64):
    s1, s2 = data.draw(hs.broadcastable_shapes(), label="shapes")
    a = draw_array(data, shape=s1)
    b = draw_array(data, shape=s2)
    target = np.broadcast_shapes(s1, s2)
    check(lambda jnp, a, b: (jnp.broadcast_arrays(a, b), jnp.broadcast_to(a, target),
                             jnp.atleast_1d(a), jnp.atleast_2d(a), jnp.atleast_3d(a, b)), a, b)
    bad = data.draw(hs.shapes(), label="maybe_bad")
    check(lambda jnp: (jnp.broadcast_shapes(s1, s2), jnp.broadcast_shapes(s1, bad)))
    check(lambda jnp, a: jnp.broadcast_to(a, bad), a)


def _operand(data, shape):
  """An array of a random dtype, or (sometimes) a Python scalar."""
  if data.draw(st.integers(0, 3), label="scalar?") == 0:
    return data.draw(hs.python_scalars(), label="py")
  return draw_array(data, shape=shape)


@prop(n=14, slow=250, data=st.data(), x64=st.booleans())
def test_where(data, x64):
  with x64_mode(x64):
    sc, sx, sy = data.draw(hs.broadcastable_shapes(3), label="shapes")
    c = draw_array(data, ["bool", "int8", "float32"], shape=sc)
    x = _operand(data, sx)
    y = _operand(data, sy)
    check(lambda jnp, c, x, y: jnp.where(c, x, y), c, x, y)
    check(lambda jnp, c: jnp.where(c), c)
    size = data.draw(st.integers(0, 4), label="size")
    check(lambda jnp, c: jnp.where(c, size=size, fill_value=-1), c)


@prop(n=20, slow=250, data=st.data(), x64=st.booleans())
def test_clip(data, x64):
  with x64_mode(x64):
    sx, slo, shi = data.draw(hs.broadcastable_shapes(3), label="shapes")
    x = draw_array(data, hs.REAL, shape=sx)
    lo = data.draw(st.one_of(st.none(), hs.python_scalars("if"),
                             hs.arrays("float32", slo), hs.arrays("int32", slo)), label="lo")
    hi = data.draw(st.one_of(st.none(), hs.python_scalars("if"),
                             hs.arrays("float32", shi), hs.arrays("int8", shi)), label="hi")
    check(lambda jnp, x, lo, hi: (jnp.clip(x, lo, hi), jnp.clip(x, min=lo, max=hi)), x, lo, hi)


@prop(n=15, slow=200, data=st.data())
def test_append_insert_delete(data):
  x = draw_array(data, shape=data.draw(hs.shapes(1, 3)))
  nd = x.ndim
  axis = data.draw(st.one_of(st.none(), hs.axis_for(nd)), label="axis")
  n_along = x.size if axis is None else x.shape[axis]
  vshape = list(x.shape) if axis is not None else [data.draw(st.integers(0, 3))]
  if axis is not None:
    vshape[axis] = data.draw(st.integers(0, 2))
  v = draw_array(data, shape=tuple(vshape))
  check(lambda jnp, x, v: jnp.append(x, v, axis=axis), x, v)
  obj = data.draw(st.one_of(st.integers(-n_along - 1, n_along + 1),
                            st.slices(max(n_along, 1)),
                            st.lists(st.integers(-n_along, max(n_along - 1, 0)),
                                     max_size=3, unique=True).map(np.array)), label="obj")
  check(lambda jnp, x: jnp.delete(x, obj, axis=axis), x)
  if isinstance(obj, int):
    ins = data.draw(st.one_of(hs.python_scalars("bif"), hs.arrays("float32", ())), label="ins")
    check(lambda jnp, x: jnp.insert(x, obj, ins, axis=axis), x)


_PAD_MODES = ["constant", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "maximum",
              "minimum", "mean", "median", "empty"]


@prop(n=20, slow=250, data=st.data())
def test_pad(data):
  x = draw_array(data, ["bool", "int8", "uint8", "int32", "float16", "bfloat16", "float32",
                        "complex64"], shape=data.draw(hs.shapes(0, 3, max_side=3)))
  nd = x.ndim
  pw = data.draw(st.one_of(
      st.integers(0, 3),
      st.tuples(st.integers(0, 3), st.integers(0, 3)),
      st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=nd, max_size=nd)
      .map(tuple)), label="pad_width")
  mode = data.draw(st.sampled_from(_PAD_MODES), label="mode")
  if mode == "mean" and x.dtype.kind == "c":
    # (XLA folds the mean of one element, x / 1, to x; a complex NumPy division by 1+0j
    # turns a NaN imaginary part into NaN+NaNj)
    x = np.nan_to_num(x)
  kw = {}
  if mode == "constant" and data.draw(st.booleans()):
    kw["constant_values"] = data.draw(hs.python_scalars("if"), label="cv")
  if mode in ("reflect", "symmetric") and data.draw(st.booleans()):
    kw["reflect_type"] = "odd"
  if mode in ("maximum", "minimum", "mean", "median") and data.draw(st.booleans()):
    kw["stat_length"] = data.draw(st.integers(1, 3), label="stat_length")
  if mode == "linear_ramp" and data.draw(st.booleans()):
    kw["end_values"] = data.draw(st.integers(-3, 3), label="end_values")
  check(lambda jnp, x: jnp.pad(x, pw, mode=mode, **kw), x, values=mode != "empty",
        rtol=1e-2 if mode in ("mean", "median", "linear_ramp") else None)


@prop(n=12, slow=150, data=st.data())
def test_resize_trim_zeros(data):
  x = draw_array(data, hs.REAL, shape=data.draw(hs.shapes(0, 2)))
  new = data.draw(st.one_of(st.integers(0, 7), hs.shapes(0, 3)), label="new_shape")
  check(lambda jnp, x: jnp.resize(x, new), x)
  z = draw_array(data, ["int8", "float32"], shape=(data.draw(st.integers(0, 6)),),
                 min_value=-1, max_value=1, allow_nan=False, allow_inf=False)
  trim = data.draw(st.sampled_from(["f", "b", "fb", "bf"]), label="trim")
  check(lambda jnp, z: jnp.trim_zeros(z, trim), z)


@prop(n=10, slow=100, data=st.data())
def test_select_choose(data):
  s1, s2, s3 = data.draw(hs.broadcastable_shapes(3), label="shapes")
  c1 = draw_array(data, ["bool"], shape=s1)
  c2 = draw_array(data, ["bool"], shape=s2)
  v1 = draw_array(data, ["int32", "float32", "float16"], shape=s3)
  v2 = draw_array(data, ["int8", "float32"], shape=s1)
  default = data.draw(hs.python_scalars("bif"), label="default")
  check(lambda jnp, c1, c2, v1, v2: jnp.select([c1, c2], [v1, v2], default), c1, c2, v1, v2)
  idx = data.draw(hs.arrays("int32", s1, min_value=-1, max_value=2), label="idx")
  mode = data.draw(st.sampled_from(["clip", "wrap"]), label="mode")
  check(lambda jnp, i, a, b: jnp.choose(i, [a, b], mode=mode), idx, v1, v2)


# --- grads ---------------------------------------------------------------------------------
def _weights(shape):
  """Fixed, non-trivial cotangent weights so that grads see every position."""
  return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7 - 3) / 2


def _wsum(jnp, y):
  return jnp.sum(y * _weights(y.shape))


@prop(n=15, slow=150, data=st.data())
def test_grad_manipulations(data):
  x = draw_array(data, ["float32"], shape=data.draw(hs.shapes(1, 3, max_side=3)),
                 min_value=-10, max_value=10, allow_nan=False, allow_inf=False)
  nd = x.ndim
  ax = data.draw(hs.axis_for(nd), label="axis")
  op = data.draw(st.sampled_from(["reshape", "transpose", "concatenate", "flip", "roll", "tile",
                                  "repeat", "pad", "rot90", "moveaxis", "split", "where",
                                  "clip", "broadcast_to", "stack", "delete", "insert"]),
                 label="op")
  fns = {
      "reshape": lambda jnp, x: jnp.reshape(x, (-1,)),
      "transpose": lambda jnp, x: jnp.transpose(x),
      "concatenate": lambda jnp, x: jnp.concatenate([x, 2 * x, x[..., :1]], axis=-1),
      "flip": lambda jnp, x: jnp.flip(x, ax),
      "roll": lambda jnp, x: jnp.roll(x, 2, ax),
      "tile": lambda jnp, x: jnp.tile(x, (2,) * nd),
      "repeat": lambda jnp, x: jnp.repeat(x, 2, axis=ax),
      "pad": lambda jnp, x: jnp.pad(x, 1, mode="reflect" if min(x.shape) > 1 else "edge"),
      "rot90": lambda jnp, x: jnp.rot90(x, 1, (0, -1)) if nd >= 2 else x,
      "moveaxis": lambda jnp, x: jnp.moveaxis(x, 0, -1),
      "split": lambda jnp, x: jnp.split(x, [1], axis=ax)[-1],
      "where": lambda jnp, x: jnp.where(x > 0, x * x, -x),
      "clip": lambda jnp, x: jnp.clip(x, -1.0, 2.0),
      "broadcast_to": lambda jnp, x: jnp.broadcast_to(x, (2,) + x.shape),
      "stack": lambda jnp, x: jnp.stack([x, x * 3], axis=ax),
      "delete": lambda jnp, x: jnp.delete(x, 0, axis=ax),
      "insert": lambda jnp, x: jnp.insert(x, 1, 5.0, axis=ax),
  }
  f = fns[op]
  check_grad(lambda jnp, x: _wsum(jnp, f(jnp, x)), x)
