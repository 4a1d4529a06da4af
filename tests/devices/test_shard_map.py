"""shard_map and pmap on 8 CPU devices: per-device programs running in parallel, with
collectives meeting in the collective runtime; values equal the vmap collectives and
real JAX; a collective not every device reaches raises after the deadline."""
import time

import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax.sharding import Mesh, NamedSharding, PartitionSpec as P

pytestmark = needs8

_ORACLE = r"""
am = Mesh(np.array(jax.devices()).reshape(4, 2), ('x', 'y'))
x = np.arange(64, dtype=np.float32).reshape(8, 8)
def run(f, i, o):
  r = jax.shard_map(f, mesh=am, in_specs=i, out_specs=o, check_vma=False)(x)
  return dict(value=np.asarray(r), spec=tuple(r.sharding.spec), dtype=str(r.dtype))
out['psum'] = run(lambda b: lax.psum(b, 'x'), P('x', 'y'), P(None, 'y'))
out['psum_xy'] = run(lambda b: lax.psum(b, ('x', 'y')), P('x', 'y'), P())
out['pmean'] = run(lambda b: lax.pmean(b, 'y'), P('x', 'y'), P('x'))
out['pmax'] = run(lambda b: lax.pmax(b, 'x'), P('x', 'y'), P(None, 'y'))
out['pmin'] = run(lambda b: lax.pmin(b, 'x'), P('x'), P())
out['gather'] = run(lambda b: lax.all_gather(b, 'x'), P('x', 'y'), P(None, None, 'y'))
out['gather_tiled'] = run(lambda b: lax.all_gather(b, 'x', tiled=True, axis=1), P('x', 'y'), P(None, 'y'))
out['a2a'] = run(lambda b: lax.all_to_all(b, 'x', 1, 0, tiled=True), P('x'), P('x'))
out['ppermute'] = run(lambda b: lax.ppermute(b, 'x', [(i, (i + 1) % 4) for i in range(4)]), P('x'), P('x'))
out['scatter'] = run(lambda b: lax.psum_scatter(b, 'x', scatter_dimension=1, tiled=True), P('x'), P(None, 'x'))
out['index'] = run(lambda b: b * 0 + lax.axis_index('x') * 10 + lax.axis_index('y'), P('x', 'y'), P('x', 'y'))
out['jit'] = dict(value=np.asarray(jax.jit(jax.shard_map(lambda b: jnp.sin(b) + lax.psum(b, 'y'), mesh=am, in_specs=P('x', 'y'), out_specs=P('x', 'y')))(x)))
p = jax.pmap(lambda v: lax.psum(v, 'i') * v, axis_name='i')(x[:4])
out['pmap'] = dict(value=np.asarray(p), spec=tuple(p.sharding.spec))
p2 = jax.pmap(lambda v, w: v + w, in_axes=(0, None), out_axes=1)(x[:4, :2], np.ones(2, np.float32))
out['pmap_out_axes'] = dict(value=np.asarray(p2), spec=tuple(p2.sharding.spec))
m = jax.make_mesh((8,), ('x',))
try:
  jax.shard_map(lambda b: b, mesh=m, in_specs=P('x'), out_specs=P('x'))(jnp.ones(8))
except Exception as e:
  out['explicit_mismatch'] = (type(e).__name__, str(e))
"""


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_ORACLE)


def _mesh():
  return Mesh(np.array(pyjax.devices()).reshape(4, 2), ("x", "y"))


_X = np.arange(64, dtype=np.float32).reshape(8, 8)

_CASES = {
    "psum": (lambda b: lax.psum(b, "x"), P("x", "y"), P(None, "y")),
    "psum_xy": (lambda b: lax.psum(b, ("x", "y")), P("x", "y"), P()),
    "pmean": (lambda b: lax.pmean(b, "y"), P("x", "y"), P("x")),
    "pmax": (lambda b: lax.pmax(b, "x"), P("x", "y"), P(None, "y")),
    "pmin": (lambda b: lax.pmin(b, "x"), P("x"), P()),
    "gather": (lambda b: lax.all_gather(b, "x"), P("x", "y"), P(None, None, "y")),
    "gather_tiled": (lambda b: lax.all_gather(b, "x", tiled=True, axis=1), P("x", "y"),
                     P(None, "y")),
    "a2a": (lambda b: lax.all_to_all(b, "x", 1, 0, tiled=True), P("x"), P("x")),
    "ppermute": (lambda b: lax.ppermute(b, "x", [(i, (i + 1) % 4) for i in range(4)]),
                 P("x"), P("x")),
    "scatter": (lambda b: lax.psum_scatter(b, "x", scatter_dimension=1, tiled=True), P("x"),
                P(None, "x")),
    "index": (lambda b: b * 0 + lax.axis_index("x") * 10 + lax.axis_index("y"),
              P("x", "y"), P("x", "y")),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_collectives_match_jax(oracle, name):
  f, i, o = _CASES[name]
  r = pyjax.shard_map(f, mesh=_mesh(), in_specs=i, out_specs=o, check_vma=False)(_X)
  want = oracle[name]
  np.testing.assert_array_equal(np.asarray(r), want["value"])
  assert tuple(r.sharding.spec) == want["spec"]
  assert str(r.dtype) == want["dtype"]
  assert len(r.addressable_shards) == 8


@pytest.mark.parametrize("name", ["psum", "pmax", "gather", "a2a", "ppermute", "scatter"])
def test_collectives_equal_vmap_collectives(name):
  # the per-device results of shard_map over a 1-d mesh == the vmap collectives' values
  f, _, _ = _CASES[name]
  m = Mesh(np.array(pyjax.devices()[:4]), ("x",))
  x = np.random.RandomState(1).randn(8, 8).astype(np.float32)
  got = pyjax.shard_map(lambda b: f(b)[None], mesh=m, in_specs=P("x"), out_specs=P("x"))(x)
  want = pyjax.vmap(f, axis_name="x")(x.reshape(4, 2, 8))
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_of_shard_map_equals_a_loop(in_axis):
  """vmap batches the per-device program (the vmapped axis is unsharded): the same as a
  Python loop of shard_map calls, with psum inside; also under jit."""
  m = _mesh()
  g = pyjax.shard_map(lambda a, b: (lax.psum(a * b, "x"), a + 1), mesh=m,
                      in_specs=(P("x"), P()), out_specs=(P(), P("x")))
  A = np.arange(24, dtype=np.float32).reshape(3, 8)
  B = np.float32(2.0)
  ref = [g(A[i], B) for i in range(3)]
  v = pyjax.vmap(g, in_axes=(in_axis, None))
  for h in (v, pyjax.jit(v)):
    out = h(A if in_axis == 0 else A.T.copy(), B)
    for k in range(2):
      np.testing.assert_array_equal(np.asarray(out[k]), np.stack([np.asarray(r[k]) for r in ref]))


def test_shard_map_under_jit(oracle):
  f = pyjax.jit(pyjax.shard_map(lambda b: jnp.sin(b) + lax.psum(b, "y"), mesh=_mesh(),
                                in_specs=P("x", "y"), out_specs=P("x", "y")))
  np.testing.assert_allclose(np.asarray(f(_X)), oracle["jit"]["value"], rtol=1e-6)


def test_shard_map_input_shards_reused_and_outputs_per_device():
  m = _mesh()
  a = pyjax.device_put(_X, NamedSharding(m, P("x", "y")))
  r = pyjax.shard_map(lambda b: b * 2, mesh=m, in_specs=P("x", "y"), out_specs=P("x", "y"))(a)
  for s_in, s_out in zip(a.addressable_shards, r.addressable_shards):
    assert s_in.device == s_out.device and s_in.index == s_out.index
    np.testing.assert_array_equal(np.asarray(s_out.data), 2 * np.asarray(s_in.data))


def test_explicit_mesh_in_specs_mismatch(oracle):
  name, msg = oracle["explicit_mismatch"]
  m = pyjax.make_mesh((8,), ("x",))
  with pytest.raises(ValueError) as e:
    pyjax.shard_map(lambda b: b, mesh=m, in_specs=P("x"), out_specs=P("x"))(jnp.ones(8))
  assert type(e.value).__name__ == name and str(e.value) == msg


def test_indivisible_argument():
  with pytest.raises(ValueError, match="not evenly divisible"):
    pyjax.shard_map(lambda b: b, mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))(np.ones(6))


def test_collective_deadline_raises_quickly():
  # only device 0 reaches the psum: the others finish, device 0 times out
  m = Mesh(np.array(pyjax.devices()[:2]), ("x",))

  def f(b):
    return lax.cond(lax.axis_index("x") == 0, lambda v: lax.psum(v, "x"), lambda v: v, b)
  pyjax.config.update("jax_collectives_timeout", 0.5)
  try:
    t = time.time()
    r = pyjax.shard_map(f, mesh=m, in_specs=P("x"), out_specs=P("x"))(np.ones(2, np.float32))
    with pytest.raises(pyjax.errors.JaxRuntimeError, match="DEADLINE_EXCEEDED"):
      np.asarray(r)
    assert time.time() - t < 10
  finally:
    pyjax.config.update("jax_collectives_timeout", None)
  # the runtime is usable afterwards
  r = pyjax.shard_map(lambda b: lax.psum(b, "x"), mesh=m, in_specs=P("x"), out_specs=P())(
      np.ones(2, np.float32))
  np.testing.assert_array_equal(np.asarray(r), [2.0])


def test_failing_device_aborts_the_others():
  m = Mesh(np.array(pyjax.devices()[:4]), ("x",))

  def boom(v):
    if v.sum() > 2:
      raise ValueError("device failure")
    return v

  def f(b):
    b = pyjax.pure_callback(boom, b, b)
    return lax.psum(b, "x")
  t = time.time()
  r = pyjax.shard_map(f, mesh=m, in_specs=P("x"), out_specs=P())(np.arange(4, dtype=np.float32))
  with pytest.raises(Exception):
    np.asarray(r)
  assert time.time() - t < 10


def test_deterministic_sums():
  m = Mesh(np.array(pyjax.devices()), ("x",))
  x = np.random.RandomState(0).randn(8, 1000).astype(np.float32) * 1e4
  f = pyjax.shard_map(lambda b: lax.psum(b, "x"), mesh=m, in_specs=P("x"), out_specs=P())
  r0 = np.asarray(f(x))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(f(x)), r0)
  acc = x[0].copy()
  for k in range(1, 8):
    acc = acc + x[k]
  np.testing.assert_array_equal(r0[0], acc)


def test_pmap_matches_jax(oracle):
  p = pyjax.pmap(lambda v: lax.psum(v, "i") * v, axis_name="i")(_X[:4])
  np.testing.assert_array_equal(np.asarray(p), oracle["pmap"]["value"])
  assert tuple(p.sharding.spec) == oracle["pmap"]["spec"]
  assert [s.device.id for s in p.addressable_shards] == [0, 1, 2, 3]
  p2 = pyjax.pmap(lambda v, w: v + w, in_axes=(0, None), out_axes=1)(
      _X[:4, :2], np.ones(2, np.float32))
  np.testing.assert_array_equal(np.asarray(p2), oracle["pmap_out_axes"]["value"])
  assert tuple(p2.sharding.spec) == oracle["pmap_out_axes"]["spec"]


def test_pmap_static_donate_and_errors():
  f = pyjax.pmap(lambda v, k: v * k, static_broadcasted_argnums=1)
  np.testing.assert_array_equal(np.asarray(f(np.arange(4.0), 3)), np.arange(4.0) * 3)
  a = pyjax.device_put(np.arange(4.0))
  pyjax.pmap(lambda v: v + 1, donate_argnums=0)(a)
  assert a.is_deleted()
  with pytest.raises(ValueError, match="requires 9 logical devices"):
    pyjax.pmap(lambda v: v)(np.ones(9))


def test_pmap_chains_bit_identical_to_sequential():
  def chain(key):
    def body(i, c):
      x, k = c
      k, k1 = pyjax.random.split(k)
      return x + pyjax.random.normal(k1, (4,)) * 0.1, k
    return lax.fori_loop(0, 50, body, (jnp.zeros(4), key))[0]
  keys = pyjax.random.split(pyjax.random.key(0), 8)
  par = np.asarray(pyjax.pmap(chain)(keys))
  seq = np.stack([np.asarray(pyjax.jit(chain)(k)) for k in keys])
  np.testing.assert_array_equal(par, seq)


def test_pmap_keyword_arguments_are_mapped():
  """As JAX: keyword arguments are mapped over their leading axis (values from real JAX:
  psum over the device axis of x*y, plus z)."""
  f = pyjax.pmap(lambda x, y=0, *, z: lax.psum(x * y, "i") + z, axis_name="i")
  x = np.arange(8, dtype=np.float32).reshape(4, 2)
  assert np.asarray(f(x, y=x + 1, z=x * 2)).tolist() == [
      [68.0, 102.0], [72.0, 106.0], [76.0, 110.0], [80.0, 114.0]]
  assert np.asarray(f(x, x, z=x)).tolist() == [
      [56.0, 85.0], [58.0, 87.0], [60.0, 89.0], [62.0, 91.0]]


def test_pmap_traces_once_and_unmapped_outputs_are_one_copy():
  """As JAX: one trace per signature (chex's assert_max_traces counts them); an output
  with out_axes None is one device's (replicated) value. Values from real JAX."""
  traces = []

  def g(x):
    traces.append(1)
    return lax.psum(x, "i"), x * 2
  f = pyjax.pmap(g, axis_name="i", out_axes=(None, 0))
  x = np.arange(8, dtype=np.float32).reshape(4, 2)
  for _ in range(2):
    a, b = f(x)
  assert len(traces) == 1
  assert np.asarray(a).tolist() == [12.0, 16.0]
  assert np.asarray(b).tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0], [12.0, 14.0]]
  assert tuple(b.sharding.spec) == ("i",)


def test_remade_shard_map_and_pmap_trace_and_compile_once(monkeypatch):
  """A shard_map/pmap made anew in a function called repeatedly is traced once (the cache
  is keyed on the function, as JAX's), and its per-device program is compiled once for
  all 8 devices (a CPU executable runs on every device)."""
  from pyjax._src import compiler
  compiles, traces = [], []
  real = compiler.compile_for_device
  monkeypatch.setattr(compiler, "compile_for_device",
                      lambda *a, **k: compiles.append(1) or real(*a, **k))

  def body(b):
    traces.append(1)
    return lax.psum(jnp.sin(b), "x")
  mesh = Mesh(np.array(pyjax.devices()), ("x",))
  for _ in range(3):
    r = pyjax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P())(_X)
    p = pyjax.pmap(body, axis_name="x")(_X)
  assert (len(traces), len(compiles)) == (2, 2)
  want = np.sin(_X).reshape(8, 1, 8).sum(0)
  np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(p), np.broadcast_to(want[0], (8, 8)), rtol=1e-6)
