"""``cond`` / ``lax.switch`` in the CPU compiler (``backends/cpu/compiler/kernels/control_flow.py``): the
branch is chosen by a C ``switch`` inside the native program -- at the top level of a
jitted function and inside native ``scan`` / ``while`` / ``fori_loop`` bodies -- so a
program (or loop body) holding a ``cond`` is one native call.  Results equal the NumPy
tier bit for bit and real JAX."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.lax.control_flow.conditionals import cond_p

import sanitizers
from test_compiler_control_flow import check as _loops_check
from test_compiler_control_flow import compiled, jleaves, numpy_tier

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def check(got, want, exact=True, rtol=1e-6, atol=0.0):
  """The loops tests' check, exact by default and with tighter tolerances."""
  _loops_check(got, want, exact, rtol=rtol, atol=atol)


def assert_whole(exe, n_conds, n_loops=0):
  """The whole program is one native call with ``n_conds`` conds (and ``n_loops`` loops)
  whose branches are chosen in C."""
  prog = exe.native
  assert prog.whole is not None
  assert prog.native_conds == n_conds
  assert prog.native_loops == n_loops
  assert not prog.host_steps
  text = exe.as_text()
  assert "one native call runs the whole program" in text
  assert ("static void pj_cond" in text) == (n_conds > 0)


def run_all(f, jf, args, n_conds=1, n_loops=0):
  """``jit(f)`` natively (one call), against the NumPy tier (bit for bit) and JAX."""
  got, exe = compiled(f, *args)
  if n_conds is not None:
    assert_whole(exe, n_conds, n_loops)
  check(got, numpy_tier(f, *args))
  check(got, jleaves(jax.jit(jf)(*args)))
  return got, exe


# --- top level ---------------------------------------------------------------------------
def _two(lx):
  return lambda p, x: lx.cond(p, lambda x: x * 2.0, lambda x: x - 1.0, x)


@pytest.mark.parametrize("p", [True, False])
def test_cond_top_level(p):
  x = np.array([1.5, -2.0, 0.25, 7.0], np.float32)
  run_all(_two(lax), _two(jax.lax), (np.bool_(p), x))


def _switch(lx, n):
  def f(i, x, y):
    brs = [(lambda k: lambda x, y: (x * float(k + 1) - y, y + k))(k) for k in range(n)]
    return lx.switch(i, brs, x, y)
  return f


@pytest.mark.parametrize("n", [1, 2, 5])
def test_switch_branches_and_clamping(n):
  """``switch`` clamps its index before the ``cond`` (one branch: no ``cond`` at all)."""
  x = np.array([1.0, 2.0, 3.0], np.float32)
  y = np.array([4, 5, 6], np.int32)
  f = _switch(lax, n)
  prev = executable.set_compile_mode("sync")
  try:
    jf = pyjax.jit(f)
    exe = jf.lower(np.int32(0), x, y).compile().runtime_executable()
    assert exe.tier == "native", exe.error
    if n > 1:
      assert_whole(exe, 1)
    got = {i: jf(np.int32(i), x, y) for i in (-7, -1, 0, 1, 2, 4, 5, 9, 2**31 - 1)}
  finally:
    executable.set_compile_mode(prev)
  jf_jax = jax.jit(_switch(jax.lax, n))
  for i, g in got.items():
    check(g, numpy_tier(f, np.int32(i), x, y))
    check(g, jleaves(jf_jax(np.int32(i), x, y)))


def _branch_jaxprs(n):
  return tuple(pyjax.make_jaxpr(lambda x, k=k: x * float(k + 1) + float(k))(np.float32(0))
               for k in range(n))


@pytest.mark.parametrize("dtype,n", [(np.int32, 3), (np.int8, 3), (np.uint8, 3),
                                     (np.uint32, 3), (np.bool_, 2), (np.int32, 1)])
def test_primitive_index_out_of_range(dtype, n):
  """The primitive itself (no clamp before it): an out-of-range index, negative ones
  included, runs the last branch, as XLA's conditional and the eager implementation do."""
  brs = _branch_jaxprs(n)

  def f(i, x):
    return cond_p.bind(i, x, branches=brs)[0]
  x = np.float32(1.5)
  values = [0, 1] if dtype is np.bool_ else [0, 1, 2, 3, 100, np.iinfo(dtype).max]
  if dtype in (np.int32, np.int8):
    values += [-1, -100, np.iinfo(dtype).min]
  for v in values:
    i = np.asarray(v, dtype)
    got, exe = compiled(f, i, x)
    assert_whole(exe, 1)
    k = min(int(v), n - 1) if int(v) >= 0 else n - 1
    assert np.asarray(got) == np.float32(1.5) * np.float32(k + 1) + np.float32(k)
    check(got, numpy_tier(f, i, x))


# --- branch outputs ----------------------------------------------------------------------
def _pytree(lx, ljnp):
  def f(i, x, n):
    def b0(x, n):
      return {"f": x * 3.0, "i": n + 1, "b": x > 0, "h": (x * 0.5).astype(ljnp.float16)}

    def b1(x, n):
      return {"f": x, "i": n * n, "b": n > 2, "h": x.astype(ljnp.float16)}

    def b2(x, n):   # constants and literals as outputs
      return {"f": ljnp.full(x.shape, 2.5, ljnp.float32), "i": ljnp.arange(3, dtype=ljnp.int32),
              "b": ljnp.zeros(3, bool), "h": ljnp.asarray([1, 2, 3], ljnp.float16)}
    return lx.switch(i, [b0, b1, b2], x, n)
  return f


@pytest.mark.parametrize("i", [0, 1, 2])
def test_pytree_mixed_dtypes(i):
  x = np.array([1.25, -3.5, 100.0], np.float32)
  n = np.array([1, 2, 3], np.int32)
  run_all(_pytree(lax, jnp), _pytree(jax.lax, jjnp), (np.int32(i), x, n))


def _forward(lx, ljnp, table):
  def f(p, x, y):
    def t(x, y):
      return x, y, 7.0, table       # inputs unchanged, a literal, a constant
    def e(x, y):
      return y, x, x[0], table * 2.0
    return lx.cond(p, t, e, x, y)
  return f


@pytest.mark.parametrize("p", [True, False])
def test_forward_inputs_constants_literals(p):
  table = np.arange(5, dtype=np.float32)
  x = np.array([1.0, 2.0], np.float32)
  y = np.array([3.0, 4.0], np.float32)
  run_all(_forward(lax, jnp, table), _forward(jax.lax, jjnp, table), (np.bool_(p), x, y))


def _same_input_twice(lx):
  # both outputs forwarded from the same input by one branch: two copies of one buffer
  return lambda p, x: lx.cond(p, lambda x: (x, x), lambda x: (x + 1, x - 1), x)


@pytest.mark.parametrize("p", [True, False])
def test_repeated_forwarded_output(p):
  x = np.array([1, 2, 3], np.int32)
  run_all(_same_input_twice(lax), _same_input_twice(jax.lax), (np.bool_(p), x))


def _empty(lx, ljnp):
  def f(p, z):
    a = lx.cond(p, lambda: ljnp.float32(1.0), lambda: ljnp.float32(2.0))
    b = lx.cond(p, lambda z: z + 1.0, lambda z: z * 2.0, z)
    c = lx.cond(p, lambda: (), lambda: ())
    return a, b, c
  return f


@pytest.mark.parametrize("p", [True, False])
def test_empty_operands(p):
  z = np.zeros((0, 3), np.float32)
  run_all(_empty(lax, jnp), _empty(jax.lax, jjnp), (np.bool_(p), z), n_conds=2)


def _nested(lx):
  def f(i, j, x):
    inner = lambda x: lx.switch(j, [lambda x: x + 1.0, lambda x: x * 3.0, lambda x: -x], x)
    return lx.cond(i > 0, inner, lambda x: x - 5.0, x)
  return f


def test_nested_conds():
  x = np.array([2.0, -1.0], np.float32)
  for i in (0, 1):
    for j in (0, 1, 2, 3):
      run_all(_nested(lax), _nested(jax.lax), (np.int32(i), np.int32(j), x), n_conds=2)


# --- inside loops ------------------------------------------------------------------------
def _fori(lx):
  return lambda c: lx.fori_loop(0, 9, lambda i, c: lx.cond(i % 2 == 0, lambda c: c * 2.0,
                                                          lambda c: c - 1.0, c), c)


def test_cond_in_fori_body():
  c = np.array([1.0, 2.0, -3.0, 0.5], np.float32)
  run_all(_fori(lax), _fori(jax.lax), (c,), n_conds=1, n_loops=1)


def _scan(lx, ljnp, reverse):
  def f(c, xs, ks):
    def step(c, xk):
      x, k = xk
      c2, y = lx.switch(k, [lambda c, x: (c + x, x > 0), lambda c, x: (c * x, x < 1),
                            lambda c, x: (c - x, c > x)], c, x)
      return c2, (y, c2.astype(ljnp.int32))
    return lx.scan(step, c, (xs, ks), reverse=reverse)
  return f


@pytest.mark.parametrize("reverse", [False, True])
def test_switch_in_scan_body(reverse):
  rng = np.random.default_rng(1)
  c = rng.standard_normal(3).astype(np.float32)
  xs = rng.standard_normal((11, 3)).astype(np.float32)
  ks = rng.integers(-2, 5, 11).astype(np.int32)
  run_all(_scan(lax, jnp, reverse), _scan(jax.lax, jjnp, reverse), (c, xs, ks),
          n_conds=1, n_loops=1)


def _while(lx):
  def f(x, n):
    def cond_fun(c):
      i, x = c
      return lx.cond(i % 3 == 0, lambda x: x.sum() < 1000.0, lambda x: i < n, x)

    def body(c):
      i, x = c
      return i + 1, lx.cond(x[0] > 10.0, lambda x: x - 3.0, lambda x: x * 2.0, x)
    return lx.while_loop(cond_fun, body, (np.int32(0), x))
  return f


@pytest.mark.parametrize("n", [0, 5, 40])
def test_cond_in_while_body_and_condition(n):
  x = np.array([1.0, 0.5], np.float32)
  run_all(_while(lax), _while(jax.lax), (x, np.int32(n)), n_conds=2, n_loops=1)


def _cond_of_loop(lx):
  # a loop inside a branch, the branch inside a loop
  def f(k, c):
    inner = lambda c: lx.fori_loop(0, 3, lambda j, c: c * 0.5 + 1.0, c)
    return lx.fori_loop(0, 4, lambda i, c: lx.cond((i + k) % 2 == 0, inner, lambda c: c - 1.0, c), c)
  return f


def test_loop_inside_branch_inside_loop():
  c = np.array([8.0, -2.0], np.float32)
  for k in (0, 1):
    # x * 0.5 is exact, so XLA's fused multiply-add and pyjax's two roundings (both tiers:
    # no contraction) agree: bit for bit with the NumPy tier and with JAX
    got, exe = compiled(_cond_of_loop(lax), np.int32(k), c)
    assert_whole(exe, 1, 2)
    check(got, numpy_tier(_cond_of_loop(lax), np.int32(k), c))
    check(got, jleaves(jax.jit(_cond_of_loop(jax.lax))(np.int32(k), c)))


# --- transformations ---------------------------------------------------------------------
def _vmap_index(api, lx):
  return api.vmap(lambda i, x: lx.switch(i, [lambda x: x + 1.0, lambda x: x * 2.0,
                                             lambda x: x - 3.0], x))


def test_vmap_batched_index():
  """A batched index turns the cond into a select_n of every branch (no cond left)."""
  i = np.array([0, 1, 2, 5, -1], np.int32)
  x = np.arange(10, dtype=np.float32).reshape(5, 2)
  got, exe = compiled(_vmap_index(pyjax, lax), i, x)
  assert exe.native.native_conds == 0
  check(got, numpy_tier(_vmap_index(pyjax, lax), i, x))
  check(got, jleaves(jax.jit(_vmap_index(jax, jax.lax))(i, x)))


def _vmap_operand(api, lx):
  return lambda i, x: api.vmap(lambda x: lx.switch(i, [lambda x: x + 1.0, lambda x: x * x], x))(x)


def test_vmap_unbatched_index():
  """An unbatched index keeps the cond (of batched branches): native."""
  x = np.arange(6, dtype=np.float32).reshape(3, 2)
  for i in (0, 1):
    run_all(_vmap_operand(pyjax, lax), _vmap_operand(jax, jax.lax), (np.int32(i), x))


def _vmap_loop(api, lx):
  return api.vmap(lambda c: lx.fori_loop(0, 6, lambda i, c: lx.cond(i % 2 == 0, lambda c: c * 2.0,
                                                                     lambda c: c - 1.0, c), c))


def test_vmap_of_loop_with_cond():
  c = np.arange(8, dtype=np.float32).reshape(4, 2)
  run_all(_vmap_loop(pyjax, lax), _vmap_loop(jax, jax.lax), (c,), n_conds=1, n_loops=1)


def _grad_loop(api, lx):
  def loss(x):
    c = lx.fori_loop(0, 5, lambda i, c: lx.cond(i % 2 == 0, lambda c: c * c, lambda c: c * 0.5, c), x)
    return c.sum()
  return api.grad(loss)


def test_grad_of_loop_with_cond():
  x = np.array([0.5, -1.25, 1.5], np.float32)
  got, exe = compiled(_grad_loop(pyjax, lax), x)
  assert exe.native.whole is not None and exe.native.native_conds >= 1
  assert exe.native.native_loops >= 1 and not exe.native.host_steps
  check(got, numpy_tier(_grad_loop(pyjax, lax), x))
  check(got, jleaves(jax.jit(_grad_loop(jax, jax.lax))(x)))


# --- fallbacks -----------------------------------------------------------------------------
def _host_step(v):
  """A NumPy step (a pure_callback)."""
  return pyjax.pure_callback(lambda a: np.sort(a), pyjax.ShapeDtypeStruct(v.shape, v.dtype), v)


def test_numpy_step_in_branch_falls_back():
  """A branch with a NumPy step keeps the host-driven choice (branches still native where
  they can be); results unchanged."""
  def f(c):
    return lax.fori_loop(0, 4, lambda i, c: lax.cond(i % 2 == 0, _host_step, lambda c: c - 1.0, c), c)
  c = np.array([3.0, 1.0, 2.0], np.float32)
  got, exe = compiled(f, c)
  assert exe.native.whole is None
  assert exe.native.native_conds == 0 and exe.native.native_loops == 0
  check(got, numpy_tier(f, c))


def test_cond_beside_numpy_step_runs_in_c():
  """A program with a NumPy step outside the cond: the cond is one native call of its own."""
  def f(p, c, v):
    return lax.cond(p, lambda c: c * 2.0, lambda c: c + 1.0, c), _host_step(v)
  c = np.array([3.0, 1.0], np.float32)
  for p in (True, False):
    got, exe = compiled(f, np.bool_(p), c, c)
    assert exe.native.whole is None and exe.native.native_conds == 1
    assert "native branches): in C" in exe.as_text()
    check(got, numpy_tier(f, np.bool_(p), c, c))


def test_effect_in_branch_falls_back():
  """A branch with an effect (a debug callback) is not compiled into C: the callback runs
  once per taken branch, in order."""
  seen = []

  def f(c):
    def t(c):
      pyjax.debug.callback(lambda v: seen.append(float(v)), c[0])
      return c * 2.0
    return lax.fori_loop(0, 4, lambda i, c: lax.cond(i % 2 == 0, t, lambda c: c - 1.0, c), c)
  c = np.array([1.0, 5.0], np.float32)
  got, exe = compiled(f, c)
  assert exe.native.whole is None and exe.native.native_conds == 0
  assert seen == [1.0, 1.0]
  check(got, numpy_tier(f, c))


def test_native_loops_off(monkeypatch):
  monkeypatch.setenv("PYJAX_NATIVE_LOOPS", "0")
  x = np.array([1.0, 2.0], np.float32)
  got, exe = compiled(_fori(lax), x)
  assert exe.native.whole is None and exe.native.native_conds == 0
  check(got, numpy_tier(_fori(lax), x))


# --- sanitizers ----------------------------------------------------------------------------
_ASAN_SCRIPT = r'''
import numpy as np, pyjax, pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable

def both(f, *args):
  executable.set_compile_mode("sync")
  jf = pyjax.jit(f)
  exe = jf.lower(*args).compile().runtime_executable()
  assert exe.tier == "native" and exe.native.whole is not None, exe.error
  assert exe.native.native_conds >= 1
  got = [np.asarray(v) for v in pyjax.tree_util.tree_leaves(jf(*args))]
  executable.set_compile_mode("off")
  want = [np.asarray(v) for v in pyjax.tree_util.tree_leaves(pyjax.jit(f)(*args))]
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g, w)

x = np.array([1.5, -2.0, 0.25], np.float32)
n = np.array([1, 2, 3], np.int32)
for i in (-3, 0, 1, 2, 9):
  both(lambda i, x, n: lax.switch(i, [
      lambda x, n: (x * 3.0, n + 1, x > 0, x.astype(jnp.float16)),
      lambda x, n: (x, n, n > 2, jnp.asarray([1, 2, 3], jnp.float16)),
      lambda x, n: (jnp.full(3, 2.5, jnp.float32), jnp.arange(3, dtype=jnp.int32), x < 0,
                    (x * 0.5).astype(jnp.float16))], x, n), np.int32(i), x, n)
for p in (True, False):
  both(lambda p, z: (lax.cond(p, lambda: jnp.float32(1.0), lambda: jnp.float32(2.0)),
                     lax.cond(p, lambda z: z + 1.0, lambda z: z * 2.0, z)),
       np.bool_(p), np.zeros((0, 3), np.float32))
  both(lambda p, x: lax.cond(p, lambda x: (x, x), lambda x: (x + 1, x - 1), x), np.bool_(p), n)
both(lambda c: lax.fori_loop(0, 9, lambda i, c: lax.cond(i % 2 == 0, lambda c: c * 2.0,
                                                          lambda c: c - 1.0, c), c), x)
both(lambda c, xs, ks: lax.scan(lambda c, xk: lax.switch(xk[1], [lambda c, x: (c + x, x > 0),
     lambda c, x: (c * x, x < 1)], c, xk[0]), c, (xs, ks), reverse=True),
     x, np.ones((5, 3), np.float32), np.array([0, 1, -1, 1, 7], np.int32))
for m in (0, 5, 40):
  both(lambda x, m: lax.while_loop(
      lambda c: lax.cond(c[0] % 3 == 0, lambda x: x.sum() < 1000.0, lambda x: c[0] < m, c[1]),
      lambda c: (c[0] + 1, lax.cond(c[1][0] > 10.0, lambda x: x - 3.0, lambda x: x * 2.0, c[1])),
      (np.int32(0), x)), x, np.int32(m))
both(pyjax.vmap(lambda c: lax.fori_loop(0, 6, lambda i, c: lax.cond(i % 2 == 0, lambda c: c * 2.0,
     lambda c: c - 1.0, c), c)), np.ones((4, 2), np.float32))
both(pyjax.grad(lambda x: lax.fori_loop(0, 5, lambda i, c: lax.cond(i % 2 == 0, lambda c: c * c,
     lambda c: c * 0.5, c), x).sum()), x)
print("ASAN CONDS OK")
'''


@pytest.mark.slow
def test_sanitizers_native_conds(tmp_path):
  """Conds (pytrees of mixed dtypes, clamped indices, empty operands, forwarded inputs,
  constants, inside scan / while / fori bodies and conditions, vmap, grad) with the
  generated code built under AddressSanitizer and UndefinedBehaviorSanitizer."""
  r = sanitizers.run(tmp_path, ["-c", _ASAN_SCRIPT], timeout=1200)
  assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
  assert "ASAN CONDS OK" in r.stdout
