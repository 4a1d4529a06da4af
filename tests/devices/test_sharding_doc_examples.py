"""The examples of JAX 0.10.2's multi-device documents, run by pyjax and by real JAX (8 CPU
devices, tests/_multidevice.py's cached oracle) and compared: values, shards, jax.typeof
strings, shardings and what the examples print (visualize_array_sharding, meshes, errors).

Sources (docs/ of jax-v0.10.2, where "Explicit sharding" is part of the first):
* ``par_*``: "Distributed arrays and automatic parallelization" (docs/parallel.md): the quick
  example, meshes and abstract meshes under jit, device_put with specs, unreduced, another
  mesh, typeof(x).sharding, propagation rules, random with out_sharding, dot needing
  out_sharding, auto_axes, Auto mode with with_sharding_constraint, explicit_axes, concrete
  vs type shardings, the Manual-mode matmul.
* ``sm_*``: "Manual parallelism with shard_map" (docs/notebooks/shard_map.md): matmul_basic,
  rank-preserving maps, in_specs/out_specs (f1..f5, tiling by out_specs), varying manual
  axes and check_vma, scan carries with pcast, the collectives tutorial (psum, all_gather,
  psum_scatter, ppermute, the ppermute psum_scatter, all_to_all), the matmul examples
  (all-gather overlapped under jit, psum_scatter) and data-parallel loss and gradient.
Known differences from JAX are the xfail cases below (strict, so a fix shows up), and
AbstractMesh reprs: JAX's carry ", device_kind=cpu, num_cores=None, platform=cpu" when taken
from a concrete mesh; pyjax's abstract meshes have no device facts (removed before
comparing)."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp

pytestmark = needs8

_DOC = r'''
import contextlib, io
from functools import partial

def doc_examples(jax, jnp, np):
  lax = jax.lax
  P, NamedSharding, Mesh = jax.P, jax.NamedSharding, jax.sharding.Mesh
  Auto, Explicit = jax.sharding.AxisType.Auto, jax.sharding.AxisType.Explicit
  res = {}

  def example(fn, name=None):   # record what the example returns and prints, or its error
    name = name or fn.__name__
    buf = io.StringIO()
    try:
      with contextlib.redirect_stdout(buf):
        r = fn()
    except Exception as e:
      res[name] = ('error', type(e).__name__, str(e).split('\n')[0], buf.getvalue())
    else:
      res[name] = (jax.tree.map(lambda v: desc(v) if hasattr(v, 'sharding') else v, r),
                          buf.getvalue())
    return fn

  def desc(a):
    spec = list(a.sharding.spec)
    while spec and spec[-1] is None:   # trailing Nones: XLA keeps some, drops others
      spec.pop()
    return (str(jax.typeof(a)), tuple(spec), np.asarray(a),
            [(s.device.id, np.asarray(s.data)) for s in a.addressable_shards])

  def close(a, b):
    return bool(jax.tree.all(jax.tree.map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b)))

  mesh = jax.make_mesh((4, 2), ('X', 'Y'))
  with jax.set_mesh(mesh):
    x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P('X', 'Y'))

    @example
    def par_quick_example():
      jax.debug.visualize_array_sharding(x)
      print(mesh)
      print(x.sharding)
      return x, jnp.sin(x).T

    @example
    def par_abstract_mesh_in_jit():
      @jax.jit
      def f(x):
        am = jax.sharding.AbstractMesh((8,), ('A',), (Explicit,))
        with jax.sharding.use_abstract_mesh(am):
          return jax.reshard(x, P('A', None)) * 2
      return jax.typeof(f(x)).__str__()

    @example
    def par_device_put_specs():
      out = []
      for spec in (P('Y', 'X'), P('X', None), P(('X', 'Y'))):
        y = jax.device_put(x, spec)
        jax.debug.visualize_array_sharding(y)
        out.append(y)
      return out

    @example
    def par_unreduced():
      y = jax.device_put(x, P('X', None, unreduced={'Y'}))
      return str(y.sharding), [np.asarray(s.data) for s in y.addressable_shards]

    @example
    def par_other_mesh():
      return jax.device_put(x, NamedSharding(jax.make_mesh((8,), ('A',)), P('A', None)))

    @example
    def par_typeof_sharding():
      print(jax.typeof(x).sharding)
      jax.jit(lambda x: print(jax.typeof(x).sharding))(x)

    @example
    def par_propagation():
      arg0 = jax.device_put(np.arange(4).reshape(4, 1), P('X', None))
      arg1 = jax.device_put(np.arange(8).reshape(1, 8), P(None, 'Y'))
      @jax.jit
      def add_arrays(x, y):
        ans = x + y
        print(jax.typeof(x), jax.typeof(y), jax.typeof(ans))
        return ans
      return arg0 + arg1, add_arrays(arg0, arg1)

    @example
    def par_random_sum():
      r = jax.random.normal(jax.random.key(0), (8, 4), out_sharding=P('X', 'Y'))
      return r, r.sum(0)

    @example
    def par_dot_needs_out_sharding():
      a = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P(None, 'X'))
      b = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), P('X', None))
      try:
        jnp.dot(a, b)
      except Exception as e:
        print(type(e).__name__, e)
      return jnp.dot(a, b, out_sharding=P('X', None))

    @example
    def par_auto_axes():
      a = jax.device_put(np.arange(16).reshape(4, 4), P('X', None))
      b = jax.device_put(np.arange(16).reshape(4, 4), P(None, 'X'))
      try:
        a + b
      except Exception as e:
        print(type(e).__name__, e)
      @jax.sharding.auto_axes
      def add2(u, v):
        print(jax.sharding.get_abstract_mesh())
        return u + v
      return add2(a, b, out_sharding=P('X', None))

    @example
    def par_concrete_vs_type_sharding():
      def compare_shardings(v):
        print(jax.sharding.get_abstract_mesh(), v.sharding.spec, jax.typeof(v).sharding.spec)
      my_array = jnp.sin(jax.device_put(np.arange(8), P('X')))
      compare_shardings(my_array)
      @jax.sharding.auto_axes
      def check_in_auto_context(v):
        print(jax.sharding.get_abstract_mesh(), jax.typeof(v).sharding.spec)
        return v
      return check_in_auto_context(my_array, out_sharding=P('X'))

    @example
    def par_manual_matmul():
      a = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P(None, 'X'))
      b = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), P('X', None))
      @jax.shard_map(out_specs=P('X', None))
      def matmul(a_shard, b_shard):
        return jax.lax.psum_scatter(jnp.dot(a_shard, b_shard), 'X', tiled=True)
      z = matmul(a, b)
      return z, close(jnp.dot(a, b, out_sharding=P('X', None)), z)

  auto_mesh = jax.make_mesh((4, 2), ('X', 'Y'), (Auto, Auto))
  with jax.set_mesh(auto_mesh):
    @example
    def par_auto_mode():
      a = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P(None, 'X'))
      b = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), P('X', None))
      z = jnp.dot(a, b)   # not an error; the layout is the compiler's choice
      w = jax.jit(lambda u, v: jax.lax.with_sharding_constraint(jnp.dot(u, v), P('X', None)))(a, b)
      return np.asarray(z), w

    @example
    def par_explicit_axes():
      @jax.sharding.explicit_axes
      def explicit_g(y):
        print(jax.sharding.get_abstract_mesh(), jax.typeof(y))
        z = y * 2
        print(jax.typeof(z))
        return z
      @jax.jit
      def f(arr1):
        print(jax.sharding.get_abstract_mesh())
        return explicit_g(jnp.sin(arr1), in_sharding=P('X', 'Y')) + 1
      return f(jax.device_put(np.arange(16).reshape(4, 4), P('X', 'Y')))

  with jax.set_mesh(jax.make_mesh((4, 2), ('i', 'j'), (Auto, Auto))):
    @example
    def sm_out_specs_tile():
      v = jnp.array([[3.]])
      return [jax.shard_map(lambda: v, in_specs=(), out_specs=s)()
              for s in (P('i', 'j'), P('i', None), P(None, None))]

  mesh = jax.make_mesh((4, 2), ('x', 'y'))
  with jax.set_mesh(mesh):
    @example
    def sm_matmul_basic():
      a = jax.device_put(jnp.arange(8 * 16.).reshape(8, 16), P('x', 'y'))
      b = jax.device_put(jnp.arange(16 * 4.).reshape(16, 4), P('y', None))
      @jax.shard_map(in_specs=(P('x', 'y'), P('y', None)), out_specs=P('x', None))
      def matmul_basic(a_block, b_block):
        print(a_block.shape, b_block.shape)
        return jax.lax.psum(jnp.dot(a_block, b_block), 'y')
      c = matmul_basic(a, b)
      ref = jax.jit(lambda u, v: jnp.dot(u, v, out_sharding=P('x', None)))(a, b)
      jax.debug.visualize_array_sharding(c)
      return c, close(c, ref)

  with jax.set_mesh(Mesh(np.array(jax.devices()[:4]), ('i',))):
    @example
    def sm_rank_preserving():
      f = lambda x: x.T @ x
      y = jnp.arange(32).reshape(8, 4)
      ans = jax.shard_map(f, in_specs=P('i'), out_specs=P('i'))(y)
      return ans, close(ans, jnp.concatenate([f(b) for b in jnp.split(y, 4)]))

  mesh = jax.make_mesh((4, 2), ('i', 'j'))
  with jax.set_mesh(mesh):
    @example
    def sm_in_out_specs():
      @jax.shard_map(in_specs=P('i', None), out_specs=P('i', 'j'))
      def f1(x_block):
        print(x_block.shape)
        return x_block
      @jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i', 'j'))
      def f2(x_block):
        print(x_block.shape)
        return x_block
      x = jnp.arange(12 * 12).reshape(12, 12)
      y1 = f1(jax.device_put(x, P('i', None)))
      x2 = jax.device_put(x, P('i', 'j'))
      f3 = jax.shard_map(lambda b: jax.lax.psum(b, 'j'), in_specs=P('i', 'j'), out_specs=P('i', None))
      f4 = jax.shard_map(lambda b: jax.lax.psum(b, 'i'), in_specs=P('i', 'j'), out_specs=P(None, 'j'))
      f5 = jax.shard_map(lambda b: jax.lax.psum(b, ('i', 'j')), in_specs=P('i', 'j'),
                         out_specs=P(None, None))
      return y1, f2(x2), f3(x2), f4(x2), f5(x2)

    @example
    def sm_vma_types():
      @jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i'))
      def f(x):
        print(jax.typeof(x))
        y = jax.lax.psum(x, 'j')
        print(jax.typeof(y), jax.typeof(y).manual_axis_type.varying == {'i'})
        return y
      return f(jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P('i', 'j')))

  with jax.set_mesh(jax.make_mesh((2,), ('i',))):
    @example
    def sm_check_vma():
      x = jax.device_put(jnp.arange(6.), P('i'))
      @jax.shard_map(in_specs=P('i'), out_specs=P())
      def f(x):
        print(jax.typeof(x))
        y = jax.lax.psum(x, 'i')
        print(jax.typeof(y))
        return y
      try:
        jax.shard_map(lambda x: x, in_specs=P('i'), out_specs=P())(x)
      except Exception as e:
        print(type(e).__name__, str(e).split('\n')[0])
      @jax.shard_map(in_specs=P(), out_specs=None)
      def g(x):
        print(jax.typeof(x), jax.typeof(jax.lax.pcast(x, 'i', to='varying')))
      g(jnp.arange(6.))
      return f(x)

    @example
    def sm_scan_carry_vma():
      def swap(x, y):
        (x_, y_), _ = jax.lax.scan(lambda c, _: ((c[1], c[0]), ()), (x, y), (), length=2)
        return x_, y_
      bad = jax.shard_map(swap, in_specs=(P('i'), P()), out_specs=P('i'))
      good = jax.shard_map(lambda x, y: swap(x, jax.lax.pcast(y, 'i', to='varying')),
                           in_specs=(P('i'), P()), out_specs=P('i'))
      try:
        bad(jnp.arange(6.), jnp.arange(3.))
      except Exception as e:
        print(type(e).__name__, str(e)[:60])
      return good(jax.device_put(jnp.arange(6.), P('i')), jnp.arange(3.))

  mesh1d = Mesh(jax.devices()[:4], ('i',))
  mesh2d = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('i', 'j'))
  x16 = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])

  def psum_scatter(x, axis_name, *, tiled=False):   # the document's ppermute version
    size = jax.lax.axis_size(axis_name)
    idx = jax.lax.axis_index(axis_name)
    if tiled:
      x = x.reshape(size, -1, *x.shape[1:])
    shift = partial(jax.lax.ppermute, axis_name=axis_name,
                    perm=[(i, (i - 1) % size) for i in range(size)])
    for i in range(1, size):
      x = x.at[(idx + i + 1) % size].add(shift(x[(idx + i) % size]))
    return x[idx]

  with jax.set_mesh(mesh1d):
    @example
    def sm_collectives_tutorial():
      m1 = partial(jax.shard_map, mesh=mesh1d, in_specs=P('i'))
      m2 = partial(jax.shard_map, mesh=mesh2d, in_specs=P('i', 'j'))
      sz = 4
      with jax.set_mesh(mesh2d):
        y2 = [m2(lambda b: jax.lax.psum(b, 'i'), out_specs=P(None, 'j'))(jnp.arange(16).reshape(4, 4)),
              m2(lambda b: jax.lax.psum(b, ('i', 'j')), out_specs=P(None, None))(
                  jnp.arange(16).reshape(4, 4))]
      return y2 + [
        m1(lambda b: jax.lax.psum(b, 'i'), out_specs=P(None))(x16),
        m1(lambda b: jax.lax.all_gather(b, 'i', tiled=True), out_specs=P('i'))(jnp.array([3, 9, 5, 2])),
        m1(lambda b: jax.lax.all_gather(b, 'i', tiled=False), out_specs=P('i'))(jnp.array([3, 9, 5, 2])),
        m1(lambda b: jax.lax.psum_scatter(b, 'i', tiled=True), out_specs=P('i'))(x16),
        m1(lambda b: jax.lax.ppermute(b, 'i', [(i, (i + 1) % sz) for i in range(sz)]),
           out_specs=P('i'))(jnp.arange(8)),
        m1(lambda b: psum_scatter(b, 'i', tiled=True), out_specs=P('i'))(x16),
        m1(lambda b: jax.lax.all_to_all(b, 'i', split_axis=0, concat_axis=0, tiled=True),
           out_specs=P('i'))(x16)]

    @example
    def sm_matmul_examples():
      put = lambda v, s: jax.device_put(v, NamedSharding(mesh1d, s))
      lhs = put(jax.random.normal(jax.random.key(0), (8, 8)), P('i', None))
      rhs = put(jax.random.normal(jax.random.key(1), (8, 4)), P('i', None))
      @jax.jit
      @partial(jax.shard_map, in_specs=(P('i', None), P('i', None)), out_specs=P('i', None))
      def matmul_allgather_overlapped(lhs_block, rhs_block):
        size = jax.lax.axis_size('i')
        idx = jax.lax.axis_index('i')
        shift = partial(jax.lax.ppermute, axis_name='i',
                        perm=[(i, (i + 1) % size) for i in range(size)])
        B = lhs_block.shape[1] // size
        blk = lambda i: lax.dynamic_slice_in_dim(lhs_block, i * B, B, 1)
        out_block = blk(idx) @ rhs_block
        for i in range(1, size):
          rhs_block = shift(rhs_block)
          out_block += blk((idx - i) % size) @ rhs_block
        return out_block
      out1 = matmul_allgather_overlapped(lhs, rhs)
      lhs2 = put(lhs, P(None, 'i'))
      @partial(jax.shard_map, in_specs=(P(None, 'i'), P('i', None)), out_specs=P('i', None))
      def matmul_psumscatter(lhs_block, rhs_block):
        return jax.lax.psum_scatter(lhs_block @ rhs_block, 'i', tiled=True)
      out2 = matmul_psumscatter(lhs2, rhs)
      ref = np.asarray(lhs) @ np.asarray(rhs)
      return out1, out2, close(out1, ref), close(out2, ref)

  with jax.set_mesh(jax.make_mesh((8,), ('batch',))):
    @example
    def sm_data_parallel_loss():
      def predict(params, inputs):
        for W, b in params:
          outputs = jnp.dot(inputs, W) + b
          inputs = jax.nn.relu(outputs)
        return outputs
      def loss(params, batch):
        inputs, targets = batch
        return jnp.mean(jnp.sum((predict(params, inputs) - targets) ** 2, axis=-1))
      keys = jax.random.split(jax.random.key(0), 4)
      sizes = [16, 8, 4]
      params = [(jax.random.normal(k, (m, n)) / np.sqrt(m), jnp.zeros(n))
                for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
      batch = (jax.random.normal(keys[2], (32, 16)), jax.random.normal(keys[3], (32, 4)))
      batch = jax.device_put(batch, P('batch'))
      params = jax.device_put(params, P())
      @jax.shard_map(out_specs=P())
      def loss_dp(params, local_batch):
        return jax.lax.pmean(loss(params, local_batch), 'batch')
      a, b = jax.jit(loss)(params, batch), jax.jit(loss_dp)(params, batch)
      example(lambda: close(jax.grad(loss)(params, batch),
                            jax.jit(jax.grad(loss_dp))(params, batch)), 'sm_data_parallel_grad')
      return a, b, close(a, b)
  return res
'''


_DEVICE_FACTS = ", device_kind=cpu, num_cores=None, platform=cpu"
_KNOWN = {
    "par_abstract_mesh_in_jit": "no jax.sharding.use_abstract_mesh",
    "par_unreduced": "unreduced axes are not modelled: every shard holds its part",
    "par_typeof_sharding": "typeof(x).sharding is the concrete NamedSharding, not one over "
                           "the AbstractMesh",
    "par_concrete_vs_type_sharding": "under auto_axes the type still shows the Auto axes",
    "par_explicit_axes": "explicit_axes(in_sharding=) does not give the values that type",
    "sm_vma_types": "no varying-manual-axes types ({V:i}, manual_axis_type)",
    "sm_check_vma": "no varying-manual-axes types: jax.typeof shows no {V:i}",
}


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_DOC + "\nout.update(doc_examples(jax, jnp, np))\n")


@pytest.fixture(scope="module")
def ours():
  ns = {}
  exec(_DOC, ns)
  return ns["doc_examples"](pyjax, jnp, np)


def _strip(x):
  return x.replace(_DEVICE_FACTS, "") if isinstance(x, str) else x


def _diffs(got, want, path=""):
  if isinstance(got, np.ndarray) or isinstance(want, np.ndarray):
    ok = (np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
          and np.allclose(got, want, rtol=1e-5, atol=1e-5))
    return [] if ok else [f"{path}: values {got!r} != {want!r}"]
  if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)) and len(got) == len(want):
    return [d for i, (g, w) in enumerate(zip(got, want)) for d in _diffs(g, w, f"{path}[{i}]")]
  return [] if got == _strip(want) else [f"{path}: {got!r} != {_strip(want)!r}"]


def _arrays(r):
  return [v for v in pyjax.tree.leaves(r) if isinstance(v, np.ndarray)]


_NAMES = ["par_quick_example", "par_abstract_mesh_in_jit", "par_device_put_specs",
          "par_unreduced", "par_other_mesh", "par_typeof_sharding", "par_propagation",
          "par_random_sum", "par_dot_needs_out_sharding", "par_auto_axes",
          "par_concrete_vs_type_sharding", "par_manual_matmul", "par_auto_mode",
          "par_explicit_axes", "sm_out_specs_tile", "sm_matmul_basic", "sm_rank_preserving",
          "sm_in_out_specs", "sm_vma_types", "sm_check_vma", "sm_scan_carry_vma",
          "sm_collectives_tutorial", "sm_matmul_examples", "sm_data_parallel_loss",
          "sm_data_parallel_grad"]


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_KNOWN[n])) if n in _KNOWN
    else n for n in _NAMES])
def test_doc_example_matches_jax(oracle, ours, name):
  assert name in oracle and oracle[name][0] != "error", oracle.get(name)
  assert _diffs(ours[name], oracle[name]) == []


@pytest.mark.parametrize("name", sorted(set(_KNOWN) - {"par_unreduced"}))
def test_known_difference_keeps_values(oracle, ours, name):
  # where pyjax runs the example, its values equal JAX's even where types or prints differ
  if ours[name][0] == "error":
    pytest.skip(f"pyjax raises: {ours[name][2]}")
  got, want = _arrays(ours[name][0]), _arrays(oracle[name][0])
  assert len(got) == len(want)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
