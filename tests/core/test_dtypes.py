"""dtype promotion, weak types and x64 canonicalization, compared with JAX."""
import itertools
import warnings

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import dtypes

NAMES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
         "float8_e4m3fn", "float8_e5m2", "int4", "uint4"]


def _promote_or_err(mod, a, b):
  try:
    return mod.promote_types(a, b).name
  except Exception as e:  # noqa: BLE001
    return type(e).__name__


def test_promote_types_table_matches_jax(jax):
  import jax.numpy as jjnp
  for a, b in itertools.product(NAMES, NAMES):
    assert _promote_or_err(jnp, a, b) == _promote_or_err(jjnp, a, b), (a, b)


@pytest.mark.parametrize("x64_on", [False, True])
def test_result_type_weak_pairs_match_jax(jax, x64_on, request):
  import jax.numpy as jjnp
  if x64_on:
    request.getfixturevalue("x64")
  weak_values = [True, 1, 1.0, 1j]
  strong = ["bool", "uint8", "int8", "int16", "int32", "uint32", "bfloat16", "float16",
            "float32", "complex64"]
  if x64_on:
    strong += ["int64", "uint64", "float64", "complex128"]
  for s in strong:
    for w in weak_values:
      ours = jnp.result_type(np.dtype(s) if s != "bfloat16" else dtypes.bfloat16, w, return_weak_type_flag=True)
      ref = jax.dtypes.result_type(jjnp.dtype(s), w, return_weak_type_flag=True)
      assert (ours[0].name, ours[1]) == (ref[0].name, ref[1]), (s, w)
  for w1, w2 in itertools.product(weak_values, weak_values):
    ours = jnp.result_type(w1, w2, return_weak_type_flag=True)
    ref = jax.dtypes.result_type(w1, w2, return_weak_type_flag=True)
    assert (ours[0].name, ours[1]) == (ref[0].name, ref[1]), (w1, w2)


def test_python_scalar_promotion_examples():
  assert (jnp.int8(32) + 4).dtype == np.int8
  assert repr(jnp.int8(32) + 4) == "Array(36, dtype=int8)"
  x = jnp.asarray(np.arange(3, dtype=np.int32))
  y = x + 5.0
  assert y.dtype == np.float32 and y.weak_type
  b = jnp.asarray(np.ones(2), dtype=jnp.bfloat16) + jnp.asarray(np.ones(2), dtype=jnp.float16)
  assert b.dtype == np.float32 and not b.weak_type


def test_float8_promotion_error_message():
  with pytest.raises(dtypes.TypePromotionError, match="8-bit floats do not support implicit promotion"):
    jnp.promote_types("float8_e4m3fn", "float32")


def test_x64_canonicalization_and_warning():
  assert not pyjax.config.jax_enable_x64
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    a = jnp.array([1, 2], dtype=jnp.float64)
  assert a.dtype == np.float32
  assert any("Explicitly requested dtype float64" in str(m.message) for m in w)
  assert jnp.array(np.arange(3, dtype=np.int64)).dtype == np.int32


def test_x64_enabled(x64):
  assert jnp.array(np.arange(3, dtype=np.int64)).dtype == np.int64
  assert jnp.array(1.0).dtype == np.float64
  assert jnp.array(1).dtype == np.int64


def test_scalar_types_are_dtypes():
  assert np.dtype(jnp.float32) == np.float32
  assert jnp.dtype(jnp.bfloat16) == dtypes.bfloat16
  assert jnp.float32 == np.float32
  x = jnp.float32(1.5)
  assert repr(x) == "Array(1.5, dtype=float32)"
  assert jnp.issubdtype(jnp.bfloat16, jnp.floating)
  assert jnp.issubdtype(jnp.int8, jnp.integer)
  assert not jnp.issubdtype(jnp.int8, jnp.floating)
  assert jnp.finfo(jnp.bfloat16).bits == 16
  assert jnp.iinfo(jnp.int8).min == -128


def test_jaxpr_short_dtype_names():
  names = {d: dtypes.short_dtype_name(np.dtype(d)) for d in ["float32", "int32", "uint8", "bool", "complex64"]}
  assert names == {"float32": "f32", "int32": "i32", "uint8": "u8", "bool": "bool", "complex64": "c64"}
  assert dtypes.short_dtype_name(dtypes.bfloat16) == "bf16"


def test_issubdtype_extended_key_dtypes():
  import pyjax
  import pyjax.numpy as jnp
  k = pyjax.random.key(0)
  assert jnp.issubdtype(k.dtype, pyjax.dtypes.prng_key)
  assert jnp.issubdtype(k.dtype, pyjax.dtypes.extended)
  assert not jnp.issubdtype(k.dtype, jnp.floating)
  assert not jnp.issubdtype(jnp.float32, pyjax.dtypes.extended)
  assert jnp.issubdtype(k.dtype, k.dtype)


def _dtype_api_outcomes(m):
  """What ``jax.dtypes``' and ``jnp``'s dtype-information API gives (or raises) on a set
  of inputs, for module ``m`` (pyjax or jax)."""
  jn = m.numpy
  out = []

  def rec(*key_and_fn):
    *key, fn = key_and_fn
    try:
      out.append((*key, fn()))
    except Exception as e:  # noqa: BLE001 -- the exception is the outcome compared
      out.append((*key, type(e).__name__, str(e).replace("pyjax", "jax")))

  for d in (jn.float32, jn.bfloat16, jn.float8_e4m3fn, jn.float4_e2m1fn, "float16", float,
            complex, jn.complex64, np.float64(1), jn.ones(2, jn.bfloat16), None, 1.0, jn.int32):
    def fi(d=d):
      f = jn.finfo(d)
      return (type(f).__name__, isinstance(f, jn.finfo), f.bits, str(f.eps), str(f.max),
              str(f.tiny), str(f.dtype), f.nmant, f.nexp)
    rec("finfo", repr(d), fi)
  for d in (jn.int32, jn.uint8, jn.int4, "int16", int, 3, jn.ones(2, "int8"), jn.bool_,
            jn.float32):
    def ii(d=d):
      f = jn.iinfo(d)
      return (isinstance(f, jn.iinfo), f.bits, f.min, f.max, str(f.dtype), f.kind)
    rec("iinfo", repr(d), ii)
  for d in (jn.bool_, jn.int4, jn.uint8, jn.bfloat16, jn.float4_e2m1fn, jn.complex64,
            "complex128", np.dtype("int64"), None, "str", m.dtypes.float0):
    rec("itemsize_bits", repr(d), lambda d=d: m.dtypes.itemsize_bits(d))
  for x in (1, 1.0, True, 1j, jn.ones(2, "int8"), jn.ones(2, bool), jn.ones(2, jn.bfloat16),
            jn.ones(2, jn.int4), np.float16(1), jn.ones(2, jn.complex64), jn.float32,
            "float32", "s", None, [1.0]):
    rec("scalar_type_of", repr(x), lambda x=x: m.dtypes.scalar_type_of(x).__name__)
  out.append((isinstance(jn.finfo, type), isinstance(jn.iinfo, type),
              m.dtypes.finfo is jn.finfo, m.dtypes.iinfo is jn.iinfo))
  return out


def test_dtype_information_api_matches_jax(jax):
  """jnp.finfo/iinfo are classes (isinstance works; bfloat16/float8/float4/int4 covered;
  no x64 canonicalization of the argument), jax.dtypes.itemsize_bits/scalar_type_of exist:
  every outcome, errors included, as JAX's."""
  for got, want in zip(_dtype_api_outcomes(pyjax), _dtype_api_outcomes(jax), strict=True):
    assert got == want


def test_dtypes_public_names_match_jax(jax):
  import jax.dtypes as jdt
  want = {n for n in dir(jdt) if not n.startswith("_")}
  assert want <= set(dir(pyjax.dtypes)), sorted(want - set(dir(pyjax.dtypes)))
