"""Behaviour differences from JAX found by running libraries' own test suites (optax,
chex) on pyjax: each test compares with real JAX where it is installed, else with the
values JAX 0.10 gives."""
import functools
import importlib
import inspect

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import random


def _jax():
  return pytest.importorskip("jax")


# --- complex power near zero ------------------------------------------------------------
_CPOW_POINTS = [1e-30 + 0j, 1e-30 + 1e-30j, -1e-30 + 0j, 1e-20 - 3e-21j, 3e30 + 4e30j,
                1e38 + 1e38j, 0j, 1e-45 + 0j, 2 + 1j]
_CPOW_EXPONENTS = [-0.5, 0.5, 2.5, -0.5 + 1j, 0.3 - 0.2j]


@pytest.mark.parametrize("y", _CPOW_EXPONENTS)
def test_complex_pow_near_zero_and_large(y):
  jax = _jax()
  x = np.array(_CPOW_POINTS, np.complex64)
  got = np.asarray(jnp.asarray(x) ** jnp.asarray(np.complex64(y)))
  want = np.asarray(jax.numpy.asarray(x) ** jax.numpy.asarray(np.complex64(y)))
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)


def test_complex_rsqrt_of_tiny_is_finite():
  out = complex(jnp.array(1e-30 + 0j, jnp.complex64) ** -0.5)
  assert np.isfinite(out.real) and np.isfinite(out.imag)
  np.testing.assert_allclose(out, 1e15, rtol=1e-6)


# --- tracers have .copy() ------------------------------------------------------------------
def test_tracer_copy():
  jax = _jax()
  f = lambda x: (x.copy() * 2).sum()
  x = np.arange(3.0, dtype=np.float32)
  np.testing.assert_allclose(pyjax.jit(f)(x), jax.jit(f)(x))
  np.testing.assert_allclose(pyjax.grad(f)(x), jax.grad(f)(x))
  assert str(pyjax.make_jaxpr(lambda x: x.copy())(x)) == str(jax.make_jaxpr(lambda x: x.copy())(x))
  assert (str(pyjax.make_jaxpr(lambda x: jnp.array(x, copy=True))(x))
          == str(jax.make_jaxpr(lambda x: jax.numpy.array(x, copy=True))(x)))


# --- the jit object ------------------------------------------------------------------------
def test_jit_object_is_a_wrapped_callable():
  jax = _jax()

  def f(x, y=2):
    """doc of f"""
    return x * y

  for jit in (pyjax.jit, jax.jit):
    jf = jit(f)
    assert str(inspect.signature(jf)) == "(x, y=2)"
    assert jf.__wrapped__ is f
    assert (jf.__name__, jf.__doc__, jf.__qualname__, jf.__module__) == (
        f.__name__, f.__doc__, f.__qualname__, f.__module__)
    for attr in ("lower", "trace", "eval_shape", "clear_cache"):
      assert callable(getattr(jf, attr))
    assert jf.eval_shape(1.0).shape == ()
    jf.clear_cache()

  class A:
    def __init__(self, k):
      self.k = k

    @functools.partial(pyjax.jit, static_argnums=0)
    def m(self, x):
      return x + self.k

    def __hash__(self):
      return hash(self.k)

    def __eq__(self, other):
      return self.k == other.k

  assert float(A(3.0).m(1.0)) == 4.0          # bound through the descriptor protocol
  assert A.__dict__["m"].__get__(None, A) is A.__dict__["m"]


# --- avals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64", "bfloat16"])
def test_aval_to_tangent_aval(dtype):
  jax = _jax()
  x = np.ones((2, 3), dtype=jnp.dtype(dtype))
  got = pyjax.typeof(jnp.asarray(x)).to_tangent_aval()
  want = jax.typeof(jax.numpy.asarray(x)).to_tangent_aval()
  assert str(got) == str(want)
  assert got.weak_type == want.weak_type
  w = pyjax.typeof(1.0).to_tangent_aval()
  assert str(w) == str(jax.typeof(1.0).to_tangent_aval()) and w.weak_type


# --- out_sharding= --------------------------------------------------------------------------
_SAMPLERS = {
    "bits": lambda r, k, **kw: r.bits(k, (3,), **kw),
    "uniform": lambda r, k, **kw: r.uniform(k, (3,), **kw),
    "normal": lambda r, k, **kw: r.normal(k, (3,), **kw),
    "randint": lambda r, k, **kw: r.randint(k, (3,), 0, 10, **kw),
    "bernoulli": lambda r, k, **kw: r.bernoulli(k, 0.3, (3,), **kw),
    "gamma": lambda r, k, **kw: r.gamma(k, 2.0, (3,), **kw),
    "poisson": lambda r, k, **kw: r.poisson(k, 3.0, (3,), **kw),
    "categorical": lambda r, k, **kw: r.categorical(k, np.zeros(4, np.float32), shape=(3,), **kw),
    "truncated_normal": lambda r, k, **kw: r.truncated_normal(k, -1.0, 1.0, (3,), **kw),
    "permutation": lambda r, k, **kw: r.permutation(k, 5, **kw),
}


def test_out_sharding_parameters_match_jax():
  jax = _jax()
  names = [n for n in dir(jax.random) if not n.startswith("_")]
  for n in names:
    f = getattr(jax.random, n)
    try:
      has = "out_sharding" in inspect.signature(f).parameters
    except (TypeError, ValueError):
      continue
    if has and hasattr(random, n):
      p = inspect.signature(getattr(random, n)).parameters
      assert "out_sharding" in p, n
      assert p["out_sharding"].kind is inspect.Parameter.KEYWORD_ONLY, n
  for f in (jnp.array, jnp.asarray):
    assert "out_sharding" in inspect.signature(f).parameters


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_sampler_out_sharding_none(name):
  jax = _jax()
  got = _SAMPLERS[name](random, random.key(0), out_sharding=None)
  want = _SAMPLERS[name](jax.random, jax.random.key(0), out_sharding=None)
  if name == "gamma":
    # the same bits up to gamma's log/exp: pyjax's vector math and XLA's differ in the
    # last ulp for some arguments (pyjax's eager and jitted samples agree bit for bit)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=0)
  else:
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert got.dtype == want.dtype


def test_array_out_sharding():
  jax = _jax()
  for f, g in ((jnp.array, jax.numpy.array), (jnp.asarray, jax.numpy.asarray)):
    got, want = f([1.0, 2.0], out_sharding=None), g([1.0, 2.0], out_sharding=None)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and not got.committed
  # JAX accepts only NamedSharding/PartitionSpec: a device is a TypeError with its message
  dev = pyjax.devices()[0]
  with pytest.raises(TypeError, match="`out_sharding` argument of jnp.array only supports "
                     "instances of `NamedSharding` or `PartitionSpec`"):
    jnp.array([1.0], out_sharding=dev)
  with pytest.raises(TypeError, match="`out_sharding` argument of normal only supports"):
    random.normal(random.key(0), (2,), out_sharding=dev)


# --- custom_vjp -------------------------------------------------------------------------------
def _none_ct_fn(lib, bwd_out):
  @lib.custom_vjp
  def f(x, y):
    return x["a"] * 2.0
  f.defvjp(lambda x, y: (f(x, y), None), lambda r, g: bwd_out(g))
  return f


@pytest.mark.parametrize("case", ["dict_none", "nested_none", "whole_none"])
def test_custom_vjp_none_cotangent_for_none_argument(case):
  jax = _jax()
  bwd, x, y = {
      "dict_none": (lambda g: ({"a": g * 2.0, "b": None}, None), {"a": 1.0, "b": None}, None),
      "nested_none": (lambda g: ({"a": g * 2.0, "b": None}, (None, None)),
                      {"a": 1.0, "b": 2.0}, (None, 1.0)),
      "whole_none": (lambda g: (None, None), {"a": 1.0, "b": 2.0}, None),
  }[case]
  got = pyjax.grad(_none_ct_fn(pyjax, bwd))(x, y)
  want = jax.grad(_none_ct_fn(jax, bwd))(x, y)
  assert pyjax.tree_util.tree_structure(got) == pyjax.tree_util.tree_structure(
      jax.tree_util.tree_map(np.asarray, want))
  for g, w in zip(pyjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    np.testing.assert_allclose(g, w)
  got_j = pyjax.jit(pyjax.grad(_none_ct_fn(pyjax, bwd)))(x, y)
  np.testing.assert_allclose(got_j["a"], 2.0 if case != "whole_none" else 0.0)


def _sin_vjp(lib):
  @lib.custom_vjp
  def g(x):
    return lib.numpy.sin(x)
  g.defvjp(lambda x: (g(x), x), lambda x, ct: (ct * lib.numpy.cos(x),))
  return g


def test_linearize_of_custom_vjp_raises_only_when_evaluated():
  jax = _jax()
  for lib in (jax, pyjax):
    y, f_jvp = lib.linearize(_sin_vjp(lib), 1.0)
    np.testing.assert_allclose(y, np.sin(np.float32(1.0)), rtol=1e-6)
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a "
                       "custom_vjp function"):
      f_jvp(1.0)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
      lib.jvp(_sin_vjp(lib), (1.0,), (1.0,))


def _symbolic_zeros_fn(lib, seen):
  @lib.custom_vjp
  def h(x, y):
    return x * y

  def h_fwd(x, y):
    seen.append((type(x).__name__, type(y).__name__, x.perturbed, y.perturbed))
    return h(x.value, y.value), (x.value, y.value)

  def h_bwd(res, ct):
    x, y = res
    return (ct * y, ct * x)
  h.defvjp(h_fwd, h_bwd, symbolic_zeros=True)
  return h


@pytest.mark.parametrize("transform", ["grad0", "grad1", "jit_grad", "grad_jit"])
def test_custom_vjp_symbolic_zeros_fwd_sees_custom_vjp_primal(transform):
  jax = _jax()
  results = []
  for lib in (jax, pyjax):
    seen = []
    h = _symbolic_zeros_fn(lib, seen)
    t = {"grad0": lambda: lib.grad(h)(2.0, 3.0),
         "grad1": lambda: lib.grad(h, argnums=1)(2.0, 3.0),
         "jit_grad": lambda: lib.jit(lib.grad(h))(2.0, 3.0),
         "grad_jit": lambda: lib.grad(lib.jit(h))(2.0, 3.0)}[transform]
    results.append((float(t()), seen))
  assert results[0] == results[1]
  assert results[1][1][0][:2] == ("CustomVJPPrimal", "CustomVJPPrimal")
  cvp = pyjax.custom_derivatives.CustomVJPPrimal
  tree = {"a": cvp(1.0, True), "b": [cvp(2.0, False)]}
  assert pyjax.custom_derivatives.custom_vjp_primal_tree_values(tree) == {"a": 1.0, "b": [2.0]}


def test_effect_constructible_without_argument():
  from pyjax._src import core

  class MyEffect(core.Effect):
    pass
  e = MyEffect()
  assert str(e) == "MyEffect"
  assert isinstance(core.Effect(), core.Effect)


# --- typed PRNG keys are pytree leaves -------------------------------------------------------
def test_typed_keys_are_public_pytree_leaves():
  jax = _jax()
  for lib in (jax, pyjax):
    k = lib.random.key(0)
    ks = lib.random.split(k, 3)
    tree = {"a": k, "b": [ks, 1.0]}
    leaves = lib.tree_util.tree_leaves(tree)
    assert len(leaves) == 3 and leaves[0] is k and leaves[1] is ks
    assert lib.tree.leaves(k) == [k]
    assert lib.tree.structure(tree).num_leaves == 3
    assert lib.tree.map(np.shape, tree) == {"a": (), "b": [(3,), ()]}
    assert lib.tree.map(lambda x, y: str(x.dtype) + str(y), {"k": k}, {"k": 1}) == {
        "k": "key<fry>1"}
    (path, leaf), = lib.tree_util.tree_flatten_with_path({"k": k})[0]
    assert lib.tree_util.keystr(path) == "['k']" and leaf is k
    assert lib.tree_util.all_leaves([k, ks])
    seen = []
    lib.tree.map(lambda x: seen.append(type(x).__name__), [k], is_leaf=lambda x: False)
    assert len(seen) == 1 and seen[0] != "ArrayImpl"
  # transformations still take keys anywhere in their arguments
  ks = random.split(random.key(0), 3)
  jks = jax.random.split(jax.random.key(0), 3)
  got = pyjax.jit(lambda d: pyjax.tree.map(lambda k: random.normal(k), d))({"k": ks[0]})
  want = jax.jit(lambda d: jax.tree.map(lambda k: jax.random.normal(k), d))({"k": jks[0]})
  np.testing.assert_allclose(got["k"], want["k"], rtol=1e-6)
  np.testing.assert_allclose(pyjax.vmap(random.normal)(ks), jax.vmap(jax.random.normal)(jks),
                             rtol=1e-6)


def test_compiler_hook_sees_every_jit_compilation():
  """chex.restrict_backends patches jax._src.compiler.backend_compile_and_load."""
  from pyjax._src import compiler
  inner = compiler.backend_compile_and_load
  seen = []

  def wrapper(backend, *args, **kwargs):
    seen.append(backend.platform)
    if backend.platform == "cpu":
      raise RuntimeError("forbidden by test")
    return inner(backend, *args, **kwargs)
  compiler.backend_compile_and_load = wrapper
  try:
    with pytest.raises(RuntimeError, match="forbidden by test"):
      pyjax.jit(lambda x: x * 3 + 1)(np.float32(2))
  finally:
    compiler.backend_compile_and_load = inner
  assert seen == ["cpu"]
  assert float(pyjax.jit(lambda x: x * 3 + 1)(np.float32(2))) == 7.0


def test_jit_object_type_is_named_pjit_function():
  jax = _jax()
  assert type(pyjax.jit(abs)).__name__ == type(jax.jit(abs)).__name__ == "PjitFunction"
  assert "PjitFunction" in str(type(pyjax.jit(abs)))


def test_jit_signature_without_following_wrapped():
  jax = _jax()

  def f(x, y=1, *, z=2):
    return x
  for lib in (jax, pyjax):
    assert str(inspect.signature(lib.jit(f), follow_wrapped=False)) == "(x, y=1, *, z=2)"


def test_key_arrays_in_asarray_and_array_equal():
  jax = _jax()
  for lib in (jax, pyjax):
    k1 = lib.random.split(lib.random.key(1))
    k2 = lib.random.split(lib.random.key(2))
    assert lib.numpy.asarray(k1) is k1
    assert bool(lib.numpy.array_equal(k1, k1)) and not bool(lib.numpy.array_equal(k1, k2))
    assert bool(lib.numpy.array_equal(k1, k1, equal_nan=True))
    assert bool(lib.jit(lib.numpy.array_equal)(k1, k1))
    assert not bool(lib.jit(lib.numpy.array_equal)(k1, k2))


# --- long eager loops run their body as native code (optax's 30,000-step scans) ---------------
def test_long_eager_scan_and_while_use_native_body():
  from pyjax import lax
  from pyjax._src.backends.cpu.eager import control_flow as ecf
  from pyjax._src.backends.cpu import executable

  def body(c, x):
    w, m = c
    g = 2.0 * (w - 3.0) + x
    m = 0.9 * m + g
    return (w - 0.01 * m, m), jnp.sum(w)

  xs = jnp.linspace(0.0, 1e-3, 20000)
  init = (jnp.array([1.0, 2.0]), jnp.zeros(2))
  with executable.compile_mode_override("off"):
    want_c, want_y = lax.scan(body, init, xs)
    want_w = lax.while_loop(lambda c: c[1] < 3000, lambda c: (c[0] * 0.999 + 1e-3, c[1] + 1),
                            (jnp.ones(3), 0))
  def natives():   # the native loop bodies alive now (entries go with their jaxprs)
    return {id(f) for f in ecf._native_bodies.values() if f is not None}
  new = []
  with executable.compile_mode_override("sync"):   # async would race the counts below
    before = natives()
    got_c, got_y = lax.scan(body, init, xs)
    new.append(natives() - before)
    before = natives()
    got_w = lax.while_loop(lambda c: c[1] < 3000, lambda c: (c[0] * 0.999 + 1e-3, c[1] + 1),
                           (jnp.ones(3), 0))
    new.append(natives() - before)
  np.testing.assert_allclose(got_c[0], want_c[0], rtol=1e-5)
  np.testing.assert_allclose(got_y, want_y, rtol=1e-5)
  np.testing.assert_allclose(got_w[0], want_w[0], rtol=1e-5)
  assert int(got_w[1]) == 3000
  probe = executable.compile_jaxpr(pyjax.make_jaxpr(lambda x: x + 1)(1.0), None, "probe")
  with executable.compile_mode_override("sync"):
    if probe.wait() != "native":
      pytest.skip("no C compiler: loops stay on the NumPy plan")
  assert all(new), new   # the scan body, then the while body (and its predicate)


def test_aval_sharding_outside_a_mesh():
  jax = _jax()
  got = pyjax.typeof(jnp.ones((2, 3))).sharding
  want = jax.typeof(jax.numpy.ones((2, 3))).sharding
  assert tuple(got.spec) == tuple(want.spec) == (None, None)
  for name in ("are_all_axes_auto", "are_all_axes_explicit", "are_all_axes_manual"):
    assert getattr(got.mesh, name) == getattr(want.mesh, name) is False, name
  assert got.mesh.empty and want.mesh.empty
  # a sampler accepts it as out_sharding (optax.tree_utils.tree_random_like passes it)
  x = random.normal(random.key(0), (2, 3), out_sharding=got)
  np.testing.assert_array_equal(x, jax.random.normal(jax.random.key(0), (2, 3),
                                                     out_sharding=want))


def test_stack_and_concatenate_key_arrays():
  jax = _jax()
  results = []
  for lib in (jax, pyjax):
    k = lib.random.split(lib.random.key(0), 3)
    s = lib.numpy.stack([k, k])
    c = lib.numpy.concatenate([k[None], k[None]], axis=1)
    j = lib.jit(lambda a, b: lib.numpy.stack([a, b], axis=-1))(k, k)
    assert str(s.dtype) == str(c.dtype) == str(j.dtype) == "key<fry>"
    results.append([np.asarray(lib.random.key_data(x)) for x in (s, c, j)]
                   + [s.shape, c.shape, j.shape])
    with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
      lib.numpy.stack([k, lib.numpy.ones(3)])
  for a, b in zip(*results):
    np.testing.assert_array_equal(a, b)


def test_xla_flags_host_device_count():
  """chex.set_n_cpu_devices sets XLA_FLAGS before the backends start."""
  import os
  import subprocess
  import sys
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=3")
  env.pop("JAX_NUM_CPU_DEVICES", None)
  env.pop("PYJAX_NUM_CPU_DEVICES", None)
  out = subprocess.run([sys.executable, "-c", "import pyjax; print(pyjax.device_count())"],
                       capture_output=True, text=True, env=env, timeout=120)
  assert out.stdout.strip() == "3", out.stderr[-2000:]


# --- HLO text ---------------------------------------------------------------------------------
def _hlo_entry(lib, f, x):
  import re
  text = lib.jit(f).lower(x).compiler_ir(dialect="hlo").as_hlo_text()
  body = re.search(r"ENTRY.*", text, re.DOTALL).group()
  body = re.sub("ENTRY.*?{", "ENTRY XXXX", body)
  return re.sub("ROOT.*?=", "ROOT result =", body)


@pytest.mark.parametrize("x", [3, 3.0, np.array([4, 5.2]), 1j, np.array([4 + 1j, 5.2 + 1j])])
def test_hlo_text_equalities_match_jax(x):
  """optax's numerics test: x*x, x**2, jnp.square(x) and conj(x)*x have one HLO for real
  x, and the complex abs-square differs."""
  jax = _jax()
  for lib in (jax, pyjax):
    abs_sq = lambda x: (x.conj() * x).real
    fs = [lambda x: x ** 2, lambda x: x * x, lib.numpy.square]
    texts = [_hlo_entry(lib, f, x) for f in fs]
    assert texts[0] == texts[1] and "multiply" in texts[0]
    if np.iscomplexobj(x):
      assert all(_hlo_entry(lib, abs_sq, x) != t for t in texts)
    else:
      assert all(_hlo_entry(lib, abs_sq, x) == t for t in texts)


def test_hlo_text_module():
  jax = _jax()
  x = np.ones(3, np.float32)
  f = lambda x, y: jax.numpy.exp(x) + y * 2.0
  g = lambda x, y: jnp.exp(x) + y * 2.0
  want = jax.jit(f).lower(x, x).compiler_ir(dialect="hlo").as_hlo_text()
  got = pyjax.jit(g).lower(x, x).compiler_ir(dialect="hlo").as_hlo_text()
  assert got.splitlines()[0] == want.splitlines()[0]   # module name and layout
  for line in ("exp.1 = f32[3]{0} exponential(x.1)", "constant.1 = f32[] constant(2)",
               "ROOT add.1 = f32[3]{0} add(exp.1, mul.1)"):
    assert line in got and line in want
  with pytest.raises(NotImplementedError, match="no HLO text for the primitive 'sort'"):
    pyjax.jit(jnp.sort).lower(x).compiler_ir(dialect="hlo")


def test_where_selects_key_arrays():
  jax = _jax()
  outs = []
  for lib in (jax, pyjax):
    k1 = lib.random.split(lib.random.key(0), 3)
    k2 = lib.random.split(lib.random.key(1), 3)
    c = lib.numpy.array([True, False, True])
    rs = [lib.numpy.where(c, k1, k2), lib.numpy.where(True, k1[0], k2[0]),
          lib.jit(lambda c, a, b: lib.numpy.where(c, a, b))(False, k1, k2),
          lib.vmap(lambda c, a, b: lib.numpy.where(c, a, b))(c, k1, k2)]
    assert all(str(r.dtype) == "key<fry>" for r in rs)
    outs.append([np.asarray(lib.random.key_data(r)) for r in rs])
  for a, b in zip(*outs):
    np.testing.assert_array_equal(a, b)


def test_astype_of_key_arrays():
  jax = _jax()
  for lib in (jax, pyjax):
    k = lib.random.split(lib.random.key(0), 2)
    assert lib.numpy.astype(k, k.dtype) is k or str(lib.numpy.astype(k, k.dtype).dtype) == "key<fry>"
    with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to float32"):
      lib.numpy.astype(k, lib.numpy.float32)


# --- equinox's own tests (0.13.8) -------------------------------------------------------------
def test_jvp_outputs_with_zero_tangent_are_not_tracers():
  # equinox's filter_jvp tells differentiated outputs apart by "is a JVP tracer": an output
  # of a jit whose tangent is symbolically zero leaves the JVP interpreter as a plain value
  jax = _jax()
  for lib in (jax, pyjax):
    seen = []

    def f(x, y, lib=lib, seen=seen):
      outs = lib.jit(lambda a, b: (a * 2.0, b * 3.0))(x, y)
      seen.append([isinstance(o, lib.core.Tracer) for o in outs])
      return outs

    lib.jvp(lambda x: f(x, lib.numpy.float32(1.0)), (1.0,), (1.0,))
    assert seen == [[True, False]], lib


def test_get_bind_params_rebinds_equations():
  import importlib
  jax = _jax()

  def run(lib):
    @lib.custom_jvp
    def g(x):
      return lib.numpy.sin(x)

    g.defjvp(lambda p, t: (g(p[0]), t[0] * lib.numpy.cos(p[0])))
    closed = lib.make_jaxpr(lambda x: g(x) * 2.0 + 1.0)(0.5)
    env = {v: np.float32(0.5) for v in closed.jaxpr.invars}
    literal = importlib.import_module(lib.__name__ + ".extend.core").Literal
    read = lambda v: v.val if isinstance(v, literal) else env[v]
    for eqn in closed.jaxpr.eqns:
      params = eqn.primitive.get_bind_params(eqn.params)
      assert isinstance(params, dict)
      args = [read(v) for v in eqn.invars]
      if "subfuns" in params:   # custom_jvp_call: inline its function
        out = params["subfuns"][0].call_wrapped(*args)
      else:
        out = eqn.primitive.bind(*args, **params)
      outs = out if eqn.primitive.multiple_results else [out]
      env.update(zip(eqn.outvars, outs))
    return float(read(closed.jaxpr.outvars[0]))

  assert run(pyjax) == pytest.approx(run(jax)) == pytest.approx(2 * np.sin(0.5) + 1)


def test_compile_rejects_unknown_compiler_options():
  jax = _jax()
  for lib in (jax, pyjax):
    lowered = lib.jit(lambda x: 2 * x).lower(np.float32(3))
    assert float(lowered.compile(compiler_options={"xla_gpu_autotune_level": "0"})(
        np.float32(3))) == 6.0
    with pytest.raises(lib.errors.JaxRuntimeError,
                       match="INVALID_ARGUMENT: No such compile option: 'bad option'"):
      lowered.compile(compiler_options={"bad option": "1"})


def test_vmap_passes_unmapped_non_array_leaves_through():
  jax = _jax()
  for lib in (jax, pyjax):
    f = lib.vmap(lambda x, fn: fn(x), in_axes=(0, None))
    np.testing.assert_allclose(f(np.ones(3, np.float32), lib.numpy.sin), np.sin(np.ones(3)),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="is not a valid JAX type"):
      lib.vmap(lambda x, s: x)(np.ones(3), "abc")


def test_floating_point_warnings_stay_silent_when_warnings_are_errors():
  # pytest's `filterwarnings = error` (equinox, flax) outranks pyjax's module filter: NumPy's
  # "divide by zero" must still not reach the program, which XLA never warns about
  import warnings
  x = np.array([1.0, 0.0, -1.0], np.float32)
  z = np.zeros(3, np.float32)
  c = np.array([1 + 1j, 2j], np.complex64)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    eager = np.asarray(jnp.asarray(x) / jnp.asarray(z))
    jitted = np.asarray(pyjax.jit(lambda a, b: jnp.log(a) + a / b)(x, z))
    cdiv = np.asarray(jnp.asarray(c) / jnp.asarray(np.complex64(0)))
  np.testing.assert_array_equal(eager, [np.inf, np.nan, -np.inf])
  assert np.isposinf(jitted[0]) and np.isnan(jitted[1:]).all()
  assert np.isinf(cdiv.real).any() or np.isnan(cdiv.real).any()


def test_alias_binds_loggers_under_jax_names():
  # equinox's filter_jit drops the "jax.pure_callback failed" record by its logger name
  import subprocess
  import sys
  code = ("import logging, pyjax; pyjax.install_as_jax(); "
          "lg = logging.getLogger('jax._src.callback'); "
          "assert lg is logging.getLogger('pyjax._src.callback'), lg; "
          "assert lg.name == 'jax._src.callback'; "
          "from pyjax._src import jax_alias; jax_alias.uninstall_as_jax(); "
          "assert logging.getLogger('pyjax._src.callback').name == 'pyjax._src.callback'; "
          "assert logging.getLogger('jax._src.callback') is not logging.getLogger("
          "'pyjax._src.callback'); print('ok')")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert out.stdout.strip() == "ok", out.stderr


def test_jit_returns_float0_gradients_as_numpy_arrays():
  # equinox's tree_equal compares NumPy leaves with NumPy (an Array of float0 has no `==`)
  jax = _jax()
  for lib in (jax, pyjax):
    g = lib.jit(lib.grad(lambda x, i: x * 2.0, argnums=(0, 1), allow_int=True))(1.0, 3)
    assert isinstance(g[1], np.ndarray) and g[1].dtype == lib.dtypes.float0
    assert isinstance(g[0], lib.Array)


def test_transforms_of_callables_without_a_string_name():
  jax = _jax()

  class Fn:   # (an equinox Module may have a `__name__` field of any type)
    __name__ = 3

    def __call__(self, x):
      return x * 2.0

  f = Fn()
  h = lambda x: x * 2.0
  for lib in (jax, pyjax):
    for t in (lib.vmap, lib.grad, lib.jacfwd, lib.jacrev, lib.checkpoint):
      t(f)   # (no error)
      g = t(h)
      while g is not h and hasattr(g, "__wrapped__"):   # (equinox follows the chain)
        g = g.__wrapped__
      assert g is h, (lib, t)
    np.testing.assert_allclose(lib.vmap(f)(np.ones(2, np.float32)), [2.0, 2.0])


def test_load_returns_arrays_and_dtypes_bfloat16_is_the_scalar_type():
  import io
  jax = _jax()
  assert pyjax.dtypes.bfloat16 is jax.dtypes.bfloat16
  assert isinstance(pyjax.dtypes.bfloat16(1), pyjax.dtypes.bfloat16)
  for lib in (jax, pyjax):
    f = io.BytesIO()
    lib.numpy.save(f, lib.numpy.array([2, 4], dtype="bfloat16"))
    f.seek(0)
    y = lib.numpy.load(f)
    assert isinstance(y, lib.Array) and y.dtype == lib.numpy.bfloat16
    np.testing.assert_array_equal(np.asarray(y, np.float32), [2, 4])


def test_rules_receive_tuples():
  # equinox's vprim vmaps its JVP rule with in_axes built from the batch dims
  jax = _jax()
  for lib in (jax, pyjax):
    batching = importlib.import_module(lib.__name__ + ".interpreters.batching")
    ad = importlib.import_module(lib.__name__ + ".interpreters.ad")
    prim = importlib.import_module(lib.__name__ + ".extend.core").Primitive("twice_" + lib.__name__)
    seen = []
    prim.def_impl(lambda x: 2 * x)
    prim.def_abstract_eval(lambda x: x)

    def jvp(primals, tangents):
      seen.append((type(primals), type(tangents)))
      return prim.bind(*primals), prim.bind(*tangents)

    def batch(axis_size, axis_name, trace_type, args, dims):
      seen.append((type(args), type(dims)))
      return prim.bind(*args), dims[0]

    ad.primitive_jvps[prim] = jvp
    batching.axis_primitive_batchers[prim] = batch
    lib.jvp(prim.bind, (np.float32(1),), (np.float32(1),))
    lib.vmap(prim.bind)(np.ones(2, np.float32))
    assert seen == [(tuple, tuple), (tuple, tuple)], lib


# --- flax's own tests (0.12.8, linen) -----------------------------------------------------------
def test_shaped_array_accepts_a_sharding_keyword():
  # flax's scan rebuilds avals as ShapedArray(shape, dtype, sharding=x.aval.sharding)
  jax = _jax()
  for lib in (jax, pyjax):
    x = lib.numpy.ones((3, 4))
    a = lib.core.ShapedArray((4,), np.dtype("float32"), sharding=x.aval.sharding)
    assert (a.shape, a.dtype, a.weak_type) == ((4,), np.float32, False)
    assert str(a) == "float32[4]"


def test_result_type_of_key_arrays():
  jax = _jax()
  for lib in (jax, pyjax):
    k = lib.random.split(lib.random.key(0), 3)
    assert str(lib.numpy.result_type(k)) == str(lib.numpy.result_type(k, k[0])) == "key<fry>"
    assert str(lib.dtypes.result_type(k)) == "key<fry>"
    with pytest.raises(ValueError, match="dtype=key<fry> is not a valid dtype for JAX type "
                       "promotion"):
      lib.numpy.result_type(k, 1.0)


def test_partial_eval_traces_key_avals():
  # flax's scan traces its body with pe.trace_to_jaxpr_nounits on avals of key dtype
  jax = _jax()
  for lib in (jax, pyjax):
    pe = importlib.import_module(lib.__name__ + ".interpreters.partial_eval")
    k = lib.random.key(0)
    aval = lib.core.ShapedArray((), lib.numpy.result_type(k))
    seen = []

    def f(key):
      seen.append(lib.random.uniform(key, (2,)).shape)
      return [lib.numpy.float32(1.0)]

    lu = importlib.import_module(lib.__name__ + ".extend.linear_util")
    dbg = lib.api_util.debug_info("test", f, (aval,), {})
    _, out_pvals, _ = pe.trace_to_jaxpr_nounits(lu.wrap_init(f, debug_info=dbg),
                                                [pe.PartialVal.unknown(aval)])
    assert seen == [(2,)] and float(out_pvals[0][1]) == 1.0


def test_dot_general_dimension_numbers_accept_ranges():
  # flax's fp8 ops build contracting dimensions with range()
  jax = _jax()
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  y = np.arange(12, dtype=np.float32).reshape(3, 4)
  dims = ((range(1, 2), range(0, 1)), ((), ()))
  np.testing.assert_array_equal(pyjax.lax.dot_general(x, y, dims),
                                jax.lax.dot_general(x, y, dims))


def test_linearize_returns_a_pytree_function():
  # equinox's checkpointed while_loop tests return `jax.linearize`'s function from jit(vmap)
  jax = _jax()
  x = np.arange(3.0, dtype=np.float32)
  for lib in (jax, pyjax):
    y, f_jvp = lib.jit(lib.vmap(lambda x: lib.linearize(lib.numpy.sin, x)))(x)
    t = lib.vmap(lambda f, t: f(t))(f_jvp, np.ones(3, np.float32))
    np.testing.assert_allclose(t, np.cos(x), rtol=1e-6)
    assert lib.tree_util.tree_leaves(f_jvp)   # the residuals are its leaves


def test_transpose_rules_see_literal_operands_with_avals():
  # equinox's select_if_vmap transpose reads `x.aval.shape` of a constant operand
  jax = _jax()
  for lib in (jax, pyjax):
    ad = importlib.import_module(lib.__name__ + ".interpreters.ad")
    prim = importlib.import_module(lib.__name__ + ".extend.core").Primitive("pick_" + lib.__name__)
    prim.def_impl(lambda x, y: y)
    prim.def_abstract_eval(lambda x, y: y)
    seen = []

    def transpose(ct, x, y):
      seen.append(x.aval.shape)
      return None, ct

    ad.primitive_jvps[prim] = lambda p, t: (prim.bind(*p), prim.bind(
        np.float32(0), ad.instantiate_zeros(t[1])))
    ad.primitive_transposes[prim] = transpose
    g = lib.grad(lambda y: prim.bind(np.float32(0), y))(np.float32(2))
    assert float(g) == 1.0 and seen == [()], lib


# --- equinox: every concrete array is one type whatever its sharding --------------------
def test_pmap_outputs_have_the_type_of_other_arrays():
  jax = _jax()
  out = pyjax.pmap(lambda x: x * 2)(jnp.ones((1, 3)))
  plain = jnp.ones((1, 3))
  want = type(jax.pmap(lambda x: x * 2)(jax.numpy.ones((1, 3)))) == type(jax.numpy.ones(3))
  assert (type(out) == type(plain)) is want is True
  assert not (type(out) != type(plain))
  assert {type(plain): 1}[type(out)] == 1
  assert type(out) != np.ndarray and type(plain) != int
  assert "NamedSharding" in repr(out.sharding)   # still laid out over the mesh
  np.testing.assert_array_equal(np.asarray(out == plain * 2), True)


def test_pmap_lower_and_compile():
  jax = _jax()
  f = lambda x, y: 2 * x + y
  x = np.array([3], np.int32)
  lowered = pyjax.pmap(f, in_axes=(0, None)).lower(jnp.asarray(x), 4)
  assert "shard_map" in lowered.as_text()
  got = lowered.compile()(jnp.asarray(x), 4)
  want = jax.pmap(f, in_axes=(0, None))(jax.numpy.asarray(x), 4)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert got.dtype == want.dtype


# --- equinox: a primitive's tangent output is an Array even for a Python-float tangent --
@pytest.mark.parametrize("fn", [lambda x: x + 1, lambda x: 1 - x, lambda x: x])
def test_jvp_of_python_float_tangent(fn):
  jax = _jax()
  got = pyjax.jvp(fn, (1.0,), (1.0,))
  want = jax.jvp(fn, (1.0,), (1.0,))
  for g, w in zip(got, want):
    assert isinstance(g, pyjax.Array) == isinstance(w, jax.Array)
    assert float(g) == float(w)
    if isinstance(w, jax.Array):
      assert g.dtype == w.dtype and g.weak_type == w.weak_type


# --- flax linen while_loop: broadcast_to / equal on typed key arrays --------------------
def test_broadcast_to_and_equal_of_key_arrays():
  jax = _jax()
  got_k = pyjax.random.split(pyjax.random.key(3), 2)[:, None]
  want_k = jax.random.split(jax.random.key(3), 2)[:, None]
  got = jnp.broadcast_to(got_k, (4, 2, 3))
  want = jax.numpy.broadcast_to(want_k, (4, 2, 3))
  assert got.shape == want.shape and str(got.dtype) == str(want.dtype)
  np.testing.assert_array_equal(np.asarray(pyjax.random.key_data(got)),
                                np.asarray(jax.random.key_data(want)))
  np.testing.assert_array_equal(np.asarray(jnp.equal(got, got_k[:1])),
                                np.asarray(jax.numpy.equal(want, want_k[:1])))
  np.testing.assert_array_equal(np.asarray(jnp.not_equal(got, got_k[:1])),
                                np.asarray(jax.numpy.not_equal(want, want_k[:1])))
  with pytest.raises(TypeError, match="equal does not accept dtypes key<fry>, int32"):
    jnp.equal(got_k, 1)


# --- equinox filter_jit(donate=...): the output lives in the donated buffer --------------
def test_donated_buffer_becomes_the_output_beside_a_literal_output():
  jax = _jax()
  f = lambda x: (0, x + 1)
  for mod, jit in ((jnp, pyjax.jit), (jax.numpy, jax.jit)):
    g = jit(f, donate_argnums=0)
    x = mod.arange(8.0)
    p = x.unsafe_buffer_pointer()
    z, y = g(x)
    assert x.is_deleted() and y.unsafe_buffer_pointer() == p
    np.testing.assert_array_equal(np.asarray(y), np.arange(8.0) + 1)
    assert int(z) == 0


def test_donated_buffer_viewed_by_another_output_keeps_its_values():
  g = pyjax.jit(lambda x: (x.reshape(2, 4), x * 2), donate_argnums=0)
  z, y = g(jnp.arange(8.0))
  np.testing.assert_array_equal(np.asarray(z), np.arange(8.0).reshape(2, 4))
  np.testing.assert_array_equal(np.asarray(y), np.arange(8.0) * 2)


# --- flax nnx: Variables (objects with __jax_array__) as operator operands (as JAX's
# operators convert them); abstract-mesh shardings -----------------------------------------
class _Boxed:
  def __init__(self, value):
    self.value = value

  def __jax_array__(self):
    return self.value


def test_jax_array_objects_as_matmul_operands_under_vmap():
  jax = _jax()
  w = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
  x = np.ones((2,), np.float32)
  def run(mod, vmap):
    return vmap(lambda w: mod.asarray(x) @ _Boxed(w))(mod.asarray(w))
  got, want = run(jnp, pyjax.vmap), run(jax.numpy, jax.vmap)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert got.shape == want.shape == (4, 3)


def test_with_sharding_constraint_on_the_abstract_context_mesh():
  from pyjax.sharding import NamedSharding, PartitionSpec as P
  mesh = pyjax.make_mesh((1, 1), ("a", "b"), axis_types=(pyjax.sharding.AxisType.Auto,) * 2)
  with pyjax.set_mesh(mesh):
    am = pyjax.sharding.get_abstract_mesh()
    y = pyjax.lax.with_sharding_constraint(jnp.ones((2, 3)), NamedSharding(am, P("a", "b")))
  np.testing.assert_array_equal(np.asarray(y), np.ones((2, 3), np.float32))


def test_jax_array_objects_in_promoted_binary_ops_under_vmap():
  jax = _jax()
  b = np.arange(15, dtype=np.float32).reshape(5, 3)
  def run(mod, vmap):
    return vmap(lambda b: (mod.ones(3) + _Boxed(b)) * (2.0 - mod.ones(3) * _Boxed(b)))(
        mod.asarray(b))
  np.testing.assert_array_equal(np.asarray(run(jnp, pyjax.vmap)),
                                np.asarray(run(jax.numpy, jax.vmap)))
  with pytest.raises(TypeError):   # (no operator of _Boxed: NotImplemented both ways)
    jnp.ones(3) + object()


@pytest.mark.parametrize("fn, out_axes", [
    (lambda x: {"broadcast": x, "a": x}, {"broadcast": None, "a": 0}),
    (lambda x: (x, (x, x)), (0, None)),
    (lambda x: [x * 0, {"q": x}], None),
    (lambda x: x, None)])
def test_vmap_out_axes_none_error_names_the_output(fn, out_axes):
  jax = _jax()
  with pytest.raises(ValueError) as want:
    jax.vmap(fn, out_axes=out_axes)(jax.numpy.ones(3))
  with pytest.raises(ValueError) as got:
    pyjax.vmap(fn, out_axes=out_axes)(jnp.ones(3))
  assert str(got.value) == str(want.value)


def test_pytree_objects_with_jax_array_in_jnp_functions():
  # (JAX's jitted jnp functions flatten a pytree that stands for an array -- an nnx
  # Variable -- to its array; pyjax's convert it where its operands are converted)
  jax = _jax()

  def run(mod, tu, vmap):
    class Var:
      def __init__(self, v):
        self.v = v

      def __jax_array__(self):
        return self.v
    tu.register_pytree_node(Var, lambda s: ((s.v,), None), lambda _, c: Var(*c))
    w = mod.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = mod.asarray(np.arange(3, dtype=np.float32))
    x = mod.ones((1, 2))
    return (mod.dot(x, Var(w)), mod.add(Var(b), 1.0),
            vmap(lambda r: mod.dot(r, Var(w)) + Var(b))(mod.ones((4, 2))))
  got = run(jnp, pyjax.tree_util, pyjax.vmap)
  want = run(jax.numpy, jax.tree_util, jax.vmap)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert g.dtype == w.dtype and g.weak_type == w.weak_type


# --- flax nnx test_jit_wrapped: Compiled.cost_analysis() -------------------------------
def test_cost_analysis_counts_like_xla():
  jax = _jax()
  progs = [(lambda m: lambda x, y: (x * 2 + m.sin(y)).sum(), [(8,), (8,)]),
           (lambda m: lambda a, b: a @ b, [(4, 5), (5, 6)]),
           (lambda m: lambda x: m.exp(x).max(axis=1), [(3, 4)])]
  for make, shapes in progs:
    got = pyjax.jit(make(jnp)).lower(*[jnp.ones(s) for s in shapes]).compile().cost_analysis()
    want = jax.jit(make(jax.numpy)).lower(
        *[jax.numpy.ones(s) for s in shapes]).compile().cost_analysis()
    assert got["flops"] == want["flops"]
    assert got.get("transcendentals") == want.get("transcendentals")
    assert got["bytes accessed"] == want["bytes accessed"]


# --- flax nnx custom_vjp: a bwd leaf may stand for a whole argument subtree (JAX) ------
def test_custom_vjp_bwd_leaf_for_a_subtree():
  jax = _jax()

  def run(api, mod):
    @api.custom_vjp
    def f(p):
      return p["a"] * p["b"]

    def fwd(p):
      return f(p), p

    def bwd(p, g):
      return (g * 2.0,)   # one array standing for both leaves of p

    f.defvjp(fwd, bwd)
    return api.grad(f)({"a": mod.asarray(3.0), "b": mod.asarray(4.0)})
  got, want = run(pyjax, jnp), run(jax, jax.numpy)
  assert sorted(got) == sorted(want)
  for k in want:
    np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))


def test_isclose_and_allclose_of_key_arrays():
  jax = _jax()
  for api, mod in ((pyjax, jnp), (jax, jax.numpy)):
    k = api.random.key(0)
    ks = api.random.split(k, 2)
    got = (bool(mod.allclose(k, k)), bool(mod.allclose(k, api.random.key(1))),
           np.asarray(mod.isclose(ks, ks[:1])).tolist())
    if api is pyjax:
      mine = got
  assert mine == got


def test_user_primitive_jvp_passes_a_python_float_tangent_through():
  # (equinox's nondifferentiable_backward: JAX keeps what a user rule returns)
  jax = _jax()

  def run(api, name):
    extend = importlib.import_module(f"{name}.extend.core")
    ad = importlib.import_module(f"{name}.interpreters.ad")
    p = extend.Primitive("ident_ecosys")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), tangents[0])
    return api.jvp(p.bind, (1.0,), (1.0,))[1]
  got, want = run(pyjax, "pyjax"), run(jax, "jax")
  assert type(got) is type(want) is float and got == want


def test_symbolic_zero_returned_through_vmap_unchanged():
  # (equinox's vprim jvp vmaps a rule over Zero tangents: lineax test_grad_vmap_symbolic_cotangent)
  jax = _jax()

  def run(api, name):
    ad = importlib.import_module(f"{name}.interpreters.ad")
    z = ad.Zero(api.core.ShapedArray((2,), np.float32))
    x, z2 = api.vmap(lambda x: (x, z))(api.numpy.arange(3.0))
    return type(z2) is ad.Zero, z2.aval.shape
  assert run(pyjax, "pyjax") == run(jax, "jax") == (True, (2,))


def test_grad_of_a_jvp_rule_that_calls_a_custom_jvp_function_on_the_tangent():
  # (lineax's linear_solve jvp rule calls equinox's custom_jvp asarray on tangents)
  jax = _jax()

  def run(api):
    @api.custom_jvp
    def ident(x):
      return x
    ident.defjvp(lambda p, t: (ident(p[0]), 2.0 * t[0]))

    @api.custom_jvp
    def f(x):
      return api.numpy.sin(x)

    @f.defjvp
    def f_jvp(p, t):
      return f(p[0]), api.vmap(ident)(t[0]) * api.numpy.cos(p[0])
    x = api.numpy.array([0.5, 1.5])
    g = api.grad(lambda x: (api.jit(f)(x) * 3.0).sum())
    return np.concatenate([g(x), api.grad(lambda x: f(x).sum())(x)])
  got, want = run(pyjax), run(jax)
  np.testing.assert_allclose(got, want, rtol=1e-6)


def test_linear_transpose_of_a_custom_jvp_function():
  # (lineax test_transpose: linear_transpose of linear_solve, whose body calls custom_jvp fns)
  jax = _jax()

  def run(api):
    @api.custom_jvp
    def scale(x):
      return 3.0 * x
    scale.defjvp(lambda p, t: (scale(p[0]), scale(t[0])))
    x = api.numpy.array([1.0, 2.0])
    f = lambda v: scale(v)[::-1] + v
    return np.concatenate([api.linear_transpose(f, x)(x)[0],
                           api.jit(api.linear_transpose(f, x))(x)[0]])
  np.testing.assert_allclose(run(pyjax), run(jax), rtol=1e-6)


def test_no_numpy_fp_warnings_inside_a_record_always_block():
  # (optimistix test_fixed_point_jvp[complex128]: pytest.warns records every warning and
  # re-emits the unmatched ones; JAX gives none for a division by zero)
  import warnings
  jax = _jax()
  for api in (pyjax, jax):
    a = api.numpy.array([1 + 1j, 0j], np.complex64)
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      (a / api.numpy.zeros(2, np.complex64)).block_until_ready()
      (api.numpy.array([1.0, 0.0]) / 0.0).block_until_ready()
    assert [str(m.message) for m in w] == []


def test_custom_vjp_symbolic_zeros_fwd_sees_perturbed_flags_under_vmap():
  # (diffrax test_adjoint: equinox's filter_custom_vjp asserts nondiff inputs are unperturbed)
  jax = _jax()

  def run(api):
    flags = []

    @api.custom_vjp
    def f(x, y):
      return x * y

    def fwd(x, y):
      flags.append((x.perturbed, y.perturbed))
      return f(x.value, y.value), (x.value, y.value)

    def bwd(res, g):
      return g * res[1], g * res[0]
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    xs = api.numpy.array([1.0, 2.0])
    g = api.grad(lambda xs: api.vmap(f, (0, None))(xs, api.numpy.float32(3.0)).sum())(xs)
    return np.asarray(g).tolist(), sorted(set(flags))
  assert run(pyjax) == run(jax)


def test_grad_of_custom_jvp_rule_calling_jvp_of_jit_and_cond():
  # (diffrax test_event_vmap_t0: the rule's jvp of a jit/cond puts its primal outputs, which
  # read residuals only, into the linear jaxpr; they meet in a dot_general)
  jax = _jax()

  def run(api):
    jnp_ = api.numpy
    inner = api.jit(lambda x: (jnp_.sin(x), x * 2.0))

    def branchy(x):
      return api.lax.cond(x[0] > 0, lambda v: jnp_.cos(v), lambda v: v * v, x)

    @api.custom_jvp
    def f(x):
      return jnp_.dot(inner(x)[0], branchy(x))

    @f.defjvp
    def f_jvp(p, t):
      (x,), (tx,) = p, t
      (s, d), (ts, _) = api.jvp(inner, (x,), (tx,))
      c, tc = api.jvp(branchy, (x,), (tx,))
      return jnp_.dot(s, c), jnp_.dot(s, d) * 0.0 + jnp_.dot(ts, c) + jnp_.dot(s, tc)
    x = jnp_.array([0.5, 1.5, -0.3])
    return np.concatenate([api.grad(f)(x), api.jit(api.grad(f))(x),
                           api.vmap(api.grad(f))(jnp_.stack([x, -x])).ravel()])
  np.testing.assert_allclose(run(pyjax), run(jax), rtol=1e-6)


def test_custom_vjp_python_residual_stays_static_under_vmap():
  # (diffrax test_adjoint::test_against: equinox's checkpointed while loop passes Python-bool
  # perturbed flags to its bwd rule as residuals; under vmap they must stay Python values)
  jax = _jax()

  def run(api):
    seen = []

    @api.custom_vjp
    def f(x):
      return api.numpy.sin(x)

    def fwd(x):
      return f(x), (api.numpy.cos(x), True, 2.0)

    def bwd(res, g):
      c, flag, k = res
      seen.append(type(flag).__name__)
      return ((g * c * k if flag else g),)   # `if flag` raises on a traced value
    f.defvjp(fwd, bwd)
    xs = api.numpy.array([0.5, 1.5])
    g = api.grad(lambda xs: api.vmap(f)(xs).sum())(xs)
    gj = api.jit(api.grad(lambda xs: api.vmap(f)(xs).sum()))(xs)
    return np.concatenate([g, gj]), seen
  got, want = run(pyjax), run(jax)
  np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
  assert got[1] == want[1]


def _jaxpr_text(jax, f, *args):
  return str(jax.make_jaxpr(f)(*args))


def test_closed_over_0d_array_is_a_constvar_host_scalars_literals():
  # optimistix (equinox filter_closure_convert): a closed-over concrete 0-d jax Array is a
  # constvar as in JAX; Python/NumPy scalars and constants made while tracing are literals
  jax = _jax()
  def cases(jx, jn):
    c, ci = jn.array(2.0), jn.array(2, jn.int32)
    return [
        lambda v: v * c,                                   # constvar
        lambda v: v * ci,                                  # convert of a constvar
        lambda v: v * 2 + np.float32(3) + np.array(1.0),  # literals
        lambda v: v * 0.5 + jn.array(3.0) + jn.zeros(()),
        lambda v: jx.lax.switch(1, [lambda x: x, lambda x: x * c], v),
    ]
  for fp, fj in zip(cases(pyjax, jnp), cases(jax, jax.numpy)):
    assert _jaxpr_text(pyjax, fp, 1.0) == _jaxpr_text(jax, fj, 1.0)


def test_constant_made_in_a_trace_is_a_const_of_a_nested_trace():
  # a scalar made inside jit and closed over by a nested make_jaxpr is a constant there
  # (JAX: a tracer of the outer trace), in first-use order with the other closed-over values
  jax = _jax()
  def counts(jx, jn):
    out = []
    def f(x):
      i = jn.array(0)
      out.append([type(c).__name__.endswith("Tracer") for c in
                  jx.make_jaxpr(lambda y: y * x[i % 3] + x)(x).consts])
      return x
    jx.jit(f)(jn.arange(3.0))
    return out
  assert counts(pyjax, jnp) == counts(jax, jax.numpy) == [[True, True]]


def test_vmap_of_a_linearized_custom_vjp_function_is_jax_forward_mode_error():
  # optimistix test_gauss_newton_jacrev(jac="fwd"): vmap reaches custom_lin; JAX's TypeError
  jax = _jax()
  for jx, jn in ((jax, jax.numpy), (pyjax, jnp)):
    @jx.custom_vjp
    def f(x):
      return x ** 2
    f.defvjp(lambda x: (x ** 2, 2 * x), lambda r, g: (r * g,))
    def g(x):
      return jx.vmap(jx.linearize(f, x)[1])(jn.eye(3))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
      jx.jit(g)(jn.arange(3.0))


def test_multivariate_normal_with_shape_under_rank_promotion_raise():
  # (diffrax test_brownian::test_shape_and_dtype: its conftest sets rank promotion to
  # 'raise'; JAX adds the mean to the (*shape, n) samples with promotion allowed)
  jax = _jax()

  def run(api):
    cov = api.numpy.array([[2.0, 0.5], [0.5, 1.0]])
    with api.numpy_rank_promotion("raise"):
      return np.asarray(api.random.multivariate_normal(api.random.key(0), api.numpy.ones(2),
                                                       cov, shape=(3,)))
  got, want = run(pyjax), run(jax)
  assert got.shape == want.shape == (3, 2)
  np.testing.assert_allclose(got, want, rtol=1e-5)


def test_mutable_hijax_box_as_jit_argument():
  # (flax nnx mutable_array_test: hijax Variables passed to jit are mutated in place; their
  # lo values are the program's inputs and outputs; typed keys inside; a changed type)
  jax = _jax()

  def run(api):
    hjx = importlib.import_module(api.__name__ + "._src.hijax")
    traces = []

    @api.jit
    def f(b, x):
      traces.append(1)
      b.set(b.get() * x)
      return b.get() + 1
    b, b2 = hjx.Box(api.numpy.float32(1.0)), hjx.Box(api.numpy.float32(5.0))
    outs = [float(f(b, 2.0)), float(f(b, 3.0)), float(f(b2, 2.0))]
    kb = hjx.Box(api.random.key(0))

    @api.jit
    def g(kb):
      k1, k2 = api.random.split(kb.get())
      kb.set(k1)
      return api.random.uniform(k2)
    outs += [float(g(kb)), float(g(kb))]
    grow = hjx.Box(api.numpy.zeros(2))
    api.jit(lambda b: b.set(api.numpy.ones(3)))(grow)
    sds = api.eval_shape(f, b, 2.0)
    loop = hjx.Box(api.numpy.float32(3.0))   # closed over by loop bodies outside jit

    def body(c, _):
      loop.set(loop.get() + 1.0)
      return c, None
    api.lax.scan(body, None, None, length=5)
    api.lax.fori_loop(0, 2, lambda i, c: (loop.set(loop.get() * 2.0), c)[1], 0)
    outs.append(float(loop.get()))
    return (outs, float(b.get()), float(b2.get()), len(traces),
            np.asarray(api.random.key_data(kb.get())).tolist(), grow.get().shape,
            (sds.shape, str(sds.dtype)), str(api.eval_shape(lambda: api.random.key(0))))
  assert run(pyjax) == run(jax)
