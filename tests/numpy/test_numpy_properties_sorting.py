"""Property-based differential tests (hypothesis) for jnp sorting and searching against real
JAX: sort/argsort (stable and not, descending, None/negative axes), partition/
argpartition, lexsort, sort_complex and searchsorted (both sides, every method, sorter) --
on every dtype with NaN/inf/-0.0 and many ties, 0- and 1-sized dimensions, x64 on and off;
grads of sort."""
import functools

import numpy as np
import pytest
from hypothesis import strategies as st

import hypothesis_strategies as hs
from hypothesis_strategies import check, check_grad, prop, x64_mode

jax = pytest.importorskip("jax")


# small value ranges make ties (the interesting case for stability) common
draw_array = functools.partial(hs.draw_array, min_value=-3, max_value=3)


@prop(n=20, slow=400, data=st.data(), x64=st.booleans())
def test_sort_argsort(data, x64):
  with x64_mode(x64):
    x = draw_array(data)
    axis = data.draw(st.one_of(st.none(), hs.axis_for(x.ndim) if x.ndim else st.none()),
                     label="axis")
    descending = data.draw(st.booleans(), label="descending")
    check(lambda jnp, x: jnp.sort(x, axis=axis, descending=descending), x)
    # unstable argsort may order ties differently: only the stable one is compared exactly
    check(lambda jnp, x: jnp.argsort(x, axis=axis, stable=True, descending=descending), x)
    if x.ndim and x.shape[-1] and x.dtype.kind != "c":
      check(lambda jnp, x: (jnp.sort(x, stable=False), jnp.asarray(x).sort(),
                            jnp.asarray(x).argsort()), x)


@prop(n=20, slow=250, data=st.data(), x64=st.booleans())
def test_partition(data, x64):
  with x64_mode(x64):
    x = draw_array(data, hs.REAL, shape=data.draw(hs.shapes(1, 3), label="shape"))
    axis = data.draw(hs.axis_for(x.ndim), label="axis")
    n = x.shape[axis]
    kth = data.draw(st.integers(-n - 1, n), label="kth")
    check(lambda jnp, x: jnp.partition(x, kth, axis=axis), x)
    check(lambda jnp, x: jnp.argpartition(x, kth, axis=axis), x)


@prop(n=15, slow=200, data=st.data(), x64=st.booleans())
def test_lexsort_sort_complex(data, x64):
  with x64_mode(x64):
    shape = data.draw(hs.shapes(0, 2), label="shape")
    nkeys = data.draw(st.integers(1, 3), label="nkeys")
    keys = [draw_array(data, hs.REAL, shape=shape, label=f"k{i}") for i in range(nkeys)]
    axis = data.draw(hs.axis_for(len(shape)) if shape else st.just(-1), label="axis")
    check(lambda jnp, *k: jnp.lexsort(k, axis=axis), *keys)
    check(lambda jnp, k: jnp.sort_complex(k), keys[0])


@prop(n=15, slow=300, data=st.data(), x64=st.booleans())
def test_searchsorted(data, x64):
  with x64_mode(x64):
    a = np.sort(draw_array(data, hs.REAL + ["complex64"],
                           shape=(data.draw(st.integers(0, 6), label="n"),), label="a"))
    v = draw_array(data, hs.REAL + ["complex64"], shape=data.draw(hs.shapes(0, 2)),
                   label="v")
    side = data.draw(st.sampled_from(["left", "right"]), label="side")
    method = data.draw(st.sampled_from(["scan", "scan_unrolled", "sort", "compare_all"]),
                       label="method")
    check(lambda jnp, a, v: jnp.searchsorted(a, v, side=side, method=method), a, v)
    if data.draw(st.booleans(), label="sorter?"):
      perm = np.asarray(data.draw(st.permutations(range(len(a))), label="perm"), np.int32)
      unsorted = np.empty_like(a)
      unsorted[perm] = a                     # so unsorted[perm] is sorted
      sorter = perm
      check(lambda jnp, a, v, s: jnp.searchsorted(a, v, side=side, sorter=s), unsorted, v,
            sorter)


@prop(n=10, slow=150, data=st.data())
def test_grad_sort(data):
  x = draw_array(data, ["float32"], shape=data.draw(hs.nonempty_shapes(1, 2, max_side=4)),
                 min_value=-5, max_value=5, allow_nan=False, allow_inf=False)
  axis = data.draw(hs.axis_for(x.ndim), label="axis")
  descending = data.draw(st.booleans(), label="descending")
  n = x.shape[axis]
  kth = data.draw(st.integers(0, n - 1), label="kth")

  def f(jnp, x):
    s = jnp.sort(x, axis=axis, descending=descending)
    p = jnp.partition(x, kth, axis=axis)
    w = 1 + jnp.arange(s.size).reshape(s.shape) % 3
    return jnp.sum(s * w) + jnp.sum(jnp.take(p, kth, axis=axis))
  check_grad(f, x, rtol=1e-5, atol=1e-5)
