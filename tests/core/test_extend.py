"""jax.core / jax.extend / jax.interpreters / jax.api_util / jax.sharding on pyjax.

The centrepiece: a user-defined primitive (``def_impl``, ``def_abstract_eval``,
``ad.defjvp``, a batching rule) works eagerly and under ``jit``, ``grad`` and ``vmap``
(and their compositions), on the NumPy tier and natively compiled.
"""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import api_util, core as jcore
from pyjax.extend import core as xcore
from pyjax.extend import linear_util as lu
from pyjax.interpreters import ad, batching, mlir, partial_eval as pe
from pyjax.sharding import (Mesh, NamedSharding, PartitionSpec as P, Sharding,
                            SingleDeviceSharding)


# --- a user primitive -----------------------------------------------------------------------
def _make_sin_prim(name):
  p = xcore.Primitive(name)
  p.def_impl(lambda x: jnp.sin(x))
  p.def_abstract_eval(lambda x: jcore.ShapedArray(x.shape, x.dtype))
  ad.defjvp(p, lambda g, x: g * jnp.cos(x))

  def batch(args, dims):
    (x,), (d,) = args, dims
    return p.bind(x), d
  batching.primitive_batchers[p] = batch
  return p


my_sin_p = _make_sin_prim("my_sin")


def my_sin(x):
  return my_sin_p.bind(x)


X = np.array([0.0, 0.5, 1.0, 2.0], np.float32)
XB = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def test_user_primitive_eager_jit_grad_vmap():
  np.testing.assert_allclose(my_sin(X), np.sin(X), rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(my_sin)(X), np.sin(X), rtol=1e-6)
  g = pyjax.grad(lambda x: my_sin(x).sum())(X)
  np.testing.assert_allclose(g, np.cos(X), rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(pyjax.grad(lambda x: my_sin(x).sum()))(X), np.cos(X),
                             rtol=1e-6)
  np.testing.assert_allclose(pyjax.vmap(my_sin)(XB), np.sin(XB), rtol=1e-6)
  np.testing.assert_allclose(pyjax.vmap(my_sin, in_axes=1, out_axes=1)(XB), np.sin(XB),
                             rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(pyjax.vmap(pyjax.grad(lambda x: my_sin(x) * 2.0)))(X),
                             2 * np.cos(X), rtol=1e-6)
  # second derivative: the JVP rule is itself differentiable (cos is a lax primitive)
  np.testing.assert_allclose(pyjax.grad(pyjax.grad(lambda x: my_sin(x)))(0.3),
                             -np.sin(np.float32(0.3)), rtol=1e-6)
  assert "my_sin" in str(pyjax.make_jaxpr(my_sin)(X))
  y = my_sin(X)
  assert y.dtype == np.float32 and y.shape == (4,)


def test_user_primitive_matches_real_jax():
  jax = pytest.importorskip("jax")
  from jax.extend import core as jxcore
  from jax.interpreters import ad as jad, batching as jbatching, mlir as jmlir
  p = jxcore.Primitive("my_sin_ref")
  p.def_impl(lambda x: jax.numpy.sin(x))
  p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
  jmlir.register_lowering(p, jmlir.lower_fun(lambda x: jax.numpy.sin(x),
                                             multiple_results=False))
  jad.defjvp(p, lambda g, x: g * jax.numpy.cos(x))
  jbatching.primitive_batchers[p] = lambda args, dims: (p.bind(args[0]), dims[0])
  f_jax = jax.jit(jax.vmap(jax.grad(lambda x: (p.bind(x) ** 2).sum())))
  f_pj = pyjax.jit(pyjax.vmap(pyjax.grad(lambda x: (my_sin(x) ** 2).sum())))
  np.testing.assert_allclose(f_pj(XB), f_jax(XB), rtol=1e-6)


def test_user_primitive_natively_compiled():
  code = textwrap.dedent("""
      import numpy as np
      import pyjax, pyjax.numpy as jnp
      from pyjax.extend import core as xcore
      from pyjax.interpreters import ad, batching
      p = xcore.Primitive("my_sin")
      p.def_impl(lambda x: jnp.sin(x))
      p.def_abstract_eval(lambda x: pyjax.core.ShapedArray(x.shape, x.dtype))
      ad.defjvp(p, lambda g, x: g * jnp.cos(x))
      batching.primitive_batchers[p] = lambda a, d: (p.bind(a[0]), d[0])
      x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
      f = pyjax.jit(lambda x: pyjax.vmap(pyjax.grad(lambda r: (p.bind(r) * jnp.exp(r)).sum()))(x) + 1.0)
      want = np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x) + 1.0
      np.testing.assert_allclose(f(x), want, rtol=1e-5)
      np.testing.assert_allclose(f(x), want, rtol=1e-5)
      print("OK")
  """)
  env = dict(os.environ, PYJAX_COMPILE="sync")
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=env, timeout=120)
  assert proc.stdout.strip().endswith("OK"), proc.stderr[-3000:]


def test_primitive_defined_by_lowering_only():
  p = xcore.Primitive("lowered_double")
  p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(p, mlir.lower_fun(lambda x: x * 2, multiple_results=False))
  np.testing.assert_allclose(p.bind(X), 2 * X)
  np.testing.assert_allclose(pyjax.jit(lambda x: p.bind(x) + 1)(X), 2 * X + 1)
  # a rule registered for another platform only is recorded, not used on the CPU
  q = xcore.Primitive("gpu_only")
  q.def_abstract_eval(lambda x: x)
  mlir.register_lowering(q, mlir.lower_fun(lambda x: x, multiple_results=False),
                         platform="cuda")
  assert q.impl is None
  assert mlir._platform_specific_lowerings["cuda"][q] is not None


def test_multiple_results_primitive_with_old_style_batcher_and_transpose():
  p = xcore.Primitive("scale_pair")
  p.multiple_results = True
  p.def_impl(lambda x, y, *, k: [x * k, y * k])
  p.def_abstract_eval(lambda x, y, *, k: [x, y])

  def transpose(cts, x, y, *, k):
    cx, cy = cts
    return [None if type(cx) is ad.Zero else cx * k, None if type(cy) is ad.Zero else cy * k]
  ad.deflinear2(p, transpose)
  seen = []

  def batch_rule(axis_size, axis_name, trace_type, args, dims, *, k):
    seen.append(axis_size)
    x, y = (batching.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (axis_size,) + a.shape)
            for a, d in zip(args, dims))
    return p.bind(x, y, k=k), (0, 0)
  batching.axis_primitive_batchers[p] = batch_rule

  f = lambda x, y: sum(o.sum() for o in p.bind(x, y, k=3.0))
  gx, gy = pyjax.grad(f, argnums=(0, 1))(X, X)
  np.testing.assert_allclose(gx, np.full(4, 3.0))
  np.testing.assert_allclose(gy, np.full(4, 3.0))
  out = pyjax.vmap(lambda x: p.bind(x, x, k=2.0), in_axes=0)(XB)
  np.testing.assert_allclose(out[0], 2 * XB)
  assert seen == [3]
  assert batching.axis_primitive_batchers[p] is batch_rule


def test_defbilinear_and_get_primitive_transpose():
  p = xcore.Primitive("my_mul")
  p.def_impl(lambda x, y: x * y)
  p.def_abstract_eval(lambda x, y: x)
  ad.defbilinear(p, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
  gx, gy = pyjax.grad(lambda x, y: p.bind(x, y).sum(), argnums=(0, 1))(X, 2 * X)
  np.testing.assert_allclose(gx, 2 * X)
  np.testing.assert_allclose(gy, X)
  assert ad.get_primitive_transpose(p) is ad.primitive_transposes[p]
  with pytest.raises(NotImplementedError, match="Transpose rule .* for 'my_sin' not implemented"):
    ad.get_primitive_transpose(my_sin_p)


# --- jax.core / jax.extend.core names -------------------------------------------------------
def test_core_public_deprecated_and_removed_names():
  assert jcore.ShapedArray is type(jnp.asarray(X).aval)
  assert isinstance(jcore.ShapedArray((2,), np.dtype("float32")), jcore.AbstractValue)
  with pytest.warns(DeprecationWarning, match="jax.extend.core.valid_jaxtype"):
    vj = jcore.valid_jaxtype
  assert vj(1.0) and vj(X) and not vj("a string")
  with pytest.raises(AttributeError, match="use jax.typeof instead"):
    jcore.get_aval  # noqa: B018
  with pytest.raises(AttributeError, match="jax.extend.core.mapped_aval"):
    jcore.mapped_aval  # noqa: B018
  with pytest.raises(AttributeError, match="has no attribute 'nope'"):
    jcore.nope  # noqa: B018


def test_core_names_match_real_jax():
  jax = pytest.importorskip("jax")
  import jax.core as jc
  import jax.extend.core as jxc
  public = {n for n in dir(jc) if not n.startswith("_")}
  assert public <= {n for n in dir(jcore) if not n.startswith("_")} | {"deprecations"}
  missing = {n for n in dir(jxc) if not n.startswith("_")} - set(dir(xcore))
  # pyjax has no call primitives, trace tags or symbolic-shape helpers
  assert missing <= {"CallPrimitive", "TraceTag", "call_impl"}, missing
  del jax


def test_effect_subclass_without_arguments():
  class MyEffect(xcore.Effect):
    pass
  e = MyEffect()
  assert repr(e) == "MyEffect" and isinstance(e, xcore.Effect)


def test_mapped_unmapped_aval_and_jaxpr_helpers():
  a = jcore.ShapedArray((3, 4), np.dtype("float32"))
  assert xcore.mapped_aval(3, 0, a).shape == (4,)
  assert xcore.mapped_aval(4, 1, a).shape == (3,)
  assert xcore.mapped_aval(3, None, a) is a
  assert xcore.unmapped_aval(5, 1, a).shape == (3, 5, 4)
  with pytest.raises(ValueError):
    xcore.mapped_aval(7, 0, a)
  closed = pyjax.make_jaxpr(lambda x: pyjax.jit(jnp.sin)(x) * 2)(X)
  assert isinstance(closed, xcore.ClosedJaxpr)
  subs = list(xcore.subjaxprs(closed.jaxpr))
  assert len(subs) == 1 and subs[0].eqns[0].primitive.name == "sin"
  xcore.check_jaxpr(closed.jaxpr)
  v = xcore.Var(a)
  bad = closed.jaxpr.replace(outvars=[v])
  with pytest.raises(xcore.JaxprTypeError, match="not defined"):
    xcore.check_jaxpr(bad)
  np.testing.assert_allclose(xcore.jaxpr_as_fun(closed)(X)[0], 2 * np.sin(X), rtol=1e-6)
  eqn = xcore.new_jaxpr_eqn([v], [xcore.Var(a)], xcore.primitives.sin_p, {}, xcore.no_effects)
  assert eqn.primitive is xcore.primitives.sin_p
  assert xcore.primitives.add_p is pyjax.lax.add_p
  assert xcore.primal_dtype_to_tangent_dtype(np.dtype("int32")) == pyjax.dtypes.float0
  assert xcore.primal_dtype_to_tangent_dtype(np.dtype("float32")) == np.float32


def test_trace_state():
  s0 = xcore.get_opaque_trace_state()
  states = []

  def f(x):
    states.append(xcore.get_opaque_trace_state())
    states.append(xcore.find_top_trace(()))
    return x
  pyjax.jit(f)(X)
  assert states[0] != s0 and xcore.get_opaque_trace_state() == s0
  assert isinstance(states[1], jcore.Trace)

  def g(x):
    assert isinstance(x, ad.JVPTracer)
    assert x._trace.main is xcore.find_top_trace((x,)).main
    return x * 2
  pyjax.jvp(g, (X,), (X,))


# --- linear_util / api_util / partial_eval ----------------------------------------------------
def test_flatten_fun_and_wrap_init():
  def f(a, b, *, c):
    return {"s": a["x"] + b, "c": c}
  args, kwargs = ({"x": 1.0}, 2.0), {"c": 3.0}
  flat, in_tree = pyjax.tree_util.tree_flatten((args, kwargs))
  dbg = api_util.debug_info("test", f, args, kwargs)
  wf, out_tree = api_util.flatten_fun(lu.wrap_init(f, debug_info=dbg), in_tree)
  out = wf.call_wrapped(*flat)
  assert pyjax.tree_util.tree_unflatten(out_tree(), out) == {"s": 3.0, "c": 3.0}
  g, out_tree2 = api_util.flatten_fun_nokwargs(lu.wrap_init(lambda x, y: (x * y, x)),
                                               pyjax.tree_util.tree_structure((1, 2)))
  assert g.call_wrapped(3, 4) == [12, 3] and out_tree2().num_leaves == 2
  assert api_util.safe_map(lambda a, b: a + b, [1, 2], [3, 4]) == [4, 6]
  with pytest.raises(ValueError):
    api_util.safe_map(lambda a, b: a, [1], [1, 2])
  fd, dyn = api_util.argnums_partial(lu.wrap_init(lambda a, b, c: a * 100 + b * 10 + c), (0, 2),
                                     (1, 2, 3))
  assert dyn == (1, 3) and fd.call_wrapped(5, 6) == 526


def test_old_style_transformation():
  @lu.transformation
  def add_one(*args):
    ans = yield args, {}
    yield ans + 1
  assert add_one(lu.wrap_init(lambda x: x * 2)).call_wrapped(5) == 11


def test_partial_eval_known_and_unknown():
  calls = []

  def f(x, y):
    calls.append(1)
    return jnp.sin(x) * 2, jnp.cos(x) + y, x + 1.0
  fun = lu.wrap_init(f)
  pvals = [pe.PartialVal.known(jnp.asarray(X)),
           pe.PartialVal.unknown(jcore.ShapedArray((4,), np.dtype("float32")))]
  jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(fun, pvals)
  assert out_pvals[0].is_known() and not out_pvals[1].is_known() and out_pvals[2].is_known()
  np.testing.assert_allclose(out_pvals[0].get_known(), 2 * np.sin(X), rtol=1e-6)
  assert out_pvals[1][0].shape == (4,)
  # the staged part computes cos(x) + y with cos(x) a known constant
  assert [e.primitive.name for e in jaxpr.eqns] == ["add"]
  out = pyjax.core.eval_jaxpr(jaxpr, consts, jnp.ones(4))
  np.testing.assert_allclose(out[0], np.cos(X) + 1, rtol=1e-6)
  j2, avals, c2 = pe.trace_to_jaxpr_dynamic(lu.wrap_init(lambda x: [x * 2]),
                                            [jcore.ShapedArray((2,), np.dtype("float32"))])
  assert avals[0].shape == (2,) and len(j2.eqns) == 1
  dce, used = pe.dce_jaxpr(jaxpr, [False])
  assert not dce.eqns and used == [False]


# --- traceback / source info ---------------------------------------------------------------
def test_traceback_api_boundary_filters_pyjax_frames():
  from pyjax._src import traceback_util

  @traceback_util.api_boundary
  def entry(x):
    return pyjax.jit(lambda v: v.reshape(5))(x)
  with pytest.raises(TypeError) as info:
    entry(X)
  files = [str(f.path) for f in info.traceback]
  # only the boundary's own re-raise frame remains of pyjax's
  inner = [f for f in files[1:] if os.sep + "pyjax" + os.sep + "_src" + os.sep in f]
  assert all(f.endswith("traceback_util.py") for f in inner), inner


def test_source_info_register_exclusion(tmp_path):
  from pyjax._src import source_info_util
  mod = tmp_path / "mylib_h5.py"
  mod.write_text("import pyjax.numpy as jnp\ndef lib_sin(x):\n  return jnp.sin(x)\n")
  sys.path.insert(0, str(tmp_path))
  try:
    import mylib_h5
    def user(x):
      return mylib_h5.lib_sin(x)
    eqn = pyjax.make_jaxpr(user)(X).jaxpr.eqns[0]
    assert "mylib_h5" in source_info_util.summarize(eqn.source_info)
    source_info_util.register_exclusion(str(tmp_path))
    eqn = pyjax.make_jaxpr(user)(X).jaxpr.eqns[0]
    assert "test_extend" in source_info_util.summarize(eqn.source_info)
  finally:
    sys.path.remove(str(tmp_path))
    from pyjax._src import core as _core
    _core._source_exclusions = tuple(p for p in _core._source_exclusions
                                     if p != str(tmp_path))


# --- sharding -----------------------------------------------------------------------------
def test_partition_spec_and_named_sharding():
  assert P("x", None) == ("x", None) and P(("x",)) == P("x") and len(P("x", "y")) == 2
  assert repr(P("x", None)) == "P('x', None)" and repr(P("x")) == "P('x',)"
  with pytest.raises(ValueError):
    P("x", "x")
  dev = pyjax.devices()[0]
  mesh = Mesh(np.array([dev]).reshape(1, 1), ("a", "b"))
  s = NamedSharding(mesh, P("a", None))
  assert s.shard_shape((4, 6)) == (4, 6) and s.is_fully_replicated
  assert s.devices_indices_map((4, 6)) == {dev: (slice(0, 4), slice(None))}
  assert s.addressable_devices == {dev} and s == NamedSharding(mesh, P("a"))
  with pytest.raises(ValueError, match="not found in mesh"):
    NamedSharding(mesh, P("z"))
  with pytest.raises(ValueError, match="only valid for values of rank at least 2"):
    pyjax.device_put({"w": X}, s)   # (X is 1-d; as JAX)
  y = pyjax.device_put({"w": X}, NamedSharding(mesh, P("a")))
  np.testing.assert_array_equal(y["w"], X)
  assert y["w"].sharding == NamedSharding(mesh, P("a"))   # kept on one device, as JAX
  sd = jnp.asarray(X).sharding
  assert isinstance(sd, SingleDeviceSharding) and isinstance(sd, Sharding)
  assert sd.shard_shape((4,)) == (4,) and sd.addressable_devices == {dev}
  with mesh:
    assert pyjax.sharding.get_abstract_mesh().axis_names == ("a", "b")
  assert pyjax.sharding.get_abstract_mesh().empty


def test_sharding_matches_real_jax():
  jax = pytest.importorskip("jax")
  js = jax.sharding
  for spec in [("x", None), (("x", "y"),), (None,), ()]:
    assert repr(P(*spec)) == repr(js.PartitionSpec(*spec))
  dev = jax.devices()[0]
  jm = js.Mesh(np.array([dev]), ("x",))
  pm = Mesh(np.array([pyjax.devices()[0]]), ("x",))
  for spec in [P("x"), P(None, "x"), P()]:
    jspec = js.PartitionSpec(*spec)
    assert (NamedSharding(pm, spec).shard_shape((2, 3))
            == js.NamedSharding(jm, jspec).shard_shape((2, 3)))
    assert (NamedSharding(pm, spec).is_fully_replicated
            == js.NamedSharding(jm, jspec).is_fully_replicated)


def test_pmap_single_device():
  out = pyjax.pmap(lambda x: x * 2 + pyjax.lax.psum(x, "i"), axis_name="i")(X[None])
  np.testing.assert_allclose(out, (3 * X)[None])
  n = len(pyjax.devices()) + 1   # 1 alone; 8 when a multi-device test module came first
  with pytest.raises(ValueError, match=f"requires {n} logical devices"):
    pyjax.pmap(lambda x: x)(np.ones((n, 3), np.float32))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert pyjax.core.Trace is not None
