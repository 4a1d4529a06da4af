"""Sharded Arrays on 8 CPU devices (one buffer per device) compared with real JAX:
device_put with NamedSharding, shards, typeof strings, eager ops keeping shardings,
make_array_from_callback, visualize_array_sharding."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp
from pyjax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

pytestmark = needs8

_ORACLE = r"""
m = jax.make_mesh((4, 2), ('x', 'y'))
am = Mesh(np.array(jax.devices()).reshape(4, 2), ('x', 'y'))
x = np.arange(32, dtype=np.float32).reshape(8, 4)
def desc(a):
  return dict(spec=tuple(a.sharding.spec), typeof=str(jax.typeof(a)), value=np.asarray(a),
              dtype=str(a.dtype),
              shards=[(s.device.id, tuple((i.start, i.stop) for i in s.index), s.replica_id,
                       np.asarray(s.data)) for s in a.addressable_shards],
              replicated=a.is_fully_replicated, addressable=a.is_fully_addressable)
a = jax.device_put(x, NamedSharding(m, P('x', 'y')))
out['explicit_xy'] = desc(a)
out['explicit_add'] = desc(a * 2 + 1)
out['explicit_sum'] = desc(a.sum())
b = jax.device_put(x, NamedSharding(am, P('x')))
out['auto_x'] = desc(b)
out['auto_sin'] = desc(jnp.sin(b))
out['auto_sum'] = desc(b.sum())
out['auto_mixed'] = desc(b + jax.device_put(x, NamedSharding(am, P(None, 'y'))))
out['repl'] = desc(jax.device_put(x, NamedSharding(am, P())))
out['xy_flat'] = desc(jax.device_put(np.arange(8, dtype=np.int32), NamedSharding(m, P(('x', 'y')))))
out['tree'] = [desc(v) for v in jax.tree.leaves(jax.device_put({'a': x, 'b': x[:, :2]}, NamedSharding(am, P('x'))))]
cb = jax.make_array_from_callback((8, 4), NamedSharding(am, P('x', 'y')), lambda idx: x[idx])
out['callback'] = desc(cb)
try:
  jax.device_put(np.ones(6), NamedSharding(am, P('x')))
except Exception as e:
  out['indivisible'] = (type(e).__name__, str(e))
"""


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_ORACLE)


def _meshes():
  m = pyjax.make_mesh((4, 2), ("x", "y"))
  am = Mesh(np.array(pyjax.devices()).reshape(4, 2), ("x", "y"))
  return m, am


def _desc(a):
  return dict(spec=tuple(a.sharding.spec), typeof=str(pyjax.typeof(a)), value=np.asarray(a),
              dtype=str(a.dtype),
              shards=[(s.device.id, tuple((i.start, i.stop) for i in s.index), s.replica_id,
                       np.asarray(s.data)) for s in a.addressable_shards],
              replicated=a.is_fully_replicated, addressable=a.is_fully_addressable)


def _same(got, want):
  for k in ("spec", "typeof", "dtype", "replicated", "addressable"):
    assert got[k] == want[k], (k, got[k], want[k])
  # transcendentals may differ from XLA's in the last bit
  np.testing.assert_allclose(got["value"], want["value"], rtol=1e-6)
  assert len(got["shards"]) == len(want["shards"])
  for g, w in zip(got["shards"], want["shards"]):
    assert g[:3] == w[:3]
    np.testing.assert_allclose(g[3], w[3], rtol=1e-6)
    np.testing.assert_array_equal(g[3], got["value"][tuple(slice(*i) for i in g[1])])


def _cases():
  m, am = _meshes()
  x = np.arange(32, dtype=np.float32).reshape(8, 4)
  out = {}
  a = pyjax.device_put(x, NamedSharding(m, P("x", "y")))
  out["explicit_xy"] = _desc(a)
  out["explicit_add"] = _desc(a * 2 + 1)
  out["explicit_sum"] = _desc(a.sum())
  b = pyjax.device_put(x, NamedSharding(am, P("x")))
  out["auto_x"] = _desc(b)
  out["auto_sin"] = _desc(jnp.sin(b))
  out["auto_sum"] = _desc(b.sum())
  out["auto_mixed"] = _desc(b + pyjax.device_put(x, NamedSharding(am, P(None, "y"))))
  out["repl"] = _desc(pyjax.device_put(x, NamedSharding(am, P())))
  out["xy_flat"] = _desc(pyjax.device_put(np.arange(8, dtype=np.int32),
                                          NamedSharding(m, P(("x", "y")))))
  out["tree"] = [_desc(v) for v in pyjax.tree.leaves(
      pyjax.device_put({"a": x, "b": x[:, :2]}, NamedSharding(am, P("x"))))]
  out["callback"] = _desc(pyjax.make_array_from_callback(
      (8, 4), NamedSharding(am, P("x", "y")), lambda idx: x[idx]))
  return out


@pytest.mark.parametrize("name", ["explicit_xy", "explicit_add", "explicit_sum", "auto_x",
                                  "auto_sin", "auto_sum", "auto_mixed", "repl", "xy_flat",
                                  "callback"])
def test_sharded_arrays_match_jax(oracle, name):
  _same(_cases()[name], oracle[name])


def test_device_put_pytree_matches_jax(oracle):
  got = _cases()["tree"]
  for g, w in zip(got, oracle["tree"]):
    _same(g, w)


def test_one_buffer_per_device():
  _, am = _meshes()
  x = np.arange(32, dtype=np.float32).reshape(8, 4)
  a = pyjax.device_put(x, NamedSharding(am, P("x", "y")))
  shards = a.addressable_shards
  assert [s.device for s in shards] == pyjax.devices()
  for s in shards:
    assert s.data.devices() == {s.device} and s.data.shape == (2, 2)
    assert s.data.sharding == pyjax.sharding.SingleDeviceSharding(s.device)
  bufs = {id(np.asarray(s.data)) for s in shards}
  assert len(bufs) == 8
  assert a.devices() == set(pyjax.devices()) and a.committed
  assert isinstance(a, pyjax.Array)


def test_indivisible_error(oracle):
  _, am = _meshes()
  name, msg = oracle["indivisible"]
  with pytest.raises(ValueError) as e:
    pyjax.device_put(np.ones(6), NamedSharding(am, P("x")))
  assert type(e.value).__name__ == name
  assert "implies that array axis 0 is partitioned 4 times, but the dimension size is 6" in str(e.value)


def test_make_mesh_axis_types():
  m, am = _meshes()
  assert m.axis_types == (AxisType.Explicit, AxisType.Explicit)
  assert am.axis_types == (AxisType.Auto, AxisType.Auto)
  assert repr(NamedSharding(am, P("x"))) == (
      "NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('x',), "
      "memory_kind=device)")


def test_jit_on_sharded_inputs_is_exact():
  _, am = _meshes()
  x = np.random.RandomState(0).randn(8, 4).astype(np.float32)
  a = pyjax.device_put(x, NamedSharding(am, P("x")))
  f = pyjax.jit(lambda v: jnp.tanh(v) @ v.T + 1)
  np.testing.assert_array_equal(np.asarray(f(a)), np.asarray(f(x)))


def test_visualize_array_sharding(capsys):
  _, am = _meshes()
  pyjax.debug.visualize_array_sharding(pyjax.device_put(np.ones((8, 4)), NamedSharding(am, P("x"))))
  want = ("┌──────────┐\n│ CPU 0,1  │\n├──────────┤\n│ CPU 2,3  │\n├──────────┤\n"
          "│ CPU 4,5  │\n├──────────┤\n│ CPU 6,7  │\n└──────────┘\n")
  assert capsys.readouterr().out == want
  pyjax.debug.visualize_array_sharding(
      pyjax.device_put(np.ones(16), NamedSharding(am, P("x"))))
  assert capsys.readouterr().out == (
      "┌───────┬───────┬───────┬───────┐\n│CPU 0,1│CPU 2,3│CPU 4,5│CPU 6,7│\n"
      "└───────┴───────┴───────┴───────┘\n")
  seen = []
  pyjax.debug.inspect_array_sharding(pyjax.device_put(np.ones(8), NamedSharding(am, P("x"))),
                                     callback=seen.append)
  assert seen == [NamedSharding(am, P("x"))]


def test_pickle_and_delete():
  import pickle
  _, am = _meshes()
  a = pyjax.device_put(np.arange(8.0), NamedSharding(am, P("x")))
  b = pickle.loads(pickle.dumps(a))
  assert b.sharding == a.sharding
  np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
  a.delete()
  assert a.is_deleted()
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    np.asarray(a)


@needs8
def test_is_equivalent_to_on_sharded_specs():
  # (JAX 0.10 gives these: True, True, False, False, False; flax's EMA sharding test)
  m = pyjax.make_mesh((4, 2), ("x", "y"))
  a = NamedSharding(m, P("x", "y"))
  assert a.is_equivalent_to(NamedSharding(m, P("x", "y")), 2)
  assert NamedSharding(m, P("x")).is_equivalent_to(NamedSharding(m, P("x", None)), 2)
  assert not a.is_equivalent_to(NamedSharding(m, P("x")), 2)
  assert not a.is_equivalent_to(NamedSharding(m, P("y", "x")), 2)
  assert not NamedSharding(m, P(("x", "y"))).is_equivalent_to(NamedSharding(m, P("x")), 1)


@needs8
def test_asarray_with_dtype_and_reshard_on_abstract_mesh_keep_sharding_types():
  # (JAX 0.10: float32[4@X,2] for both; flax nnx layers under an Explicit mesh)
  from pyjax.sharding import reshard
  mesh = pyjax.make_mesh((4, 2), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
  with pyjax.set_mesh(mesh):
    x = reshard(jnp.arange(8).reshape(4, 2), P("X", None))
    assert str(pyjax.typeof(jnp.asarray(x, jnp.float32))) == "float32[4@X,2]"
    assert str(pyjax.typeof(jnp.array(x))) == "int32[4@X,2]"
    am = pyjax.sharding.get_abstract_mesh()
    y = reshard(jnp.ones((4, 2)), NamedSharding(am, P("X", None)))
    assert str(pyjax.typeof(y)) == "float32[4@X,2]"
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x, jnp.float32)),
                                  np.arange(8.0).reshape(4, 2))


@needs8
def test_zeros_like_of_a_sharded_array_takes_its_sharding():
  # (JAX 0.10's full_like: optax's adam state of sharded params is sharded alike)
  m = pyjax.make_mesh((4, 2), ("row", "col"))
  s = NamedSharding(m, P("row", "col"))
  w = pyjax.device_put(jnp.ones((8, 2)), s)
  for out in (jnp.zeros_like(w), jnp.ones_like(w, dtype=jnp.int32), jnp.full_like(w, 3.0)):
    assert out.sharding == s
  np.testing.assert_array_equal(np.asarray(jnp.full_like(w, 3.0)), np.full((8, 2), 3.0))
  assert jnp.zeros_like(w, shape=(3,)).shape == (3,)


@needs8
def test_with_sharding_constraint_takes_a_format():
  # (JAX 0.10: the Format's sharding lays the value out; a layout without a sharding is
  # its ValueError)
  from pyjax.experimental.layout import Format, Layout
  m = pyjax.make_mesh((4, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
  ns = NamedSharding(m, P("a", "b"))
  y = pyjax.lax.with_sharding_constraint(jnp.ones((4, 4)),
                                         Format(Layout(major_to_minor=(1, 0)), ns))
  assert y.sharding == ns
  with pytest.raises(ValueError, match="Sharding has to be concrete when layout"):
    pyjax.lax.with_sharding_constraint(jnp.ones((4, 4)), Format(Layout(major_to_minor=(1, 0))))
