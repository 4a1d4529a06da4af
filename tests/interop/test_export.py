"""jax.export: Exported, pyjax's serialization of jaxprs, calling deserialized programs."""
import collections
import struct

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import export, lax


def _leaves(x):
  return pyjax.tree_util.tree_leaves(x)


def _assert_same(a, b):
  la, lb = _leaves(a), _leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    assert x.dtype == y.dtype and x.shape == y.shape
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


_PROGRAMS = {
    "matmul": lambda x: jnp.sin(x) @ x.T + jnp.sum(x, 0),
    "indexing": lambda x: x[jnp.arange(4) % 2, 1:3].sum() + x.at[jnp.arange(4)].set(1.).sum(),
    "fori": lambda x: lax.fori_loop(0, 3, lambda k, c: c * 2 + k, x),
    "while": lambda x: lax.while_loop(lambda c: c[0, 0] < 10, lambda c: c + 1, x),
    "scan": lambda x: lax.scan(lambda c, y: (c + y, c * y), x[0], x),
    "cond": lambda x: lax.cond(x[0, 0] > 0, jnp.sin, jnp.cos, x),
    "switch": lambda x: lax.switch(1, [jnp.sin, jnp.cos, jnp.tan], x),
    "sort": lambda x: jnp.sort(x, axis=0) + jnp.argsort(x, axis=1) + jnp.cumsum(x, 0),
    "conv": lambda x: lax.conv_general_dilated(x[None, None], x[None, None], (1, 1), "SAME"),
    "random": lambda x: pyjax.random.normal(pyjax.random.key(0), (3,)) + x[0, :3],
    "fft": lambda x: jnp.fft.fft(x).real,
    "remat": lambda x: pyjax.checkpoint(jnp.sin)(x),
    "nested_jit": lambda x: pyjax.jit(jnp.cos)(x).astype(jnp.bfloat16).astype(jnp.float32),
    "precision": lambda x: jnp.einsum("ij,jk->ik", x, x, precision=lax.Precision.HIGHEST),
    "round_ints": lambda x: (jnp.where(x > 0.5, x, 0).astype(jnp.int8).astype(jnp.float32)
                             + jnp.round(x) + lax.rem(x, 2.)),
    "grad": lambda x: pyjax.grad(lambda y: jnp.sum(jnp.tanh(y) ** 2))(x),
    "reductions": lambda x: (jnp.argmax(x, 0), jnp.max(x), lax.top_k(x, 2)[0]),
    "constants": lambda x: x + np.arange(16, dtype=np.float32).reshape(4, 4),
    "custom_jvp": lambda x: pyjax.nn.relu(x) + pyjax.nn.softplus(x) + pyjax.nn.gelu(x),
}
_CUSTOM_RULES = {"custom_jvp"}


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_round_trip(name):
  f = pyjax.jit(_PROGRAMS[name])
  x = jnp.asarray(np.random.RandomState(0).rand(4, 4).astype(np.float32))
  exp = export.export(f)(x)
  blob = exp.serialize()
  assert isinstance(blob, bytearray) and bytes(blob[:8]) == b"PYJAXEXP"
  back = export.deserialize(blob)
  if name not in _CUSTOM_RULES:
    assert str(back.jaxpr) == str(exp.jaxpr)       # the same program, printed alike
  else:   # custom rules are not serialized: their primal computation is a jit call
    assert "custom_jvp_call" in str(exp.jaxpr) and "custom_jvp_call" not in str(back.jaxpr)
  _assert_same(back.call(x), f(x))
  _assert_same(exp.call(x), f(x))
  assert back.serialize() == blob                   # deterministic, stable encoding
  for attr in ("fun_name", "in_tree", "out_tree", "in_avals", "out_avals", "platforms"):
    assert getattr(back, attr) == getattr(exp, attr)


def test_exported_attributes_match_jax():
  jax = pytest.importorskip("jax")

  def make(np_mod):
    def f(x, y):
      return {"a": np_mod.sin(x) @ y, "b": (x.sum(), np_mod.cumsum(y, 0))}
    return f
  f, jf = make(jnp), make(jax.numpy)
  y = np.arange(8.0, dtype=np.float32).reshape(4, 2)
  ours = export.export(pyjax.jit(f))(pyjax.ShapeDtypeStruct((3, 4), jnp.float32), y)
  theirs = jax.export.export(jax.jit(jf))(jax.ShapeDtypeStruct((3, 4), np.float32), y)
  assert ours.fun_name == theirs.fun_name == "f"
  assert str(ours.in_tree) == str(theirs.in_tree)
  assert str(ours.out_tree) == str(theirs.out_tree)
  assert [str(a) for a in ours.in_avals] == [str(a) for a in theirs.in_avals]
  assert [str(a) for a in ours.out_avals] == [str(a) for a in theirs.out_avals]
  assert ours.platforms == theirs.platforms == ("cpu",)
  x = np.random.RandomState(1).rand(3, 4).astype(np.float32)
  a, b = export.deserialize(ours.serialize()).call(x, y), theirs.call(x, y)
  for p, q in zip(_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=1e-5, atol=1e-5)


def test_call_under_transformations():
  f = pyjax.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=-1))
  w = jnp.asarray(np.random.RandomState(2).randn(3, 2).astype(np.float32))
  x = jnp.ones((4, 3), jnp.float32)
  e = export.deserialize(export.export(f)(x, w).serialize())
  _assert_same(pyjax.jit(e.call)(x, w), f(x, w))
  g1 = pyjax.grad(lambda w: e.call(x, w).sum())(w)
  g2 = pyjax.grad(lambda w: f(x, w).sum())(w)
  np.testing.assert_allclose(g1, g2, rtol=1e-6)
  xs = jnp.asarray(np.random.RandomState(3).randn(5, 4, 3).astype(np.float32))
  np.testing.assert_allclose(pyjax.vmap(lambda x: e.call(x, w))(xs),
                             pyjax.vmap(lambda x: f(x, w))(xs), rtol=1e-6)
  # inside jit the exported program is one nested jit equation
  text = str(pyjax.make_jaxpr(e.call)(x, w))
  assert "jit[" in text and "name=<lambda>" in text


def test_static_args_and_kwargs():
  f = pyjax.jit(lambda x, n, *, scale: x * n * scale, static_argnums=1)
  e = export.deserialize(export.export(f)(jnp.ones(3), 4, scale=2.0).serialize())
  assert str(e.in_tree) == "PyTreeDef(((*,), {'scale': *}))"
  np.testing.assert_array_equal(e.call(jnp.ones(3), scale=3.0), [12.0, 12.0, 12.0])


def test_call_errors_match_jax():
  f = pyjax.jit(lambda x, y: x.sum() + y.sum())
  e = export.export(f)(pyjax.ShapeDtypeStruct((3, 4), jnp.float32), jnp.ones((4, 2)))
  with pytest.raises(ValueError, match=r"^Shape mismatch for args\[0\].shape\[1\] \(expected "
                     r"same constant\): expected \(3, 4\) and called with \(3, 5\)$"):
    e.call(jnp.ones((3, 5)), jnp.ones((4, 2)))
  with pytest.raises(ValueError, match=r"^Rank mismatch for args\[0\]: expected \(3, 4\) and "
                     r"called with \(3, 4, 1\)$"):
    e.call(jnp.ones((3, 4, 1)), jnp.ones((4, 2)))
  with pytest.raises(ValueError, match=r"^Dtype mismatch for args\[1\]: expected float32 and "
                     r"called with int32$"):
    e.call(jnp.ones((3, 4)), jnp.ones((4, 2), jnp.int32))
  with pytest.raises(ValueError, match="must have the same pytree structure as when the "
                     "function '<lambda>' was exported"):
    e.call(jnp.ones((3, 4)), y=jnp.ones((4, 2)))
  with pytest.raises(ValueError, match="Function to be exported must be the result of `jit`"):
    export.export(lambda x: x)(1.0)


def test_platforms():
  e = export.export(pyjax.jit(lambda x: x * 2), platforms=["tpu"])(1.0)
  with pytest.raises(ValueError, match=r"^Function '<lambda>' was exported for platforms "
                     r"'\('tpu',\)' but it is used on '\('cpu',\)'.$"):
    e.call(1.0)
  ok = export.export(pyjax.jit(lambda x: x * 2), platforms=["tpu", "cpu"])(1.0)
  assert export.deserialize(ok.serialize()).platforms == ("tpu", "cpu")
  assert float(ok.call(2.0)) == 4.0
  chk = export.DisabledSafetyCheck.platform()
  e2 = export.export(pyjax.jit(lambda x: x * 2), platforms=["tpu"], disabled_checks=[chk])(1.0)
  e2 = export.deserialize(e2.serialize())
  assert e2.disabled_safety_checks == (chk,)
  assert float(e2.call(3.0)) == 6.0
  assert export.DisabledSafetyCheck.custom_call("foo").is_custom_call() == "foo"
  assert export.default_export_platform() == "cpu"


def _blob():
  return export.export(pyjax.jit(lambda x: jnp.exp(x) + 1))(jnp.ones(3)).serialize()


def test_corrupt_blobs_raise_value_error():
  blob = bytes(_blob())
  with pytest.raises(ValueError, match="bad magic"):
    export.deserialize(b"NOTPYJAX" + blob[8:])
  with pytest.raises(ValueError, match="bad magic"):
    export.deserialize(b"")
  bad_version = blob[:8] + struct.pack("<H", 99) + blob[10:]
  with pytest.raises(ValueError, match="format version 99 is not supported"):
    export.deserialize(bad_version)
  for n in (5, 12, len(blob) // 2, len(blob) - 1):
    with pytest.raises(ValueError, match="truncated"):
      export.deserialize(blob[:n])
  flipped = bytearray(blob)
  flipped[len(blob) // 2] ^= 0x40
  with pytest.raises(ValueError, match="checksum"):
    export.deserialize(bytes(flipped))
  with pytest.raises(ValueError, match="trailing bytes"):
    export.deserialize(blob + b"\0")
  with pytest.raises(ValueError):
    export.deserialize(12345)


def test_forged_program_is_rejected():
  """A well-formed blob whose equation does not type-check is refused."""
  from pyjax._src.export import serialization as ser
  e = export.export(pyjax.jit(lambda x: x + 1.0))(jnp.ones(3))
  payload = dict(fun_name="f", in_tree=e.in_tree, out_tree=e.out_tree, in_avals=e.in_avals,
                 out_avals=e.out_avals, platforms=("cpu",), jaxpr=e.jaxpr)
  good = ser.to_bytes(payload)
  export.deserialize(good)
  # record the add's output as int32: its abstract evaluation disagrees
  w = ser._Writer()
  ser.encode(w, payload)
  body = bytes(w.out)
  f32 = b"\x07float32"
  i = body.rindex(f32)    # the jaxpr's last variable definition: the add's output
  forged = body[:i] + b"\x05int32" + body[i + len(f32):]
  blob = ser._HEADER.pack(ser.MAGIC, ser.FORMAT_VERSION, 0, len(forged)) + forged + \
      struct.pack("<I", __import__("zlib").crc32(forged))
  with pytest.raises(ValueError, match="recorded output types|does not match"):
    export.deserialize(blob)


def test_callables_rejected():
  f = pyjax.jit(lambda x: pyjax.pure_callback(np.sin, x, x, vmap_method="sequential"))
  e = export.export(f)(jnp.ones(3))
  np.testing.assert_allclose(e.call(jnp.ones(3)), np.sin(np.ones(3)), rtol=1e-6)
  with pytest.raises(ValueError, match="Cannot serialize parameter 'callback' of primitive "
                     "'pure_callback': it is a Python callable"):
    e.serialize()


def test_effects_round_trip(capsys):
  def f(x):
    pyjax.debug.print("x={}", x)
    return x * 2
  e = export.deserialize(export.export(pyjax.jit(f))(jnp.arange(3.0)).serialize())
  assert [str(x) for x in e.unordered_effects] == ["Debug"]
  out = e.call(jnp.arange(3.0))
  pyjax.effects_barrier()
  np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
  assert "x=[0. 1. 2.]" in capsys.readouterr().out


Point = collections.namedtuple("Point", ["x", "y"])


def test_pytree_node_serialization():
  f = pyjax.jit(lambda p: Point(p.y, p.x * 2))
  e = export.export(f)(Point(jnp.ones(2), jnp.zeros(3)))
  with pytest.raises(ValueError, match="is not registered for serialization"):
    e.serialize()
  export.register_namedtuple_serialization(Point, serialized_name="test_export.Point")
  with pytest.raises(ValueError, match="Duplicate serialization registration"):
    export.register_namedtuple_serialization(Point, serialized_name="other")
  back = export.deserialize(e.serialize())
  out = back.call(Point(jnp.ones(2), jnp.zeros(3)))
  assert type(out) is Point
  np.testing.assert_array_equal(out.y, [2.0, 2.0])


def test_dtypes_and_literals():
  def f(x, i, b):
    y = x.astype(jnp.bfloat16) * jnp.bfloat16(1.5)
    return (y, i * 3 + 7, jnp.logical_not(b), x.astype(jnp.float16) + 1,
            lax.complex(x, x) * 2j)
  args = (jnp.arange(3.0), jnp.arange(3, dtype=jnp.uint8), jnp.array([True, False, True]))
  e = export.export(pyjax.jit(f))(*args)
  back = export.deserialize(e.serialize())
  assert str(back.jaxpr) == str(e.jaxpr)
  _assert_same(back.call(*args), pyjax.jit(f)(*args))
  assert [a.dtype for a in back.out_avals] == [jnp.bfloat16, jnp.uint8, jnp.bool_,
                                               jnp.float16, jnp.complex64]


def test_shared_subjaxprs_are_written_once():
  inner = pyjax.jit(lambda v: jnp.sin(v) * 2 + jnp.cos(v))

  def f(x):
    return inner(x) + inner(x + 1) + inner(x * 2)
  e = export.export(pyjax.jit(f))(jnp.ones(8))
  blob = e.serialize()
  assert bytes(blob).count(b"\x03sin") == 1 and bytes(blob).count(b"\x03cos") == 1
  back = export.deserialize(blob)
  jits = [q.params["jaxpr"] for q in back.jaxpr.jaxpr.eqns if q.primitive.name == "jit"]
  assert len(jits) == 3 and jits[0] is jits[1] is jits[2]
  _assert_same(back.call(jnp.ones(8)), pyjax.jit(f)(jnp.ones(8)))


def test_versions():
  assert (export.minimum_supported_calling_convention_version
          <= export.deserialize(_blob()).calling_convention_version
          <= export.maximum_supported_calling_convention_version)


def test_ffi_call_params_round_trip():
  from pyjax import ffi
  call = ffi.ffi_call("some_target", pyjax.ShapeDtypeStruct((2, 3), jnp.float32),
                      has_side_effect=True, vmap_method="expand_dims",
                      input_layouts=[(1, 0)])
  f = pyjax.jit(lambda x: call(x, n=3, s="str", arr=np.arange(4, dtype=np.int32), flag=True))
  e = export.export(f)(jnp.ones((2, 3)))
  back = export.deserialize(e.serialize())
  assert str(back.jaxpr) == str(e.jaxpr)
  (eqn,) = back.jaxpr.jaxpr.eqns
  before = dict(e.jaxpr.jaxpr.eqns[0].params["attributes"])
  assert dict(eqn.params["attributes"]) == before
  assert [str(x) for x in back.unordered_effects] == ["FFI"]


def test_vjp_matches_jax():
  jax = pytest.importorskip("jax")

  def make(np_mod):
    def f(x, w):
      return np_mod.tanh(x @ w), (x * 2).astype(np_mod.int32)
    return f
  rs = np.random.RandomState(4)
  x, w = rs.rand(2, 3).astype(np.float32), rs.rand(3, 4).astype(np.float32)
  ours = export.deserialize(export.export(pyjax.jit(make(jnp)))(x, w).serialize())
  theirs = jax.export.export(jax.jit(make(jax.numpy)))(x, w)
  assert ours.has_vjp()
  v = export.deserialize(ours.vjp().serialize())   # float0 cotangents survive the format
  jv = theirs.vjp()
  assert v.fun_name == jv.fun_name
  assert [str(a) for a in v.in_avals] == [str(a) for a in jv.in_avals]
  assert [str(a) for a in v.out_avals] == [str(a) for a in jv.out_avals]
  ct = rs.rand(2, 4).astype(np.float32)
  c0 = np.zeros((2, 3), jax.dtypes.float0)
  for p, q in zip(v.call(x, w, ct, c0), jv.call(x, w, ct, c0)):
    np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=1e-5, atol=1e-6)
