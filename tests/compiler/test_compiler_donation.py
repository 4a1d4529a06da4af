"""Donated inputs reused by the native buffer plan: ``jit(f, donate_argnums=...)`` writes an
output into a donated input's buffer when the kernel allows it (the input is read only at
the index being written, before it is written) and nothing else holds that buffer."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("error:pyjax:RuntimeWarning"),
]

N = 1 << 17            # large enough for asynchronous dispatch


@pytest.fixture(autouse=True)
def _sync_build():
  prev = executable.set_compile_mode("sync")
  yield
  executable.set_compile_mode(prev)


def _ptr(a):
  return a.unsafe_buffer_pointer()


def _arr(x):
  return pyjax.device_put(np.asarray(x))


def _data(seed, shape=(N,), dt=np.float32):
  return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _donation(f, *args):
  exe = f.lower(*args).compile().runtime_executable()
  assert exe.tier == "native"
  return exe.native.donation


def test_output_takes_the_donated_buffer():
  xn, yn = _data(0), _data(1)
  f = pyjax.jit(lambda x, y: x * 2 + y, donate_argnums=0)
  x, y = _arr(xn), _arr(yn)
  assert _donation(f, x, y) == {0: 0}
  p = _ptr(x)
  out = f(x, y)
  assert _ptr(out) == p
  want = pyjax.jit(lambda x, y: x * 2 + y)(_arr(xn), _arr(yn))
  np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
  assert x.is_deleted()
  with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[131072\]"):
    np.asarray(x)
  jax = pytest.importorskip("jax")
  ref = jax.jit(lambda x, y: x * 2 + y, donate_argnums=0)(jax.numpy.asarray(xn), yn)
  np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


@pytest.mark.parametrize("fn", [
    lambda x: jnp.tanh(x) * 0.5 + 0.25,
    # a jitted training loop (the whole program runs in C) called on its own result
    lambda x: pyjax.lax.fori_loop(0, 4, lambda i, w: w * 0.5 + 1.0, x)],
    ids=["elementwise", "fori_loop"])
def test_loop_of_donating_calls(fn):
  """x = f(x) ten times: every step reuses the one buffer (also while the previous step is
  still queued) and the values equal undonated calls'."""
  f = pyjax.jit(fn, donate_argnums=0)
  g = pyjax.jit(fn)
  xn = _data(2)
  x = _arr(xn)
  p = _ptr(x)
  ref = _arr(xn)
  for _ in range(10):
    x = f(x)
    ref = g(ref)
  assert _ptr(x) == p
  np.testing.assert_array_equal(np.asarray(x), np.asarray(ref))


def test_optimizer_step_allocates_nothing_for_params():
  shapes = [(256, 128), (128,), (128, 10), (10,)]
  params = [_arr(_data(i, s)) for i, s in enumerate(shapes)]
  grads = [_arr(_data(10 + i, s)) for i, s in enumerate(shapes)]
  step = pyjax.jit(lambda p, g: [a - 0.01 * b for a, b in zip(p, g)], donate_argnums=0)
  plain = pyjax.jit(lambda p, g: [a - 0.01 * b for a, b in zip(p, g)])
  ref = [_arr(np.array(a)) for a in params]
  ptrs = [_ptr(a) for a in params]
  for _ in range(3):
    params = step(params, grads)
    ref = plain(ref, grads)
  assert [_ptr(a) for a in params] == ptrs
  for a, b in zip(params, ref):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_view_held_elsewhere_prevents_aliasing():
  xn = _data(3)
  f = pyjax.jit(lambda x: x + 1, donate_argnums=0)
  # a NumPy array object of the buffer
  x = _arr(xn)
  held = np.asarray(x)
  out = f(x)
  assert not np.shares_memory(np.asarray(out), held)
  np.testing.assert_array_equal(held, xn)
  np.testing.assert_array_equal(np.asarray(out), xn + 1)
  # a NumPy view of it
  x = _arr(xn)
  view = np.asarray(x)[::2]
  out = f(x)
  np.testing.assert_array_equal(view, xn[::2])
  np.testing.assert_array_equal(np.asarray(out), xn + 1)
  # another Array sharing the buffer (an eager reshape may return a view)
  x = _arr(xn)
  other = x.reshape(-1, 2)
  out = f(x)
  np.testing.assert_array_equal(np.asarray(other), xn.reshape(-1, 2))
  np.testing.assert_array_equal(np.asarray(out), xn + 1)
  # a pending result read by queued work, then donated
  x = pyjax.jit(lambda x: x * 3)(_arr(xn))
  y = pyjax.jit(lambda x: x - 1)(x)
  out = f(x)
  np.testing.assert_array_equal(np.asarray(y), xn * 3 - 1)
  np.testing.assert_array_equal(np.asarray(out), xn * 3 + 1)


def test_kernels_that_must_not_write_in_place():
  """Reads at other indices, or after the output is written: the output is allocated (the
  kernel generator's verdict), values stay right."""
  xn = _data(4, (256, 256))
  cases = [
      (lambda x: x[::-1] * 2, False),            # reversed reads
      (lambda x: x.T + 1, False),                # transposed reads
      (lambda x: x - x[:, :1], False),           # a broadcast column of the input
      (lambda x: x - x.sum(axis=1, keepdims=True), True),   # rows reduced, then written
      (lambda x: x / jnp.sqrt((x * x).sum(axis=1, keepdims=True)), True),
  ]
  for fn, inplace in cases:
    f = pyjax.jit(fn, donate_argnums=0)
    x = _arr(xn)
    d = _donation(f, x)
    p = _ptr(x)
    out = f(x)
    assert (_ptr(out) == p) == inplace == bool(d), fn
    want = pyjax.jit(fn)(_arr(xn))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))


def test_column_reductions_update_in_place():
  """A bias-like update fused into a column reduction's epilogue (b read at the kept index
  only, written after the tile's reduction) writes in place."""
  xn, bn = _data(11, (300, 200)), _data(12, (200,))
  for fn in (lambda b, x: b - 0.5 * x.sum(axis=0), lambda b, x: (x - b).sum(axis=0) + b,
             lambda b, x: b * x.max(axis=0)):
    f = pyjax.jit(fn, donate_argnums=0)
    b = _arr(bn)
    assert _donation(f, b, xn) == {0: 0}
    p = _ptr(b)
    out = f(b, xn)
    assert _ptr(out) == p
    np.testing.assert_array_equal(np.asarray(out), np.asarray(pyjax.jit(fn)(_arr(bn), xn)))


def test_several_outputs_reading_the_donated_input():
  """The donated buffer takes the first output of its shape while another output of the
  same kernel still reads the input at that index (it is loaded before the store)."""
  xn, yn = _data(5), _data(6)
  fn = lambda x, y: (y * 2, (y * 2) * x)   # noqa: E731  (one kernel, two outputs)
  f = pyjax.jit(fn, donate_argnums=0)
  x, y = _arr(xn), _arr(yn)
  assert list(_donation(f, x, y)) == [0]
  p = _ptr(x)
  out = f(x, y)
  assert _ptr(out[0]) == p
  want = pyjax.jit(fn)(_arr(xn), _arr(yn))
  for a, b in zip(out, want):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # the output written in the same pass as a row reduction reading the input: allocated
  fn2 = lambda x: (x * 2, x.sum(axis=1))   # noqa: E731
  xm = _data(7, (300, 200))
  f2 = pyjax.jit(fn2, donate_argnums=0)
  x = _arr(xm)
  out = f2(x)
  want = pyjax.jit(fn2)(_arr(xm))
  for a, b in zip(out, want):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_non_matching_shapes_and_dtypes_allocate():
  xn = _data(8, (512, 256))
  f = pyjax.jit(lambda x: x.sum(axis=0), donate_argnums=0)
  x = _arr(xn)
  with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
    out = f(x)
  assert not x.is_deleted()     # as in JAX: an unusable donation leaves the array alone
  np.testing.assert_array_equal(np.asarray(x), xn)
  np.testing.assert_allclose(np.asarray(out), xn.sum(axis=0), rtol=1e-5, atol=1e-4)
  g = pyjax.jit(lambda x: x.astype(np.int32), donate_argnums=0)
  x = _arr(xn)
  with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
    out = g(x)
  np.testing.assert_array_equal(np.asarray(out), xn.astype(np.int32))


def test_numpy_tier_donation_keeps_values():
  xn = _data(9)
  executable.set_compile_mode("off")
  f = pyjax.jit(lambda x: x * 2 + 1, donate_argnums=0)
  x = _arr(xn)
  held = np.asarray(_arr(xn))
  for _ in range(3):
    x = f(x)
  np.testing.assert_array_equal(np.asarray(x), ((held * 2 + 1) * 2 + 1) * 2 + 1)


def test_synchronous_dispatch():
  xn = _data(10)
  f = pyjax.jit(lambda x: x * 0.5, donate_argnums=0)
  prev = pyjax.config.jax_cpu_enable_async_dispatch
  pyjax.config.update("jax_cpu_enable_async_dispatch", False)
  try:
    x = _arr(xn)
    p = _ptr(x)
    for _ in range(4):
      x = f(x)
    assert _ptr(x) == p
    np.testing.assert_array_equal(np.asarray(x), xn * np.float32(0.0625))
  finally:
    pyjax.config.update("jax_cpu_enable_async_dispatch", prev)


def test_programs_with_numpy_steps_donate_into_one_segment():
  """A program with a NumPy step (cholesky) between native segments: the segment that
  writes the last use of a donated input reuses its buffer; an input that a NumPy step
  reads is never reused (the step's result could be a view of it)."""
  m = np.random.default_rng(4).standard_normal((300, 300)).astype(np.float32)
  a = (m @ m.T / 300 + np.eye(300, dtype=np.float32))
  wn = _data(5, (300, 300))

  def f(a, w):
    c = jnp.linalg.cholesky(a * 1.0)        # a NumPy step between two segments
    return w * 0.5 + c.sum(), jnp.tanh(c)
  g = pyjax.jit(f, donate_argnums=1)
  exe = g.lower(_arr(a), _arr(wn)).compile().runtime_executable()
  assert [s.node.prim for s in exe.native.host_steps] == ["cholesky"]
  assert exe.native.donation == {1: 0} and exe.native.donation_segment == 1
  w = _arr(wn)
  p = _ptr(w)
  out = g(_arr(a), w)
  assert _ptr(out[0]) == p and w.is_deleted()
  want = pyjax.jit(f)(_arr(a), _arr(wn))
  for o, r in zip(out, want):
    np.testing.assert_array_equal(np.asarray(o), np.asarray(r))
  # a NumPy step after the aliasing segment
  k = pyjax.jit(lambda w, a: (w * 2.0 + 1.0, jnp.linalg.cholesky(a * 1.0) + 1), donate_argnums=0)
  exe = k.lower(_arr(wn), _arr(a)).compile().runtime_executable()
  assert [s.node.prim for s in exe.native.host_steps] == ["cholesky"]
  assert exe.native.donation == {0: 0}
  w = _arr(wn)
  p = _ptr(w)
  out = k(w, _arr(a))
  assert _ptr(out[0]) == p
  np.testing.assert_array_equal(np.asarray(out[0]), wn * 2 + 1)
  np.testing.assert_allclose(np.asarray(out[1]), np.linalg.cholesky(a) + 1, rtol=1e-4, atol=1e-5)
  # the donated input is the NumPy step's operand: allocated, values intact
  h = pyjax.jit(lambda a, w: (jnp.linalg.cholesky(a) * 2, a + w), donate_argnums=0)
  assert h.lower(_arr(a), _arr(wn)).compile().runtime_executable().native.donation == {}
  out = h(_arr(a), _arr(wn))
  np.testing.assert_allclose(np.asarray(out[1]), a + wn, rtol=1e-6)


def _whole(f, *args):
  exe = f.lower(*args).compile().runtime_executable()
  assert exe.tier == "native" and exe.native.whole is not None
  return exe.native


def test_whole_program_loops_donate_their_carries():
  """A program whose loops run in C (one native call): a donated input that is only a
  loop's initial carry is read before the first iteration, so the loop's result takes its
  buffer -- for fori_loop (while) and scan, with work before and after the loop."""
  def train(w, x):
    def body(i, w):
      return w - 0.01 * jnp.tanh(w * x + i)
    return pyjax.lax.fori_loop(0, 20, body, w * 1.0)

  def scanned(c, xs):
    c2, ys = pyjax.lax.scan(lambda c, x: (c * 0.5 + x, c + x), c, xs)
    return c2 + 1, ys

  wn, xn = _data(20), _data(21)
  cn, xsn = _data(22, (4096,)), _data(23, (8, 4096))
  for f, args, want_pairs in ((train, (wn, xn), {0: 0}), (scanned, (cn, xsn), {0: 0})):
    jf = pyjax.jit(f, donate_argnums=0)
    plain = pyjax.jit(f)
    a = [_arr(v) for v in args]
    assert _whole(jf, *a).donation == want_pairs
    p = _ptr(a[0])
    ref = plain(*[_arr(v) for v in args])
    out = jf(*a)
    first = out if not isinstance(out, tuple) else out[0]
    assert _ptr(first) == p and a[0].is_deleted()
    for g, w in zip(pyjax.tree.leaves(out), pyjax.tree.leaves(ref)):
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_whole_program_inputs_read_later_are_not_donated():
  """The input is read every iteration (a loop constant or a scanned xs), or after the
  loop, or is itself an output: its buffer must not take the result."""
  def const_in_body(w, x):
    return pyjax.lax.fori_loop(0, 5, lambda i, c: c + w * 0.5, x), x

  def read_after(w, x):
    out = pyjax.lax.fori_loop(0, 5, lambda i, c: c * 0.9 + x, w)
    return out + w.sum()

  def xs_to_ys(c, xs):
    return pyjax.lax.scan(lambda c, x: (c + x.sum(), x[::-1] * 2), c, xs)[1]

  def passthrough(w, x):
    return pyjax.lax.fori_loop(0, 3, lambda i, c: c + 1, x), w

  wn, xn = _data(30, (2048,)), _data(31, (2048,))
  cases = [(const_in_body, (wn, xn)), (read_after, (wn, xn)),
           (xs_to_ys, (np.float32(0), _data(32, (6, 2048)))), (passthrough, (wn, xn))]
  for f, args in cases:
    donate = 1 if f is xs_to_ys else 0
    jf = pyjax.jit(f, donate_argnums=donate)
    a = [_arr(v) for v in args]
    assert _whole(jf, *a).donation == {}, f.__name__
    ref = pyjax.jit(f)(*[_arr(v) for v in args])
    out = jf(*a)
    for g, w in zip(pyjax.tree.leaves(out), pyjax.tree.leaves(ref)):
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))

