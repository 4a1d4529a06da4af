"""jit with in_shardings/out_shardings, with_sharding_constraint, reshard, Explicit
sharding types (ShardingTypeError, out_sharding=) and grad/vjp of shard_map and pmap,
on 8 CPU devices, compared with real JAX (one oracle subprocess for the file)."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax.sharding import AxisType, NamedSharding, PartitionSpec as P

pytestmark = needs8

# Each case is an expression over m (Explicit (4, 2) mesh), am (Auto), a (8x4 @ x,y),
# b (8x4 @ x), c (8x4 @ y); run by both libraries; its typeof, spec and value compared,
# or its exception class and message.
_CASES = {
    "ew_merge": "a + b",
    "ew_conflict": "a + c",
    "ew_bcast": "a + np.ones(4, np.float32)",
    "reshape_merge": "a.reshape(32)",
    "reshape_split": "a.reshape(8, 2, 2)",
    "reshape_bad": "a.reshape(2, 4, 4)",
    "reshape_out": "jnp.reshape(a, (32,), out_sharding=NamedSharding(m, P('x')))",
    "dot_free": "jnp.dot(a, c.T)",
    "dot_contract": "jnp.dot(a, a.T)",
    "dot_out": "jnp.dot(b, c.T, out_sharding=NamedSharding(m, P('x', 'y')))",
    "dot_twice": "jnp.einsum('ij,kj->ik', b, b)",
    "dg_out": "lax.dot_general(a, a, (((1,), (1,)), ((), ())), "
              "out_sharding=NamedSharding(m, P(None, 'x')))",
    "spec_no_mesh": "jnp.dot(b, c.T, out_sharding=P('x'))",
    "expand": "a[None]",
    "sum_all": "jnp.sum(a)",
    "jit_sum0": "jax.jit(lambda v: v.sum(0))(a)",
    "jit_T": "jax.jit(lambda v: v.T)(a)",
    "jit_matmul_err": "jax.jit(lambda u, v: u @ v)(a.T, b)",
    "jit_in_mismatch": "jax.jit(lambda v: v * 2, in_shardings=NamedSharding(m, P('y', 'x')))(a)",
    "jit_out": "jax.jit(lambda v: v * 2, out_shardings=NamedSharding(m, P(None, 'x')))(a)",
    "jit_out_spec_nomesh": "jax.jit(lambda v: v * 2, out_shardings=P('x'))(a)",
    "jit_in_uncommitted": "jax.jit(lambda v: v.sum(), in_shardings=NamedSharding(am, P('x')))"
                          "(np.ones(8, np.float32))",
    "jit_in_len": "jax.jit(lambda v: v, in_shardings=(NamedSharding(m, P('x')), None))"
                  "(np.ones(8))",
    "jit_indivisible": "jax.jit(lambda v: v, in_shardings=NamedSharding(m, P('x')))"
                       "(np.ones(6, np.float32))",
    "wsc_auto": "jax.jit(lambda v: lax.with_sharding_constraint(v, NamedSharding(am, P('x'))))"
                "(np.ones((8, 4), np.float32))",
    "wsc_eager": "lax.with_sharding_constraint(np.ones((8, 4), np.float32), "
                 "NamedSharding(am, P(None, 'y')))",
    "wsc_explicit": "jax.jit(lambda v: lax.with_sharding_constraint(v, NamedSharding(m, P('x'))))"
                    "(np.ones((8, 4), np.float32))",
    "reshard": "jax.sharding.reshard(a, NamedSharding(m, P(None, 'x')))",
    "reshard_nomesh": "jax.sharding.reshard(a, P('x'))",
}
_MESH_CASES = {   # under jax.set_mesh(m)
    "reshard_spec": "jax.reshard(a, P('y'))",
    "jit_out_spec": "jax.jit(lambda v: v + 1, out_shardings=P('y'))(a)",
    "jit_in_spec": "jax.jit(lambda v: v + 1, in_shardings=P('x', 'y'))(np.ones((8, 4), np.float32))",
    "jit_reshard": "jax.jit(lambda v: jax.reshard(v * 2, P(None, 'y')))(a)",
    "jit_tree": "jax.jit(lambda u, v: (u + 1, v), in_shardings=(P('x'), None), "
                "out_shardings=(None, P('y')))(np.ones((8, 4), np.float32), np.ones(4, np.float32))",
    # the "Explicit sharding" document's examples
    "doc_put_spec": "jax.device_put(np.arange(32.).reshape(8, 4), P('x', 'y'))",
    "doc_bcast_add": "jax.device_put(np.arange(4).reshape(4, 1), P('x', None)) + "
                     "jax.device_put(np.arange(8).reshape(1, 8), P(None, 'y'))",
    "doc_matmul_err": "jnp.matmul(jax.device_put(np.arange(16.).reshape(8, 2), P('x', 'y')), "
                      "jax.device_put(np.arange(16.).reshape(2, 8), P('y', None)))",
    "doc_matmul_out": "jnp.matmul(jax.device_put(np.arange(16.).reshape(8, 2), P('x', 'y')), "
                      "jax.device_put(np.arange(16.).reshape(2, 8), P('y', None)), "
                      "out_sharding=P('x', None))",
    "doc_auto_axes": "jax.sharding.auto_axes(lambda u, v: u + v)("
                     "jax.device_put(np.arange(4.).reshape(4, 1), P('x', None)), "
                     "jax.device_put(np.arange(8.).reshape(1, 8), P(None, 'y')), "
                     "out_sharding=P('x', None))",
    "doc_auto_axes_missing": "jax.sharding.auto_axes(lambda u: u)(a)",
    "doc_sum": "jnp.sum(jax.device_put(np.arange(8.), P('x')))",
    "doc_jit_add": "jax.jit(lambda u, v: u + v)("
                   "jax.device_put(np.arange(16.).reshape(8, 2), P('x', 'y')), "
                   "jax.device_put(np.arange(16.).reshape(8, 2), P('x', 'y')))",
}

_RUN = r"""
def run_cases(jax, jnp, lax, NamedSharding, P, AxisType, cases, mesh_cases):
  m = jax.make_mesh((4, 2), ('x', 'y'))
  am = jax.make_mesh((4, 2), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)
  x = np.arange(32, dtype=np.float32).reshape(8, 4)
  a = jax.device_put(x, NamedSharding(m, P('x', 'y')))
  b = jax.device_put(x + 1, NamedSharding(m, P('x', None)))
  c = jax.device_put(x - 1, NamedSharding(m, P('y', None)))
  res = {}
  def strip(s):   # the spec without trailing Nones (XLA keeps some, drops others)
    t = list(getattr(s, 'spec', ()))
    while t and t[-1] is None:
      t.pop()
    return tuple(t)
  env = dict(np=np, jax=jax, jnp=jnp, lax=lax, NamedSharding=NamedSharding, P=P, m=m, am=am,
             a=a, b=b, c=c)
  def one(name, src):
    try:
      r = eval(src, env)
    except Exception as e:
      res[name] = ('error', type(e).__name__, str(e))
      return
    leaves = jax.tree.leaves(r)
    res[name] = [(str(jax.typeof(v)), strip(v.sharding), np.asarray(v)) for v in leaves]
  for k, v in cases.items():
    one(k, v)
  with jax.set_mesh(m):
    for k, v in mesh_cases.items():
      one(k, v)
  return res
"""


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_RUN + f"\nout['cases'] = run_cases(jax, jnp, lax, NamedSharding, P, "
                    f"AxisType, {_CASES!r}, {_MESH_CASES!r})\n" + _GRAD + _TYPEOF
                    + "\nout['typeof'] = typeof_in_jit(jax, jnp)\n")


@pytest.fixture(scope="module")
def ours():
  ns = {"np": np}
  exec(_RUN, ns)
  return ns["run_cases"](pyjax, jnp, lax, NamedSharding, P, AxisType, _CASES, _MESH_CASES)


@pytest.mark.parametrize("name", list(_CASES) + list(_MESH_CASES))
def test_case_matches_jax(oracle, ours, name):
  want, got = oracle["cases"][name], ours[name]
  if want[0] == "error":
    assert want[1] != "NameError", want
    assert got[0] == "error", got
    assert got[1] == want[1]
    assert got[2] == want[2]
    return
  assert got[0] != "error", got
  assert len(got) == len(want)
  for (gt, gs, gv), (wt, ws, wv) in zip(got, want):
    assert gt == wt
    assert gs == ws
    np.testing.assert_array_equal(gv, wv)


def test_jit_sharded_is_bit_identical():
  m = pyjax.make_mesh((4, 2), ("x", "y"))
  x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
  w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
  f = lambda v: jnp.tanh(v @ w).sum(1) * 3
  a = pyjax.device_put(x, NamedSharding(m, P("x")))
  g = pyjax.jit(f, out_shardings=NamedSharding(m, P("x")))
  r = g(a)
  assert r.sharding.spec == P("x")
  assert [s.index for s in r.addressable_shards][:2] == [(slice(0, 2),), (slice(0, 2),)]
  np.testing.assert_array_equal(np.asarray(r), np.asarray(pyjax.jit(f)(x)))


_TYPEOF = r"""
def typeof_in_jit(jax, jnp):
  NS, PS = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
  m = jax.make_mesh((4, 2), ('x', 'y'))
  a = jax.device_put(np.arange(32.).reshape(8, 4), NS(m, PS('x', 'y')))
  seen = []
  def f(v):
    w = (v[None] * 2.0).reshape(8, 4).T
    seen.extend(str(jax.typeof(t)) for t in (v, v.sum(1), v[None] * 1.0, w, v @ jnp.ones((4, 3))))
    return w
  jax.jit(f)(a)
  return seen
"""


def test_typeof_inside_jit_matches_jax(oracle):
  ns = {"np": np}
  exec(_TYPEOF, ns)
  assert ns["typeof_in_jit"](pyjax, jnp) == oracle["typeof"]


# --- grad / vjp of shard_map and pmap (Auto mesh) ------------------------------------------
_GRAD = r"""
def grads(jax, jnp):
  P = jax.sharding.PartitionSpec
  mesh = jax.make_mesh((4, 2), ('x', 'y'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
  x = np.arange(32., dtype=np.float32).reshape(8, 4) / 10
  w = np.linspace(-1, 1, 4, dtype=np.float32)
  def f1(x, w):
    return jax.shard_map(lambda a, b: jax.lax.psum(jnp.sin(a) * b, 'x'), mesh=mesh,
                         in_specs=(P('x', None), P()), out_specs=P())(x, w).sum()
  def f2(x):
    g = jax.shard_map(lambda a: jax.lax.all_gather(a * a, 'x', tiled=True), mesh=mesh,
                      in_specs=P('x', 'y'), out_specs=P(None, 'y'), check_vma=False)
    return (g(x) ** 2).sum()
  def f3(x):
    g = jax.shard_map(lambda a: jax.lax.ppermute(a, 'x', [(i, (i + 1) % 4) for i in range(4)])
                      * jnp.arange(2, dtype=a.dtype)[:, None], mesh=mesh,
                      in_specs=P('x', 'y'), out_specs=P('x', 'y'))
    return (g(x) * x).sum()
  def f4(x):
    g = jax.shard_map(lambda a: jax.lax.psum_scatter(a, 'x', scatter_dimension=0, tiled=True),
                      mesh=mesh, in_specs=P(None, 'y'), out_specs=P('x', 'y'))
    return jnp.tanh(g(x)).sum()
  pm = jax.pmap(lambda a, b: jax.lax.psum(jnp.sin(a) * b, 'i'), axis_name='i', in_axes=(0, None))
  r = {}
  r['psum'] = [np.asarray(t) for t in jax.grad(f1, argnums=(0, 1))(x, w)]
  r['all_gather'] = [np.asarray(jax.grad(f2)(x))]
  r['ppermute'] = [np.asarray(jax.grad(f3)(x))]
  r['psum_scatter_jit'] = [np.asarray(jax.jit(jax.grad(f4))(x))]
  r['pmap'] = [np.asarray(t) for t in jax.grad(lambda a, b: pm(a, b).sum(), argnums=(0, 1))(x, w)]
  _, vjp = jax.vjp(f2, x)
  r['vjp'] = [np.asarray(vjp(np.float32(2.0))[0])]
  r['jvp'] = [np.asarray(t) for t in jax.jvp(f1, (x, w), (x, w))]
  return r
out['grads'] = grads(jax, jnp)
"""


@pytest.fixture(scope="module")
def our_grads():
  ns = {"np": np}
  exec(_GRAD.replace("out['grads'] = grads(jax, jnp)", ""), ns)
  return ns["grads"](pyjax, jnp)


@pytest.mark.parametrize("name", ["psum", "all_gather", "ppermute", "psum_scatter_jit", "pmap",
                                  "vjp", "jvp"])
def test_grad_of_shard_map_matches_jax(oracle, our_grads, name):
  for g, w in zip(our_grads[name], oracle["grads"][name]):
    np.testing.assert_allclose(g, w, rtol=2e-6, atol=4e-6)


def test_eager_elementwise_runs_shard_by_shard():
  m = pyjax.make_mesh((4, 2), ("x", "y"))
  x = np.random.default_rng(1).standard_normal((8, 6)).astype(np.float32)
  a = pyjax.device_put(x, NamedSharding(m, P("x", "y")))
  r = jnp.where(jnp.sin(a) * 2 + 1 > 0, a, 0.0)
  assert r._buf is None   # nothing assembled: each device computed its own part
  assert str(pyjax.typeof(r)) == "float32[8@x,6@y]"
  want = np.where(np.asarray(jnp.sin(x) * 2 + 1) > 0, x, 0.0)
  for s in r.addressable_shards:
    np.testing.assert_array_equal(np.asarray(s.data), want[s.index])
  np.testing.assert_array_equal(np.asarray(r), want)


@needs8
def test_in_shardings_cover_the_dynamic_arguments_only():
  # (JAX 0.10: the static argument takes no entry; a tuple as long as every positional
  # argument is the "wrong length" error, counted over the dynamic ones)
  m = pyjax.make_mesh((8,), ("x",))
  s = NamedSharding(m, P("x"))
  f = pyjax.jit(lambda k, x: x * k, in_shardings=(s,), static_argnums=0)
  y = f(2, jnp.arange(8.0))
  np.testing.assert_array_equal(np.asarray(y), np.arange(8.0) * 2)
  assert y.sharding.spec == P("x")
  g = pyjax.jit(lambda k, x: x * k, in_shardings=(s, s), static_argnums=0)
  with pytest.raises(ValueError, match="got a tuple or list of length 2 for an args tuple "
                                       "of length 1"):
    g(2, jnp.arange(8.0))
