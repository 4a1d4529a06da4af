"""``out_sharding=`` of array constructors and random samplers over 8 CPU devices, against
real JAX (one oracle subprocess): values bit for bit, dtype, weak type, ``jax.typeof``,
spec, committed; JAX's error classes and messages for bad shardings."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp
from pyjax.sharding import AxisType, NamedSharding, PartitionSpec as P

pytestmark = needs8

# expressions over m (Explicit (4, 2) mesh), am (Auto), s = NamedSharding(m, P('x', 'y'))
# and a key k; "ctx" cases run under jax.set_mesh(m), "bare" ones outside any mesh
_CASES = {
    "ctx": {
        "zeros": "jnp.zeros((8, 4), out_sharding=s)",
        "ones_int": "jnp.ones((8, 4), jnp.int32, out_sharding=s)",
        "full_weak": "jnp.full((8, 4), 3, out_sharding=s)",
        "full_arr": "jnp.full((8, 4), jnp.arange(4.), out_sharding=s)",
        "full_like": "jnp.full_like(np.ones((8, 4)), 2., out_sharding=s)",
        "empty": "jnp.empty((8, 4), out_sharding=s)",
        "arange": "jnp.arange(0., 4., 0.5, out_sharding=NamedSharding(m, P('x')))",
        "array": "jnp.array(np.arange(32.).reshape(8, 4), out_sharding=s)",
        "array_list": "jnp.array([1., 2, 3, 4], out_sharding=NamedSharding(m, P('x')))",
        "asarray_np": "jnp.asarray(np.arange(32.).reshape(8, 4), out_sharding=s)",
        "spec_padded": "jnp.zeros((8, 4), out_sharding=P('x'))",
        "normal": "jax.random.normal(k, (8, 4), out_sharding=s)",
        "uniform": "jax.random.uniform(k, (8, 4), out_sharding=NamedSharding(m, P(None, 'y')))",
        "randint": "jax.random.randint(k, (8, 4), 0, 10, out_sharding=s)",
        "gamma": "jax.random.gamma(k, 2., (8, 4), out_sharding=s)",
        "jit_normal": "jax.jit(lambda k: jax.random.normal(k, (8, 4), out_sharding=s))(k)",
        "lax_full": "lax.full((8, 4), 2., sharding=NamedSharding(m, P('x')))",
        "lax_iota": "lax.broadcasted_iota(jnp.int32, (8, 4), 1, out_sharding=s)",
        "lax_bcast": "lax.broadcast_in_dim(jnp.arange(4.), (8, 4), (1,), out_sharding=s)",
        "lax_rbg": "lax.rng_bit_generator(np.arange(4, dtype=np.uint32), (8, 4), "
                   "out_sharding=s)[1]",
        "initializer": "jax.nn.initializers.glorot_normal()(k, (8, 4), out_sharding=s)",
        "auto_mesh": "jnp.zeros((8, 4), out_sharding=NamedSharding(am, P('x')))",
        "indivisible": "jax.random.normal(k, (7, 4), out_sharding=s)",
        "device_and_sharding": "jnp.zeros(4, device=jax.devices()[0], out_sharding=s)",
    },
    "bare": {
        "no_context": "jnp.zeros((8, 4), out_sharding=s)",
        "no_context_normal": "jax.random.normal(k, (8, 4), out_sharding=NamedSharding(m, P(None, 'y')))",
        "no_context_array": "jnp.array([1., 2, 3, 4], out_sharding=NamedSharding(m, P('x')))",
        "auto_axis": "jnp.zeros((8, 4), out_sharding=NamedSharding(am, P('x')))",
        "spec_no_mesh": "jnp.arange(8, out_sharding=P('x'))",
    },
}

_RUN = r"""
def run(jax, jnp, cases, ctx):
  m = jax.make_mesh((4, 2), ('x', 'y'))
  am = jax.make_mesh((4, 2), ('x', 'y'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
  NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
  s = NamedSharding(m, P('x', 'y'))
  k = jax.random.key(0)
  env = dict(np=np, jax=jax, jnp=jnp, lax=jax.lax, m=m, am=am, s=s, k=k, NamedSharding=NamedSharding, P=P)
  res = {}
  for name, expr in cases.items():
    try:
      if ctx:
        with jax.set_mesh(m):
          r = eval(expr, env)
      else:
        r = eval(expr, env)
      sh = r.sharding
      res[name] = dict(value=np.asarray(r), dtype=str(r.dtype), typeof=str(jax.typeof(r)),
                       spec=tuple(sh.spec) if hasattr(sh, 'spec') else None,
                       committed=r.committed,
                       shards=sorted((str(sd.index), sd.device.id) for sd in r.addressable_shards))
    except Exception as e:
      res[name] = (type(e).__name__, str(e))
  return res
"""


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_RUN + f"\n_CASES = {_CASES!r}\n"
                    "out = {c: run(jax, jnp, v, c == 'ctx') for c, v in _CASES.items()}")


def _ours():
  ns = {"np": np}
  exec(_RUN, ns)
  return {c: ns["run"](pyjax, jnp, v, c == "ctx") for c, v in _CASES.items()}


_MARKS = (" This error occurs", "AbstractMesh(", "NamedSharding(", "device=")


def _prefix(msg):
  """JAX's message up to its first part that names objects pyjax prints differently (mesh
  reprs, devices) or its source location."""
  cut = min([msg.find(t) for t in _MARKS if t in msg] + [len(msg)])
  return msg[:cut]


def test_constructors_and_samplers_match_jax(oracle):
  ours = _ours()
  for ctx, cases in _CASES.items():
    for name in cases:
      got, want = ours[ctx][name], oracle[ctx][name]
      if isinstance(want, tuple):
        assert isinstance(got, tuple), (name, got)
        assert got[0] == want[0], (name, got, want)
        assert got[1].startswith(_prefix(want[1])), (name, got[1], want[1])
        continue
      assert isinstance(got, dict), (name, got)
      if name in ("gamma", "initializer"):   # pyjax's gamma and truncated normal samplers
        # are within a few ulps of JAX's (the sharded draw equals pyjax's unsharded one)
        np.testing.assert_allclose(got.pop("value"), want.pop("value"), rtol=1e-6)
      else:
        np.testing.assert_array_equal(got.pop("value"), want.pop("value"), err_msg=name)
      assert got == want, name


def test_sharded_constructor_shards_hold_their_part():
  m = pyjax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
  with pyjax.set_mesh(m):
    r = pyjax.random.normal(pyjax.random.key(1), (8, 6), out_sharding=P("x", "y"))
  assert r._buf is None   # laid out per device, nothing global kept
  want = np.asarray(pyjax.random.normal(pyjax.random.key(1), (8, 6)))
  for sd in r.addressable_shards:
    np.testing.assert_array_equal(np.asarray(sd.data), want[sd.index])
