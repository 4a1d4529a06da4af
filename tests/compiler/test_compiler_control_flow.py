"""Native loops of the CPU compiler (``backends/cpu/compiler/kernels/control_flow.py``): ``scan``,
``while_loop`` and ``fori_loop`` run as C loops (one native call per jitted call), with
results equal to the NumPy tier and to JAX."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

import sanitizers

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def compiled(f, *args):
  """(result of ``jit(f)`` on the native tier, its executable)."""
  prev = executable.set_compile_mode("sync")
  try:
    jf = pyjax.jit(lambda *a: f(*a))
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.error is None, exe.error
    assert exe.tier == "native"
    out = jf(*args)
  finally:
    executable.set_compile_mode(prev)
  return out, exe


def numpy_tier(f, *args):
  prev = executable.set_compile_mode("off")
  try:
    return pyjax.jit(lambda *a: f(*a))(*args)
  finally:
    executable.set_compile_mode(prev)


def leaves(x):
  return [np.asarray(v) for v in pyjax.tree_util.tree_leaves(x)]


def jleaves(x):
  return [np.asarray(v) for v in jax.tree_util.tree_leaves(x)]


def check(got, want, exact, rtol=2e-5, atol=1e-6):
  got, want = leaves(got), leaves(want) if not isinstance(want, list) else want
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    if exact:
      np.testing.assert_array_equal(g, w)
    else:
      np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def assert_whole(exe, n_loops):
  """The whole program is one native call with ``n_loops`` loops inside the C."""
  prog = exe.native
  assert prog.whole is not None
  assert prog.native_loops == n_loops
  assert not prog.host_steps
  text = exe.as_text()
  assert "one native call runs the whole program" in text
  assert "for (int64_t t = 0; t <" in text or "for (;;)" in text


def run_all(f, jf, args, exact, n_loops=1, whole=True, **tol):
  got, exe = compiled(f, *args)
  if whole:
    assert_whole(exe, n_loops)
  check(got, numpy_tier(f, *args), exact, **tol)
  check(got, jleaves(jax.jit(jf)(*args)), exact, **tol)
  return got, exe


# --- fori_loop -----------------------------------------------------------------------------
def _fori_static(lx, ln):
  return lambda c: lx.fori_loop(0, 50, lambda i, c: c * 0.5 + ln.sin(c) + i.astype(c.dtype), c)


def test_fori_static_bounds():
  x = np.linspace(-1, 1, 4).astype(np.float32)
  got, exe = run_all(_fori_static(lax, jnp), _fori_static(jax.lax, jjnp), (x,), exact=False)
  assert "for (int64_t t = 0; t < 50; t++)" in exe.as_text()


def _fori_traced(lx):
  return lambda lo, hi, c: lx.fori_loop(lo, hi, lambda i, c: c * 3 + i, c)


def test_fori_traced_bounds_int():
  args = (np.int32(2), np.int32(13), np.arange(5, dtype=np.int32))
  got, exe = run_all(_fori_traced(lax), _fori_traced(jax.lax), args, exact=True)
  assert "for (;;)" in exe.as_text()
  # an empty range and a reversed one run no iteration
  for lo, hi in ((4, 4), (9, 3)):
    a = (np.int32(lo), np.int32(hi), np.arange(5, dtype=np.int32))
    g, _ = compiled(_fori_traced(lax), *a)
    np.testing.assert_array_equal(np.asarray(g), np.arange(5, dtype=np.int32))


# --- while_loop ----------------------------------------------------------------------------
def _collatz(lx, ln):
  def f(n):
    def body(c):
      n, k = c
      return ln.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1
    return lx.while_loop(lambda c: c[0] > 1, body, (n, ln.int32(0)))
  return f


def test_while_data_dependent():
  for n in (27, 1, 97):
    run_all(_collatz(lax, jnp), _collatz(jax.lax, jjnp), (np.int32(n),), exact=True)


def _vmapped_while(lx, ln, vmap):
  def f(n, x):
    def one(n, x):
      def body(c):
        i, x = c
        return i + 1, x * 1.5 + 1.0
      return lx.while_loop(lambda c: c[0] < n, body, (ln.int32(0), x))
    return vmap(one)(n, x)
  return f


def test_vmap_while_batched_predicate():
  n = np.array([0, 3, 7, 1, 5], np.int32)
  x = np.arange(10, dtype=np.float32).reshape(5, 2)
  got, exe = run_all(_vmapped_while(lax, jnp, pyjax.vmap), _vmapped_while(jax.lax, jjnp, jax.vmap),
                     (n, x), exact=False)
  i, xs = leaves(got)
  np.testing.assert_array_equal(i, n)     # every lane stops at its own count


# --- scan --------------------------------------------------------------------------------
def _scan_tree(lx, ln, reverse=False, length=None):
  def f(c0, c1, xs, ws):
    def step(c, x):
      a, (b, k) = c
      xv, w = x
      a2 = a * 0.9 + xv * w
      b2 = ln.maximum(b, xv.sum())
      return (a2, (b2, k + 1)), {"y": a2 + b2, "k": k, "s": xv.sum()}
    return lx.scan(step, (c0, (c1, ln.int32(0))), (xs, ws), reverse=reverse, length=length)
  return f


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_scan_pytree_carry_xs_ys(reverse, n):
  rng = np.random.default_rng(n)
  c0 = rng.standard_normal(3).astype(np.float32)
  c1 = np.float32(-5.0)
  xs = rng.standard_normal((n, 3)).astype(np.float32)
  ws = rng.standard_normal((n, 3)).astype(np.float32)
  run_all(_scan_tree(lax, jnp, reverse), _scan_tree(jax.lax, jjnp, reverse), (c0, c1, xs, ws),
          exact=False)


def _scan_reverse_int(lx):
  def f(c, xs):
    return lx.scan(lambda c, x: (c * 31 + x, c - x), c, xs, reverse=True)
  return f


def test_scan_reverse_exact():
  xs = np.arange(-20, 20, dtype=np.int32).reshape(10, 4)
  c = np.array([1, 2, 3, 4], np.int32)
  got, exe = run_all(_scan_reverse_int(lax), _scan_reverse_int(jax.lax), (c, xs), exact=True)
  assert "const int64_t i = 9 - t;" in exe.as_text()


def _scan_no_xs(lx, ln):
  def f(c):
    return lx.scan(lambda c, _: (c + 1.0, ln.sin(c)), c, None, length=6)
  return f


def test_scan_xs_none():
  c = np.linspace(0, 1, 3, dtype=np.float32)
  run_all(_scan_no_xs(lax, jnp), _scan_no_xs(jax.lax, jjnp), (c,), exact=False)


def _scan_no_carry(lx):
  return lambda xs: lx.scan(lambda c, x: (c, x * 2 + 1), (), xs)[1]


def test_scan_empty_carry():
  xs = np.arange(12, dtype=np.int32).reshape(4, 3)
  run_all(_scan_no_carry(lax), _scan_no_carry(jax.lax), (xs,), exact=True)
  xs0 = np.zeros((0, 3), np.int32)
  got, _ = compiled(_scan_no_carry(lax), xs0)
  assert np.asarray(got).shape == (0, 3)


def _linreg(jx):
  def f(w, x, y):
    def step(w, _):
      g = jx.grad(lambda w: ((x @ w - y) ** 2).mean())(w)
      return w - 0.1 * g, None
    return jx.lax.scan(step, w, None, length=1000)[0]
  return f


def test_scan_inside_grad_linreg():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((64, 4)).astype(np.float32)
  y = rng.standard_normal(64).astype(np.float32)
  w = np.zeros(4, np.float32)
  run_all(_linreg(pyjax), _linreg(jax), (w, x, y), exact=False, rtol=1e-4, atol=1e-5)


def _grad_of_scan(jx, ln):
  def loss(w, xs):
    c, ys = jx.lax.scan(lambda c, x: (c * w + ln.tanh(x), c * x), ln.float32(1.0), xs)
    return c + ys.sum()
  return jx.grad(loss)


def test_grad_of_scan():
  xs = np.linspace(-1, 1, 8).astype(np.float32)
  run_all(_grad_of_scan(pyjax, jnp), _grad_of_scan(jax, jjnp), (np.float32(0.7), xs),
          exact=False, n_loops=2, rtol=1e-4)


def _nested(lx, ln):
  def f(c, xs):
    def step(c, x):
      c = lx.fori_loop(0, 3, lambda i, c: c * 0.5 + x, c)
      return c, c.sum()
    return lx.scan(step, c, xs)
  return f


def test_nested_fori_in_scan():
  c = np.ones(4, np.float32)
  xs = np.linspace(0, 1, 20, dtype=np.float32).reshape(5, 4)
  got, exe = run_all(_nested(lax, jnp), _nested(jax.lax, jjnp), (c, xs), exact=False, n_loops=2)


def _carry_dtype(lx):
  def f(c):
    def body(i, c):
      return c * 3 + (c >> 2 if c.dtype.kind == "i" else c / 4) - i.astype(c.dtype)
    return lx.fori_loop(0, 9, body, c)
  return f


@pytest.mark.parametrize("dt", ["float32", "float64", "int32"])
def test_carry_dtypes(dt):
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", dt == "float64")
  jprev = jax.config.jax_enable_x64
  jax.config.update("jax_enable_x64", dt == "float64")
  try:
    c = (np.arange(6) - 2).astype(dt)
    got, _ = run_all(_carry_dtype(lax), _carry_dtype(jax.lax), (c,), exact=dt == "int32")
    assert np.asarray(got).dtype == np.dtype(dt)
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    jax.config.update("jax_enable_x64", jprev)


def _cond_pass(lx):
  return lambda b, x: lx.while_loop(lambda c: c[0], lambda c: (c[1] < 100, c[1] * 2), (b, x))


def test_while_predicate_is_a_carry():
  for b in (True, False):
    run_all(_cond_pass(lax), _cond_pass(jax.lax), (np.bool_(b), np.int32(3)), exact=True)


def test_outputs_passthrough_literal_duplicate():
  """Program outputs that are inputs, literals, constants or repeated values are copied."""
  k = np.arange(3, dtype=np.float32)

  def f(c, x):
    r = lax.fori_loop(0, 4, lambda i, c: c * 2 + 1, c)
    return r, r, x, jnp.float32(2.0), jnp.asarray(k), r + 1
  args = (np.arange(3, dtype=np.int32), np.ones(3, np.float32))
  got, exe = compiled(f, *args)
  assert_whole(exe, 1)
  check(got, numpy_tier(f, *args), exact=True)


# --- fallbacks ---------------------------------------------------------------------------
def _host_sort(v):
  """A NumPy step that stays one: a pure_callback (sort itself is native now)."""
  return pyjax.pure_callback(lambda a: np.sort(a), pyjax.ShapeDtypeStruct(v.shape, v.dtype), v)


def test_numpy_step_in_body_falls_back():
  """A body with a NumPy step (a callback) keeps the Python-driven loop; results unchanged."""
  def f(c, xs):
    return lax.scan(lambda c, x: (_host_sort(c + x), c.sum()), c, xs)
  c = np.array([3, 1, 2], np.float32)
  xs = np.arange(12, dtype=np.float32).reshape(4, 3)
  got, exe = compiled(f, c, xs)
  assert exe.native.whole is None and exe.native.native_loops == 0
  check(got, numpy_tier(f, c, xs), exact=True)


def test_cond_in_body_runs_in_c():
  """A loop whose body holds a ``cond`` is one native call: the branch is chosen in C
  (``tests/compiler/test_compiler_control_flow_cond.py`` covers ``cond`` itself)."""
  def f(c):
    return lax.fori_loop(0, 6, lambda i, c: lax.cond(i % 2 == 0, lambda c: c * 2, lambda c: c - 1, c), c)
  c = np.arange(4, dtype=np.int32)
  got, exe = compiled(f, c)
  assert_whole(exe, 1)
  assert exe.native.native_conds == 1
  check(got, numpy_tier(f, c), exact=True)
  check(got, jleaves(jax.jit(lambda c: jax.lax.fori_loop(
      0, 6, lambda i, c: jax.lax.cond(i % 2 == 0, lambda c: c * 2, lambda c: c - 1, c), c))(c)),
      exact=True)


def test_loop_beside_numpy_step_runs_in_c():
  """A program with a NumPy step outside the loop: the loop is one native call of its own."""
  def f(c, v):
    c = lax.fori_loop(0, 10, lambda i, c: c * 2 + 1, c)
    return c, _host_sort(v)
  c = np.arange(3, dtype=np.int32)
  v = np.array([3.0, 1.0, 2.0], np.float32)
  got, exe = compiled(f, c, v)
  assert exe.native.whole is None and exe.native.native_loops == 1
  assert "loop in C" in exe.as_text()
  check(got, numpy_tier(f, c, v), exact=True)


def test_native_loops_off(monkeypatch):
  monkeypatch.setenv("PYJAX_NATIVE_LOOPS", "0")
  f = _fori_traced(lax)
  args = (np.int32(0), np.int32(5), np.arange(3, dtype=np.int32))
  got, exe = compiled(f, *args)
  assert exe.native.native_loops == 0
  check(got, numpy_tier(f, *args), exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("n", [0, 1, 2, 33, 1000])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_length_sweep(n, reverse):
  rng = np.random.default_rng(n)
  c0 = rng.standard_normal(3).astype(np.float32)
  xs = rng.standard_normal((n, 3)).astype(np.float32)
  ws = rng.standard_normal((n, 3)).astype(np.float32)
  run_all(_scan_tree(lax, jnp, reverse), _scan_tree(jax.lax, jjnp, reverse),
          (c0, np.float32(0), xs, ws), exact=False, rtol=1e-4)


_ASAN_SCRIPT = r'''
import numpy as np, pyjax, pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable

def both(f, *args):
  executable.set_compile_mode("sync")
  jf = pyjax.jit(f)
  exe = jf.lower(*args).compile().runtime_executable()
  assert exe.tier == "native" and exe.native.native_loops >= 1, exe.error
  got = [np.asarray(v) for v in pyjax.tree_util.tree_leaves(jf(*args))]
  executable.set_compile_mode("off")
  want = [np.asarray(v) for v in pyjax.tree_util.tree_leaves(pyjax.jit(lambda *a: f(*a))(*args))]
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)

def tree(reverse):
  def f(c, xs):
    def step(c, x):
      a, k = c
      return (a * 0.5 + x, k + 1), (a.sum(), x * 2)
    return lax.scan(step, (c, jnp.int32(0)), xs, reverse=reverse)
  return f
for n in (0, 1, 5):
  for rev in (False, True):
    both(tree(rev), np.ones(3, np.float32), np.arange(3 * n, dtype=np.float32).reshape(n, 3))
both(lambda xs: lax.scan(lambda c, x: (c, x + 1), (), xs)[1], np.zeros((0, 2), np.int32))
both(lambda xs: lax.scan(lambda c, x: (c, x + 1), (), xs)[1], np.ones((4, 2), np.int32))
both(lambda c: lax.scan(lambda c, _: (c + 1, c), c, None, length=3), np.float32(1))
both(lambda lo, hi, c: lax.fori_loop(lo, hi, lambda i, c: c * 3 + i, c),
     np.int32(1), np.int32(9), np.arange(4, dtype=np.int32))
both(lambda n, x: pyjax.vmap(lambda n, x: lax.while_loop(lambda c: c[0] < n,
     lambda c: (c[0] + 1, c[1] * 2), (jnp.int32(0), x)))(n, x),
     np.array([0, 2, 5], np.int32), np.ones((3, 2), np.float32))
both(lambda c, xs: lax.scan(lambda c, x: (lax.fori_loop(0, 3, lambda i, c: c * 0.5 + x, c), c.sum()),
     c, xs), np.ones(4, np.float32), np.ones((5, 4), np.float32))
rng = np.random.default_rng(0)
for xs, ws, kw in [((2, 4, 9, 7), (6, 2, 3, 2), dict(window_strides=(2, 1), padding=((1, 2), (0, -1)),
                    lhs_dilation=(1, 2), rhs_dilation=(2, 1), feature_group_count=2)),
                   ((2, 5, 6, 3), (3, 3, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                    dimension_numbers=("NHWC", "HWIO", "NHWC")))]:
  x = rng.standard_normal(xs).astype(np.float32)
  w = rng.standard_normal(ws).astype(np.float32)
  # a convolution inside a scan body: native conv and native loop together
  both(lambda x, w: lax.scan(lambda c, _: (c, lax.conv_general_dilated(x, w, **kw)), 0.0, None,
                             length=2)[1], x, w)
print("ASAN LOOPS OK")
'''


@pytest.mark.slow
def test_sanitizers_native_loops(tmp_path):
  """Loops (empty, length-1, reverse, empty carries, batched predicates, nested) with the
  generated code built under AddressSanitizer and UndefinedBehaviorSanitizer."""
  r = sanitizers.run(tmp_path, ["-c", _ASAN_SCRIPT], timeout=1200)
  assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
  assert "ASAN LOOPS OK" in r.stdout
