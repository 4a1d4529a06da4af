"""NamedShardings over a mesh of ONE device are kept (as JAX keeps them: ``x.sharding.mesh``
/ ``.spec`` of every single-device user of sharding annotations) through device_put, eager
operations, jit outputs, out_shardings, with_sharding_constraint, reshard,
make_array_from_callback and shard_map; compared with real JAX.  Also eval_shape's
sharding types and vmap of a sharding constraint."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp
from pyjax.sharding import AxisType, NamedSharding, PartitionSpec as P, SingleDeviceSharding

pytestmark = needs8

_CASES = r"""
def run(jax, jnp, NamedSharding, P, AxisType):
  res = {}
  m = jax.make_mesh((1,), ('x',))
  am = jax.make_mesh((1,), ('x',), axis_types=(AxisType.Auto,))
  ns, ans = NamedSharding(m, P('x')), NamedSharding(am, P('x'))
  x = jax.device_put(np.arange(4.0, dtype=np.float32), ns)
  y = jax.device_put(np.arange(4.0, dtype=np.float32))
  xa = jax.device_put(np.arange(4.0, dtype=np.float32), ans)
  def desc(a):
    s = a.sharding
    spec = list(getattr(s, 'spec', ()))
    while spec and spec[-1] is None:   # (JAX's eager reshape pads the spec to the rank)
      spec.pop()
    return (type(s).__name__, tuple(spec),
            tuple(str(t) for t in getattr(getattr(s, 'mesh', None), 'axis_types', ())),
            str(jax.typeof(a)), np.asarray(a).tolist())
  res['device_put'] = desc(x)
  res['plain'] = desc(y)
  res['add'] = desc(x + 1)
  res['sin'] = desc(jnp.sin(x))
  res['sum'] = desc(x.sum())
  res['mixed'] = desc(x + y)
  res['index'] = desc(x[0])
  res['slice'] = desc(x[1:])
  res['dynamic_slice'] = desc(jax.lax.dynamic_slice_in_dim(x, 1, 2))
  res['reshape'] = desc(x.reshape(2, 2))
  res['where'] = desc(jnp.where(x > 1, x, 0.0))
  res['jit'] = desc(jax.jit(lambda a: a * 2)(x))
  res['jit_sum'] = desc(jax.jit(lambda a: a.sum())(x))
  res['jit_plain'] = desc(jax.jit(lambda a: a * 2)(y))
  res['jit_out'] = desc(jax.jit(lambda a: a * 2, out_shardings=ns)(y))
  res['auto'] = desc(xa)
  res['auto_add'] = desc(xa + 1)
  res['auto_jit'] = desc(jax.jit(lambda a: a * 2)(xa))
  res['wsc'] = desc(jax.lax.with_sharding_constraint(y, ans))
  res['reshard'] = desc(jax.reshard(y, ns))
  res['callback'] = desc(jax.make_array_from_callback((4,), ns, lambda i: np.arange(4.0)[i]))
  res['shard_map'] = desc(jax.shard_map(lambda a: a * 2, mesh=m, in_specs=P('x'),
                                        out_specs=P('x'))(x))
  res['zeros_out'] = desc(jnp.zeros(4, out_sharding=ns))
  res['grad'] = desc(jax.grad(lambda a: (a ** 2).sum())(x))
  res['dp_none'] = desc(jax.device_put(x))
  res['eq'] = (x.sharding == y.sharding, x.sharding == ns, hash(x.sharding) == hash(ns),
               x.sharding.is_equivalent_to(y.sharding, 1),
               y.sharding.is_equivalent_to(x.sharding, 1),
               ns.is_equivalent_to(NamedSharding(m, P()), 1))
  es = jax.eval_shape(lambda a: (a * 2, a.sum()), x)
  res['eval_shape'] = [(tuple(e.sharding.spec), tuple(e.sharding.mesh.axis_names))
                       for e in es]
  res['eval_shape_auto'] = jax.eval_shape(lambda a: a * 2, xa).sharding is None
  m22 = jax.make_mesh((2, 2), ('a', 'b'))
  es = jax.eval_shape(lambda: jax.reshard(jnp.ones((4, 4)), NamedSharding(m22, P('a', 'b'))))
  res['eval_shape_reshard'] = tuple(es.sharding.spec)
  return res
"""


def _pyjax_cases():
  ns = {"np": np}
  exec(_CASES, ns)
  return ns["run"](pyjax, jnp, NamedSharding, P, AxisType)


def test_one_device_named_sharding_like_jax():
  want = jax_oracle(_CASES + "\nout.update(run(jax, jnp, NamedSharding, P, AxisType))\n")
  got = _pyjax_cases()
  assert got.keys() == want.keys()
  for k in want:
    assert got[k] == want[k], k
  assert got["device_put"][0] == "NamedSharding"   # (the point of this file)


def test_one_device_jit_does_not_retrace_per_sharding_object():
  m = pyjax.make_mesh((1,), ("x",))
  traces = []

  @pyjax.jit
  def f(a):
    traces.append(1)
    return a + 1
  x = pyjax.device_put(np.ones(3, np.float32), NamedSharding(m, P("x")))
  x2 = pyjax.device_put(np.ones(3, np.float32), NamedSharding(m, P("x")))
  for a in (x, x2, x + 1):
    assert f(a).sharding == NamedSharding(m, P("x"))
  assert len(traces) == 1
  # a plain array keeps the single-device layout
  assert isinstance(f(np.ones(3, np.float32)).sharding, SingleDeviceSharding)


_VMAP = r"""
def run_vmap(j, NS, PS):
  m = j.make_mesh((1, 2, 2), ("l", "a", "b"), axis_types=(j.sharding.AxisType.Auto,) * 3)
  f = j.vmap(lambda v: j.lax.with_sharding_constraint(v * 2, NS(m, PS("a", "b"))))
  x = np.arange(80.0, dtype=np.float32).reshape(5, 4, 4)
  out = f(x)
  eqn, = [e for e in j.make_jaxpr(f)(x).jaxpr.eqns if e.primitive.name == "sharding_constraint"]
  spec = [str(e) for e in eqn.params["sharding"].spec]
  return out.shape, np.asarray(out).tolist(), spec, sorted(eqn.params["unconstrained_dims"])
"""


def test_vmap_of_sharding_constraint_batches_the_spec():
  # (flax nnx.vmap of a Variable with out_sharding over a mesh with a size-1 'layers' axis
  # raised IndivisibleError: the spec was not moved past the batch dimension)
  want = jax_oracle(_VMAP + "\nout['r'] = run_vmap(jax, NamedSharding, P)\n")["r"]
  ns = {"np": np}
  exec(_VMAP, ns)
  got = ns["run_vmap"](pyjax, NamedSharding, P)
  assert got[:2] == want[:2]
  assert got[3] == want[3] == [0]
  # JAX writes the batch dimension as UNCONSTRAINED, pyjax as None (it is in
  # unconstrained_dims either way); the other entries are the unbatched spec's
  assert got[2] == ["None", "a", "b"] and want[2] == ["UNCONSTRAINED", "a", "b"]


_CONV = r"""
def run_conv(j, NS, PS):
  m = j.make_mesh((2, 2), ("X", "Y"))
  res = {}
  with j.set_mesh(m):
    x = j.reshard(np.arange(32, dtype=np.float32).reshape(2, 4, 4), PS("X", None, None))
    k = np.linspace(-1, 1, 3 * 4 * 8, dtype=np.float32).reshape(3, 4, 8)
    dn = ("NWC", "WIO", "NWC")
    conv = lambda a, w, **kw: j.lax.conv_general_dilated(a, w, (1,), "SAME",
                                                          dimension_numbers=dn, **kw)
    y = conv(x, k)
    res["plain"] = (str(j.typeof(y)), np.asarray(y).round(4).tolist())
    res["out_sharding"] = str(j.typeof(conv(x, k, out_sharding=PS("X", "Y", None))))
    res["jit"] = str(j.typeof(j.jit(conv)(x, k)))
    res["slice"] = str(j.typeof(j.jit(lambda a: a[:, 1:])(x)))
    res["take"] = str(j.typeof(j.numpy.take(x, j.numpy.array([0, 2]), axis=1)))
    try:   # (flax nnx.Embed over a sharded table: JAX's gather error)
      j.numpy.take(x, j.numpy.array([1, 0]), axis=0)
      res["take_error"] = None
    except Exception as e:
      res["take_error"] = (type(e).__name__, str(e).split("\n")[0])
    try:
      j.jit(lambda a: a[1:])(x)
      res["slice_error"] = None
    except Exception as e:
      res["slice_error"] = (type(e).__name__, str(e).split("\n")[0])
    try:
      conv(x, j.reshard(k, PS(None, None, "Y")))
      res["sharded_kernel"] = None
    except Exception as e:
      res["sharded_kernel"] = (type(e).__name__, str(e).split("\n")[0])
  return res
"""


def test_conv_slice_gather_sharding_types_like_jax():
  # (flax nnx.Conv on an Explicit mesh: the output kept no sharding type)
  want = jax_oracle(_CONV + "\nout['r'] = run_conv(jax, NamedSharding, P)\n")["r"]
  ns = {"np": np}
  exec(_CONV, ns)
  got = ns["run_conv"](pyjax, NamedSharding, P)
  assert got["plain"][0] == want["plain"][0] == "float32[2@X,4,8]"
  np.testing.assert_allclose(got["plain"][1], want["plain"][1], rtol=1e-5, atol=1e-4)
  for k in ("out_sharding", "jit", "sharded_kernel", "slice", "slice_error", "take",
            "take_error"):
    assert got[k] == want[k], k
