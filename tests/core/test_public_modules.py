"""Small public modules against real JAX: typing, version, lib, monitoring (incl. the
compile events jit records), flatten_util.ravel_pytree, test_util.check_grads, ops.segment_*
and dlpack."""
import functools
import sys

import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax import dlpack, flatten_util, lib, monitoring, ops, test_util, version


def _jax():
  return pytest.importorskip("jax")


def _same(p, j):
  """Same values, dtype and weak type as a real JAX array."""
  assert p.dtype == j.dtype, (p.dtype, j.dtype)
  assert p.shape == j.shape
  assert getattr(p, "weak_type", False) == getattr(j, "weak_type", False)
  np.testing.assert_array_equal(np.asarray(p), np.asarray(j))


# -- attributes of the top-level module ------------------------------------------------------

@pytest.mark.parametrize("name", ["typing", "ops", "dlpack", "lib", "monitoring", "version",
                                  "image", "flatten_util", "test_util"])
def test_top_level_attributes(name):
  assert getattr(pyjax, name) is sys.modules[f"pyjax.{name}"]


@pytest.mark.parametrize("mod", ["typing", "ops", "dlpack", "monitoring", "flatten_util",
                                 "test_util"])
def test_public_names_match_jax(mod):
  _jax()
  import importlib
  j = importlib.import_module(f"jax.{mod}")
  p = importlib.import_module(f"pyjax.{mod}")
  public = lambda m: {n for n in dir(m) if not n.startswith("_")} - {"annotations"}
  assert public(j) <= public(p)


# -- typing ------------------------------------------------------------------------------------

def test_typing_isinstance():
  from pyjax.typing import ArrayLike, DTypeLike
  for x in [pjnp.ones(2), np.ones(2), np.float32(1), 1, 2.0, True, 1j]:
    assert isinstance(x, ArrayLike)
  for x in [[1, 2], (1,), "a", None]:
    assert not isinstance(x, ArrayLike)
  assert pyjax.jit(lambda x: isinstance(x, ArrayLike))(1.0)
  assert DTypeLike.__args__[-1] is pyjax._src.typing.SupportsDType
  for d in [pjnp.float32, pjnp.ones(1), np.ones(1)]:
    assert isinstance(d, pyjax._src.typing.SupportsDType)


def test_typing_in_annotations():
  from pyjax.typing import ArrayLike, DTypeLike

  def f(x: ArrayLike, dtype: DTypeLike | None = None) -> pyjax.Array:
    return pjnp.asarray(x, dtype)
  assert f(1, "int8").dtype == np.int8


# -- version / lib -------------------------------------------------------------------------------

def test_version():
  assert pyjax.__version__ == version.__version__ == version._version == lib.__version__
  assert pyjax.__version_info__ == version.__version_info__ == tuple(
      int(p) for p in pyjax.__version__.split("."))
  assert version._version_as_tuple("0.10.2.dev20260101+abc") == (0, 10, 2)
  assert isinstance(pyjax.__version_info__, tuple)


def test_version_matches_package_metadata():
  from importlib import metadata
  try:
    v = metadata.version("pyjax")
  except metadata.PackageNotFoundError:
    pytest.skip("pyjax is not installed as a distribution")
  assert v == pyjax.__version__


def test_xla_bridge():
  xb = lib.xla_bridge
  be = xb.get_backend()
  assert be.platform == "cpu" == xb.default_backend()
  assert be.device_count() == pyjax.device_count() == xb.device_count()
  assert be.devices() == pyjax.devices() and be.local_devices() == pyjax.local_devices()
  assert be.local_device_count() == pyjax.local_device_count()
  assert be.process_index() == 0 == xb.process_index() == xb.host_id()
  assert xb.process_count() == 1 == xb.host_count() and xb.host_ids() == [0]
  assert xb.get_backend("cpu") is be and xb.get_backend(be) is be
  assert xb.backends() == {"cpu": be}
  assert xb.get_device_backend(pyjax.devices()[0]) is be
  assert xb.canonicalize_platform("CUDA") == "gpu" and xb.canonicalize_platform("host") == "cpu"
  assert be.device_from_local_hardware_id(0) is pyjax.devices()[0]
  with pytest.raises(RuntimeError):
    xb.get_backend("tpu")
  # the private mapping chex's set_n_cpu_devices reads (backends are initialized by now)
  from pyjax._src import xla_bridge
  assert xla_bridge._backends == {"cpu": be}


def test_xla_client():
  xc = lib.xla_client
  assert xc.XlaRuntimeError is pyjax.errors.JaxRuntimeError
  assert isinstance(pyjax.devices()[0], xc.Device)
  assert isinstance(lib.xla_bridge.get_backend(), xc.Client)


# -- monitoring ----------------------------------------------------------------------------------

@pytest.fixture
def listeners():
  yield
  monitoring.clear_event_listeners()


def test_monitoring_listeners(listeners):
  got = []
  ev = lambda e, **k: got.append(("event", e, k))
  dur = lambda e, d, **k: got.append(("duration", e, d, k))
  span = lambda e, s, t, **k: got.append(("span", e, s, t, k))
  sc = lambda e, v, **k: got.append(("scalar", e, v, k))
  monitoring.register_event_listener(ev)
  monitoring.register_event_duration_secs_listener(dur)
  monitoring.register_event_time_span_listener(span)
  monitoring.register_scalar_listener(sc)
  monitoring.record_event("/a", tag="x")
  monitoring.record_event_duration_secs("/b", 0.5)
  monitoring.record_event_time_span("/c", 1.0, 2.0, n=3)
  monitoring.record_scalar("/d", 7)
  assert got == [("event", "/a", {"tag": "x"}), ("duration", "/b", 0.5, {}),
                 ("span", "/c", 1.0, 2.0, {"n": 3}), ("scalar", "/d", 7, {})]
  monitoring.unregister_event_listener(ev)
  monitoring.unregister_event_duration_listener(dur)
  monitoring.unregister_event_time_span_listener(span)
  monitoring.unregister_scalar_listener(sc)
  got.clear()
  monitoring.record_event("/a")
  monitoring.record_event_duration_secs("/b", 0.5)
  monitoring.record_event_time_span("/c", 1.0, 2.0)
  monitoring.record_scalar("/d", 7)
  assert got == []
  with pytest.raises(AssertionError):
    monitoring.unregister_event_listener(ev)


def test_monitoring_clear(listeners):
  got = []
  monitoring.register_event_listener(lambda e, **k: got.append(e))
  monitoring.register_scalar_listener(lambda e, v, **k: got.append(e))
  monitoring.clear_event_listeners()
  monitoring.record_event("/a")
  monitoring.record_scalar("/b", 1)
  assert got == []


def test_monitoring_listener_order(listeners):
  got = []
  monitoring.register_event_listener(lambda e: got.append(1))
  monitoring.register_event_listener(lambda e: got.append(2))
  monitoring.record_event("/x")
  assert got == [1, 2]


def _compile_events(jax_mod, monitoring_mod, f, *args):
  got = []
  monitoring_mod.register_event_duration_secs_listener(
      lambda e, d, **k: got.append((e, k["fun_name"])) if e.startswith("/jax/core") else None)
  try:
    jax_mod.jit(f)(*args)
    first = list(got)
    got.clear()
    jax_mod.jit(f)(*args)
    return first, list(got)
  finally:
    monitoring_mod.clear_event_listeners()


def test_jit_records_compile_events(listeners):
  def my_fun(x):
    return x * 2 + 1
  first, second = _compile_events(pyjax, monitoring, my_fun, pjnp.ones(3))
  assert ("/jax/core/compile/jaxpr_trace_duration", "my_fun") in first
  assert ("/jax/core/compile/backend_compile_duration", "jit(my_fun)") in first
  assert second == []   # cache hit: nothing traced or compiled
  jax = _jax()

  def my_fun(x):
    return x * 2 + 1
  jfirst, _ = _compile_events(jax, jax.monitoring, my_fun, jax.numpy.ones(3))
  assert set(first) <= set(jfirst)


def test_compile_event_durations_are_positive(listeners):
  spans, scalars = [], []
  monitoring.register_event_time_span_listener(lambda e, s, t, **k: spans.append((e, s, t)))
  monitoring.register_scalar_listener(lambda e, v, **k: scalars.append((e, v)))
  pyjax.jit(lambda x: pjnp.sin(x))(1.0)
  trace = [s for s in spans if s[0].endswith("jaxpr_trace_duration")]
  assert trace and trace[0][1] <= trace[0][2]
  # the scalar recorded on entry is the span's start time
  assert ("/jax/core/compile/jaxpr_trace_duration", trace[0][1]) in scalars


def test_disk_compilation_cache_records_jax_cache_events(listeners, tmp_path, monkeypatch):
  from pyjax._src.backends.cpu.compiler.native import build
  from pyjax._src.backends.cpu.compiler.native import cache
  tc = build.toolchain()
  if tc is None:
    pytest.skip("no C compiler")
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  events, durations = [], []
  monitoring.register_event_listener(lambda e, **k: events.append(e))
  monitoring.register_event_duration_secs_listener(lambda e, d, **k: durations.append((e, d)))
  source = "int pyjax_h1_monitoring_probe(int x) { return x + 41; }\n"
  lib = cache.get_library(source, tc)
  assert lib.pyjax_h1_monitoring_probe(1) == 42
  assert events == ["/jax/compilation_cache/compile_requests_use_cache",
                    "/jax/compilation_cache/cache_misses"]
  del lib
  cache.clear_memory()
  import gc
  gc.collect()
  events.clear()
  st = {}
  lib = cache.get_library(source, tc, st)
  if st["cache"] == "memory":
    pytest.skip("the library stayed loaded: no disk read to observe")
  assert events == ["/jax/compilation_cache/compile_requests_use_cache",
                    "/jax/compilation_cache/cache_hits"]
  (name, secs), = [d for d in durations if d[0].endswith("cache_retrieval_time_sec")]
  assert secs >= 0


# -- flatten_util ----------------------------------------------------------------------------------

TREES = [
    lambda m: {"a": 1.0, "b": m.int32(1)},
    lambda m: [1.0, 2],
    lambda m: [1, 2],
    lambda m: [np.float64(1.0), m.ones(2, m.int8)],
    lambda m: (m.ones(2, m.bfloat16), m.ones(3, m.float16)),
    lambda m: [m.ones((2, 2)), 3.0, {"c": (m.arange(3),)}],
    lambda m: [m.ones(2, m.complex64), m.ones(1)],
    lambda m: [True, m.uint8(3)],
    lambda m: [],
    lambda m: {"w": m.zeros((0, 3)), "b": m.ones(2)},
]


@pytest.mark.parametrize("i", range(len(TREES)))
def test_ravel_pytree_matches_jax(i):
  jax = _jax()
  from jax.flatten_util import ravel_pytree as jravel
  pflat, punravel = flatten_util.ravel_pytree(TREES[i](pjnp))
  jflat, junravel = jravel(TREES[i](jax.numpy))
  _same(pflat, jflat)
  pl, pt = pyjax.tree_util.tree_flatten(punravel(pflat))
  jl, jt = jax.tree_util.tree_flatten(junravel(jflat))
  assert str(pt) == str(jt)
  for a, b in zip(pl, jl):
    _same(a, b)


def test_ravel_pytree_unravel_errors():
  flat, unravel = flatten_util.ravel_pytree([pjnp.ones(2), pjnp.ones(1, pjnp.int32)])
  with pytest.raises(TypeError, match="unravel function given array of dtype int32, but "
                                      "expected dtype float32"):
    unravel(pjnp.ones(3, pjnp.int32))
  with pytest.raises(ValueError):
    unravel(pjnp.ones(4))
  # one dtype: unravel keeps the dtype it is given
  _, unravel1 = flatten_util.ravel_pytree([pjnp.ones(2), pjnp.ones(1)])
  assert [x.dtype for x in unravel1(pjnp.ones(3, pjnp.int32))] == [np.int32, np.int32]


def test_unravel_is_hashable_and_static():
  tree = {"a": pjnp.ones(2), "b": pjnp.zeros((1, 2))}
  _, u1 = flatten_util.ravel_pytree(tree)
  _, u2 = flatten_util.ravel_pytree(tree)
  assert u1 == u2 and hash(u1) == hash(u2)
  f = pyjax.jit(lambda v, u: u(v)["b"], static_argnums=1)
  np.testing.assert_array_equal(f(pjnp.arange(4.), u1), [[2.0, 3.0]])


def test_ravel_pytree_under_transformations():
  params = {"w": pjnp.arange(6.0).reshape(2, 3), "b": pjnp.array([1.0, -1.0])}
  flat, unravel = flatten_util.ravel_pytree(params)

  def loss(v):
    p = unravel(v)
    return pjnp.sum(p["w"] ** 2) + pjnp.sum(pjnp.sin(p["b"]))
  g = pyjax.grad(loss)(flat)
  expected, _ = flatten_util.ravel_pytree(
      {"w": 2 * params["w"], "b": pjnp.cos(params["b"])})
  np.testing.assert_allclose(g, expected, rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(loss)(flat), loss(flat), rtol=1e-6)
  # ravel inside jit and vmap
  jflat = pyjax.jit(lambda p: flatten_util.ravel_pytree(p)[0])(params)
  np.testing.assert_array_equal(jflat, flat)
  batched = pyjax.vmap(lambda p: flatten_util.ravel_pytree(p)[0])(
      {"w": pjnp.stack([params["w"]] * 3), "b": pjnp.stack([params["b"]] * 3)})
  assert batched.shape == (3, 8)
  np.testing.assert_array_equal(batched[1], flat)
  back = pyjax.vmap(unravel)(pjnp.stack([flat, 2 * flat]))
  np.testing.assert_array_equal(back["w"][1], 2 * params["w"])


# -- test_util -------------------------------------------------------------------------------------

def test_check_grads_passes():
  test_util.check_grads(lambda x, y: pjnp.sin(x) * y ** 2,
                        (np.float32(0.3), pjnp.arange(3.0)), order=2,
                        modes=("fwd", "rev", "lin"))
  test_util.check_grads(lambda x: {"t": pjnp.tanh(x["a"]).sum()}, ({"a": pjnp.ones((2, 3)) * .5},),
                        order=2)
  test_util.check_grads(lambda x: x * 2.0, (1.5,), order=1)
  test_util.check_grads(pjnp.exp, (pjnp.array([0.5 + 0.25j]),), order=1)


def _wrong_jvp_fun(jax_mod):
  f = jax_mod.custom_jvp(lambda x: jax_mod.numpy.sin(x))
  f.defjvp(lambda p, t: (jax_mod.numpy.sin(p[0]), 2 * t[0]))
  return f


@pytest.mark.parametrize("mode,msg", [("fwd", "JVP tangent"),
                                      ("rev", "VJP cotangent projection")])
def test_check_grads_catches_wrong_derivative(mode, msg):
  with pytest.raises(AssertionError, match=msg):
    test_util.check_grads(_wrong_jvp_fun(pyjax), (1.0,), order=1, modes=[mode])
  jax = _jax()
  from jax.test_util import check_grads
  with pytest.raises(AssertionError, match=msg):
    check_grads(_wrong_jvp_fun(jax), (1.0,), order=1, modes=[mode])


def test_check_grads_second_order_message():
  # first derivative right, second wrong: only the order-2 check fails
  f = pyjax.custom_jvp(lambda x: x ** 3)
  f.defjvp(lambda p, t: (p[0] ** 3, 3 * pyjax.lax.stop_gradient(p[0]) ** 2 * t[0]))
  test_util.check_grads(f, (1.3,), order=1)
  with pytest.raises(AssertionError, match="JVP of JVP"):
    test_util.check_grads(f, (1.3,), order=2, modes=["fwd"])


def test_check_jvp_check_vjp_tolerances():
  f = lambda x: x * 1.01
  wrong_jvp = lambda p, t: (f(*p), t[0])
  with pytest.raises(AssertionError):
    test_util.check_jvp(f, wrong_jvp, (pjnp.ones(3),))
  test_util.check_jvp(f, wrong_jvp, (pjnp.ones(3),), atol=0.1, rtol=0.1)
  test_util.check_vjp(f, functools.partial(pyjax.vjp, f), (pjnp.ones(3),))
  with pytest.raises(AssertionError, match="primal"):
    test_util.check_vjp(f, lambda x: (x * 1.5, lambda c: (c * 1.01,)), (pjnp.ones(3),))


# -- ops -------------------------------------------------------------------------------------------

SEGMENT_CASES = [
    (np.arange(6.0), [0, 0, 2, 2, 5, -1], {}),
    (np.arange(6), [0, 0, 2, 2, 5, 7], {"num_segments": 4}),
    (np.arange(6), [0, 0, 2, 2, 5, 7], {"num_segments": 3, "bucket_size": 2}),
    (np.arange(6), [0, 0, 2, 2, 5, 7], {"num_segments": 3, "mode": "clip"}),
    (np.arange(12.0).reshape(6, 2) - 5, [0, 1, 1, 3, 3, 3], {"indices_are_sorted": True}),
    (np.arange(4.0), [3, 2, 1, 0], {"unique_indices": True, "num_segments": 5}),
    (np.ones(3, np.float16), [0, 1, 1], {"num_segments": 2}),
    (np.array([True, False, True]), [0, 1, 1], {"num_segments": 3}),
    (np.arange(7.0), [0, 0, 0, 1, 1, 1, 1], {"bucket_size": 3}),
]


@pytest.mark.parametrize("name", ["segment_sum", "segment_prod", "segment_max", "segment_min"])
@pytest.mark.parametrize("i", range(len(SEGMENT_CASES)))
def test_segment_ops_match_jax(name, i):
  jax = _jax()
  data, ids, kw = SEGMENT_CASES[i]
  if name in ("segment_sum", "segment_prod") and data.dtype == np.bool_:
    with pytest.raises(TypeError):   # as in JAX: add/mul do not accept bool
      getattr(ops, name)(pjnp.asarray(data), pjnp.asarray(ids), **kw)
    with pytest.raises(TypeError):
      getattr(jax.ops, name)(jax.numpy.asarray(data), jax.numpy.asarray(ids), **kw)
    return
  p = getattr(ops, name)(pjnp.asarray(data), pjnp.asarray(ids), **kw)
  j = getattr(jax.ops, name)(jax.numpy.asarray(data), jax.numpy.asarray(ids), **kw)
  _same(p, j)


def test_segment_ops_scalars_and_errors():
  jax = _jax()
  _same(ops.segment_sum(2, 1, 3), jax.ops.segment_sum(2, 1, 3))
  with pytest.raises(TypeError, match="segment_sum requires ndarray or scalar arguments, "
                                      "got <class 'list'> at position 0."):
    ops.segment_sum([1, 2], pjnp.array([0, 1]))
  with pytest.raises(ValueError, match="num_segments must be non-negative."):
    ops.segment_sum(pjnp.ones(2), pjnp.array([0, 1]), -1)
  with pytest.raises(pyjax.errors.ConcretizationTypeError, match="num_segments"):
    pyjax.jit(lambda d, s: ops.segment_sum(d, s))(pjnp.ones(3), pjnp.array([0, 1, 1]))


def test_segment_ops_under_transformations():
  ids = pjnp.array([0, 1, 1, 2])
  data = pjnp.array([1.0, 2.0, 3.0, 4.0])
  f = lambda d: ops.segment_sum(d ** 2, ids, 3)
  np.testing.assert_array_equal(pyjax.jit(f)(data), [1.0, 13.0, 16.0])
  np.testing.assert_array_equal(pyjax.grad(lambda d: f(d).sum())(data), 2 * data)
  np.testing.assert_array_equal(pyjax.vmap(f)(pjnp.stack([data, -data])),
                                [[1.0, 13.0, 16.0]] * 2)
  g = pyjax.grad(lambda d: ops.segment_max(d, ids, 3).sum())(data)
  np.testing.assert_array_equal(g, [1.0, 0.0, 1.0, 1.0])


# -- dlpack ----------------------------------------------------------------------------------------

def test_from_dlpack_numpy_shares_memory():
  a = np.arange(4, dtype=np.float32)
  x = dlpack.from_dlpack(a)
  assert x.dtype == np.float32 and x.shape == (4,) and not x.weak_type
  a[0] = 7.0       # zero copy: the Array sees the producer's memory (as in JAX)
  assert float(x[0]) == 7.0
  y = dlpack.from_dlpack(a, copy=True)
  a[0] = 8.0
  assert float(y[0]) == 7.0


def test_from_dlpack_canonicalizes_and_copies_strided():
  x = dlpack.from_dlpack(np.arange(6.0).reshape(2, 3))
  assert x.dtype == np.float32
  np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))
  s = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
  np.testing.assert_array_equal(dlpack.from_dlpack(s), s)
  with pytest.raises(ValueError, match="copy=False"):
    dlpack.from_dlpack(s, copy=False)


def test_from_dlpack_errors_and_device():
  with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
    dlpack.from_dlpack([1, 2])
  dev = pyjax.devices()[0]
  x = dlpack.from_dlpack(np.ones(2, np.float32), device=dev)
  assert x.committed and x.devices() == {dev}

  class OnTpu:
    def __dlpack__(self, **kw):
      raise AssertionError("not reached")

    def __dlpack_device__(self):
      return (13, 0)
  with pytest.raises(TypeError, match="unsupported device type"):
    dlpack.from_dlpack(OnTpu())


def test_array_roundtrip_through_dlpack():
  x = pjnp.arange(6.0).reshape(2, 3) * 2
  assert x.__dlpack_device__() == (1, 0)
  n = np.from_dlpack(x)
  np.testing.assert_array_equal(n, np.arange(6.0).reshape(2, 3) * 2)
  y = dlpack.from_dlpack(x)
  np.testing.assert_array_equal(y, x)
  assert y.dtype == x.dtype


def test_from_dlpack_matches_jax():
  jax = _jax()
  for a in [np.arange(5, dtype=np.int8), np.ones((2, 2), np.float64), np.array([1 + 2j]),
            np.array([True, False]), np.ones(3, np.uint16)]:
    _same(dlpack.from_dlpack(a), jax.dlpack.from_dlpack(a))


def test_is_supported_dtype():
  jax = _jax()
  for d in ["int8", "uint64", "float16", "bfloat16", "float32", "complex128", "bool",
            "float8_e4m3fn", "int4"]:
    assert dlpack.is_supported_dtype(d) == jax.dlpack.is_supported_dtype(d), d
  with pytest.raises(TypeError):
    dlpack.is_supported_dtype(None)


def test_torch_roundtrip():
  torch = pytest.importorskip("torch")
  t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
  x = dlpack.from_dlpack(t)
  np.testing.assert_array_equal(x, t.numpy())
  back = torch.from_dlpack(pjnp.asarray(x) + 1)
  np.testing.assert_array_equal(back.numpy(), t.numpy() + 1)
