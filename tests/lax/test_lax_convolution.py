"""lax/convolution.py: lax.conv_general_dilated and its wrappers (conv, conv_transpose,
conv_with_general_padding), dimension numbers and padding helpers, against NumPy and real
JAX."""

import numpy as np
import pytest

from pyjax import lax
from pyjax._src import core
from pyjax._src.avals import ShapedArray
from test_lax_dot import PREFS, _jax_shape, _our_shape, DTYPES, _check_close, _err, _rand, _trace, bf16


# --- convolution helpers -----------------------------------------------------------------
def test_conv_dimension_numbers_match_jax(jax):
  cases = [
      ((2, 3, 9, 9), (4, 3, 3, 3), None),
      ((2, 3, 9), (4, 3, 3), None),
      ((2, 3), (4, 3), None),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NHWC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ["NHWC", "HWIO", "NHWC"]),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NWHC", "HWIO", "NHWC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NWHC", "WHIO", "NHWC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NCHW")),
      ((2, 9, 9, 3, 4), (3, 3, 3, 4, 5), ("NDHWC", "HWDIO", "NHWDC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHWC", "HWIO")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHW", "HWIO", "NHWC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHWC", "HWOO", "NHWC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("XHWC", "HWIO", "NHWC")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NHWX")),
      ((2, 9, 9, 3), (3, 3, 3, 4), ("NHHC", "HHIO", "NHHC")),
      ((2, 9, 9, 3), (3, 3, 3), None),
      ((2, 9, 9, 3), (3, 3, 3, 4), ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))),
      ((2, 9, 9, 3), (3, 3, 3, 4), 5),
      ((2, 9, 9, 3), (3, 3, 3, 4), "NHWC"),
      ((2, 3, 9, 9), (4, 3, 3, 3), ("NCHW", "OIHW", "NCHX")),
  ]
  for ls, rs, dn in cases:
    ours = _err(lambda: lax.conv_dimension_numbers(ls, rs, dn))
    ref = _err(lambda: jax.lax.conv_dimension_numbers(ls, rs, dn))
    assert ours == ref, dn
    if ours is None:
      o = lax.conv_dimension_numbers(ls, rs, dn)
      r = jax.lax.conv_dimension_numbers(ls, rs, dn)
      assert tuple(o) == tuple(r) and str(o) == str(r)
  dn = lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  assert lax.conv_dimension_numbers((1,) * 4, (1,) * 4, dn) is dn
  assert lax.ConvDimensionNumbers._fields == ("lhs_spec", "rhs_spec", "out_spec")


def test_padtype_to_pads_match_jax(jax):
  cases = [((9, 9), (3, 3), (2, 2), "SAME"), ((10, 10), (3, 4), (2, 3), "SAME"),
           ((10, 10), (3, 4), (2, 3), "SAME_LOWER"), ((10, 10), (3, 4), (2, 3), "VALID"),
           ((10, 10), (3, 4), (2, 3), "same"), ((10, 10), (3, 4), (2, 3), "valid"),
           ((10, 10), (3, 4), (2, 3), "FOO"), ((10, 10), (3, 4), (2, 3), 3),
           ((2,), (5,), (1,), "SAME"), ((0,), (5,), (1,), "SAME"), ((0,), (5,), (2,), "SAME"),
           ((7, 1, 5), (1, 1, 5), (3, 1, 4), "SAME_LOWER"),
           (np.array([9, 9]), np.array([3, 3]), np.array([2, 2]), "SAME")]
  for args in cases:
    ours = _err(lambda: lax.padtype_to_pads(*args))
    assert ours == _err(lambda: jax.lax.padtype_to_pads(*args))
    if ours is None:
      assert lax.padtype_to_pads(*args) == [tuple(map(int, p)) for p in jax.lax.padtype_to_pads(*args)]


# --- convolution values ------------------------------------------------------------------
def _ref_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc=1, bgc=1):
  """Direct (loop) convolution in float64 / int64, as XLA defines it."""
  dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, dn)
  acc = np.int64 if lhs.dtype.kind in "iub" else (np.complex128 if lhs.dtype.kind == "c" else np.float64)
  x = np.transpose(lhs, dn.lhs_spec).astype(acc)
  w = np.transpose(rhs, dn.rhs_spec).astype(acc)
  nsp = x.ndim - 2
  if isinstance(padding, str):
    sp = x.shape[2:]
    eff = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dil)]
    padding = lax.padtype_to_pads(sp, eff, strides, padding)
  # dilate lhs
  shp = list(x.shape)
  for i in range(nsp):
    shp[2 + i] = (x.shape[2 + i] - 1) * lhs_dil[i] + 1 if x.shape[2 + i] else 0
  xd = np.zeros(shp, acc)
  xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = x
  # pad (negative crops)
  for i, (lo, hi) in enumerate(padding):
    ax = 2 + i
    xd = np.concatenate([np.zeros(xd.shape[:ax] + (max(lo, 0),) + xd.shape[ax + 1:], acc), xd,
                         np.zeros(xd.shape[:ax] + (max(hi, 0),) + xd.shape[ax + 1:], acc)], ax)
    n = xd.shape[ax]
    xd = xd.take(range(max(-lo, 0), max(n - max(-hi, 0), max(-lo, 0))), axis=ax)
  n, c = x.shape[:2]
  o = w.shape[0]
  ks = w.shape[2:]
  eff = [(k - 1) * d + 1 for k, d in zip(ks, rhs_dil)]
  osp = [max((p - e) // s + 1, 0) if p >= e else 0 for p, e, s in zip(xd.shape[2:], eff, strides)]
  out = np.zeros((n // bgc, o) + tuple(osp), acc)
  cg, og = c // fgc, o // (fgc * bgc)
  for pos in np.ndindex(*osp):
    sl = tuple(slice(p * s, p * s + e, d) for p, s, e, d in zip(pos, strides, eff, rhs_dil))
    win = xd[(slice(None), slice(None)) + sl]           # (N, C, *ks)
    for oi in range(o):
      g = oi // (o // fgc) if fgc > 1 else 0
      b = oi // (o // bgc) if bgc > 1 else 0
      wi = w[oi]                                         # (cg, *ks)
      xs = win[b * (n // bgc):(b + 1) * (n // bgc), g * cg:(g + 1) * cg]
      out[(slice(None), oi) + pos] = np.tensordot(xs, wi, axes=(list(range(1, xs.ndim)),
                                                                list(range(wi.ndim))))
  _ = og
  return np.transpose(out, np.argsort(dn.out_spec))


CONV_CASES = [
    # lhs shape, rhs shape, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), "VALID", None, None, None, 1, 1),
    ((2, 3, 9, 9), (4, 3, 3, 3), (2, 2), "SAME", None, None, None, 1, 1),
    ((2, 3, 10, 9), (4, 3, 4, 3), (2, 3), "SAME_LOWER", None, None, None, 1, 1),
    ((2, 3, 9, 9), (4, 3, 3, 2), (1, 2), ((1, 2), (0, 3)), None, None, None, 1, 1),
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), ((-2, -1), (1, -3)), None, None, None, 1, 1),
    ((2, 3, 5, 6), (4, 3, 3, 3), (1, 1), ((2, 2), (1, 1)), (2, 3), None, None, 1, 1),
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 2), "SAME", None, (2, 3), None, 1, 1),
    ((2, 3, 7, 7), (4, 3, 2, 3), (2, 1), ((1, 0), (2, 1)), (2, 2), (2, 1), None, 1, 1),
    ((2, 3, 5, 6), (4, 3, 2, 2), (1, 2), ((-1, -2), (1, -3)), (3, 2), None, None, 1, 1),
    ((1, 2, 4, 4), (2, 2, 2, 2), (1, 1), ((-6, 3), (2, -4)), (2, 1), None, None, 1, 1),
    ((1, 1, 6), (1, 1, 2), (1,), ((-7, 3),), None, None, None, 1, 1),
    ((1, 1, 6), (1, 1, 2), (1,), ((-3, -3),), None, None, None, 1, 1),
    ((2, 6, 8, 8), (9, 2, 3, 3), (1, 1), "SAME", None, None, None, 3, 1),
    ((2, 4, 8, 8), (4, 1, 3, 3), (1, 1), "SAME", None, None, None, 4, 1),
    ((4, 3, 6, 6), (6, 3, 3, 3), (1, 1), "VALID", None, None, None, 1, 2),
    ((2, 9, 9, 3), (3, 3, 3, 4), (1, 1), "SAME", None, None, ("NHWC", "HWIO", "NHWC"), 1, 1),
    ((2, 9, 8, 6), (3, 2, 2, 6), (2, 1), "VALID", None, (1, 2), ("NHWC", "HWIO", "NHWC"), 3, 1),
    ((2, 8, 9, 3), (3, 3, 3, 5), (1, 2), "SAME", None, None, ("NWHC", "HWIO", "NCHW"), 1, 1),
    ((2, 3, 11), (4, 3, 3), (2,), "SAME", None, None, None, 1, 1),
    ((2, 11, 3), (3, 3, 4), (1,), ((2, 1),), (2,), (2,), ("NWC", "WIO", "NWC"), 1, 1),
    ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 2, 1), "SAME", None, None, None, 1, 1),
    ((2, 3), (4, 3), (), (), None, None, None, 1, 1),
    ((0, 3, 9, 9), (4, 3, 3, 3), (1, 1), "SAME", None, None, None, 1, 1),
    ((2, 0, 9, 9), (4, 0, 3, 3), (1, 1), "SAME", None, None, None, 1, 1),
    ((2, 3, 9, 9), (0, 3, 3, 3), (1, 1), "SAME", None, None, None, 1, 1),
    ((2, 3, 2, 2), (4, 3, 3, 3), (1, 1), "VALID", None, None, None, 1, 1),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), "SAME", None, None, None, 1, 1),
]


def _conv_args(case):
  ls, rs, strides, padding, ld, rd, dn, fgc, bgc = case
  nsp = len(ls) - 2
  return ls, rs, strides, padding, ld or (1,) * nsp, rd or (1,) * nsp, dn, fgc, bgc


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv_values_vs_reference(case):
  ls, rs, strides, padding, ld, rd, dn, fgc, bgc = _conv_args(CONV_CASES[case])
  rng = np.random.default_rng(case)
  lhs = rng.standard_normal(ls).astype(np.float32)
  rhs = rng.standard_normal(rs).astype(np.float32)
  out = lax.conv_general_dilated(lhs, rhs, strides, padding, ld, rd, dn, fgc, bgc)
  ref = _ref_conv(lhs, rhs, strides, padding, ld, rd, dn, fgc, bgc)
  assert out.shape == ref.shape and out.dtype == np.float32
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv_matches_jax(jax, case):
  ls, rs, strides, padding, ld, rd, dn, fgc, bgc = _conv_args(CONV_CASES[case])
  rng = np.random.default_rng(50 + case)
  lhs = rng.standard_normal(ls).astype(np.float32)
  rhs = rng.standard_normal(rs).astype(np.float32)
  out = lax.conv_general_dilated(lhs, rhs, strides, padding, ld, rd, dn, fgc, bgc)
  ref = jax.lax.conv_general_dilated(lhs, rhs, strides, padding, ld, rd, dn, fgc, bgc,
                                     precision="highest")
  _check_close(out, ref)
  a = [core.get_aval(lhs), core.get_aval(rhs)]
  ours = str(_trace(lambda u, v: [lax.conv_general_dilated(u, v, strides, padding, ld, rd, dn,
                                                           fgc, bgc)], *a))
  theirs = str(jax.make_jaxpr(lambda u, v: jax.lax.conv_general_dilated(
      u, v, strides, padding, ld, rd, dn, fgc, bgc))(lhs, rhs))
  assert ours == theirs


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_conv_dtypes(dtype, jax):
  rng = np.random.default_rng(1)
  lhs, rhs = _rand(rng, (2, 3, 6, 6), dtype), _rand(rng, (4, 3, 3, 3), dtype)
  out = lax.conv_general_dilated(lhs, rhs, (1, 2), "SAME")
  ref = jax.lax.conv_general_dilated(lhs, rhs, (1, 2), "SAME", precision="highest")
  _check_close(out, ref)
  assert out.weak_type is False


def test_conv_complex(jax):
  rng = np.random.default_rng(4)
  lhs = _rand(rng, (2, 4, 6, 5), np.complex64)
  rhs = _rand(rng, (6, 2, 3, 2), np.complex64)
  out = lax.conv_general_dilated(lhs, rhs, (2, 1), "SAME", feature_group_count=2)
  _check_close(out, jax.lax.conv_general_dilated(lhs, rhs, (2, 1), "SAME", feature_group_count=2,
                                                 precision="highest"))
  ref = _ref_conv(lhs, rhs, (2, 1), "SAME", (1, 1), (1, 1), None, 2)
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-4)


def test_preferred_float64_warns_without_x64():
  import warnings
  x = np.ones((2, 2), np.float32)
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = lax.dot(x, x, preferred_element_type=np.float64)
  assert out.dtype == np.float32
  assert any("requested in dot is not available" in str(m.message) for m in w)


def test_conv_preferred_element_type_match_jax(jax):
  for ind in [np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.float16, bf16, np.float32,
              np.complex64]:
    rng = np.random.default_rng(0)
    lhs, rhs = _rand(rng, (1, 2, 5), ind), _rand(rng, (3, 2, 2), ind)
    for pref in PREFS:
      f = lambda u, v, lx: lx.conv_general_dilated(u, v, (1,), "VALID",  # noqa: E731
                                                   preferred_element_type=pref)
      ours = _our_shape(lambda u, v: f(u, v, lax), lhs, rhs)
      assert ours == _jax_shape(jax, lambda u, v: f(u, v, jax.lax), lhs, rhs), (ind, pref)
      if not isinstance(ours[0], type):
        ref = _ref_conv(lhs, rhs, (1,), "VALID", (1,), (1,), None)
        out = np.asarray(f(lhs, rhs, lax))
        if np.dtype(pref).kind in "iub":
          np.testing.assert_array_equal(out, ref.astype(pref) if pref != np.bool_ else ref != 0)
        else:
          np.testing.assert_allclose(out.astype(np.complex128), ref, rtol=2e-2, atol=2e-2)


def test_conv_wrapping_and_bool(jax):
  cases = [(np.array([[[200]]], np.uint8), np.array([[[200]]], np.uint8), np.int8),
           (np.array([[[200]]], np.uint8), np.array([[[200]]], np.uint8), np.int32),
           (np.array([[[200]]], np.uint8), np.array([[[200]]], np.uint8), None),
           (np.array([[[1, 1, 0]]], np.bool_), np.array([[[1, 1]]], np.bool_), np.int32),
           (np.array([[[1, 1, 0]]], np.bool_), np.array([[[1, 1]]], np.bool_), None)]
  for lhs, rhs, pref in cases:
    _check_close(lax.conv_general_dilated(lhs, rhs, (1,), "VALID", preferred_element_type=pref),
                 jax.lax.conv_general_dilated(lhs, rhs, (1,), "VALID", preferred_element_type=pref))


CONV_ERRORS = [
    ((1, 1, 6), (1, 1, 2), dict(window_strides=(1,), padding=[(-7, 0)])),
    ((1, 1, 6), (1, 1, 2), dict(window_strides=(1,), padding=[(-4, -3)])),
    ((1, 1, 6), (1, 1, 2), dict(window_strides=(1,), padding=[(-12, 0)], lhs_dilation=(2,))),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="FOO")),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(2,), padding="VALID")),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=[(1, 1)])),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=[(1, 1), (2, 2), (3, 3)])),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=[(1, 1, 1), (1, 1)])),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=[(1.5, 1), (1, 1)])),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID", lhs_dilation=(2, 2))),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=((0, 0), (0, 0)),
                                      lhs_dilation=(0, 2))),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID", rhs_dilation=(0, 2))),
    ((2, 3, 9, 9), (4, 1, 3, 3), dict(window_strides=(1, 1), padding="VALID", feature_group_count=3)),
    ((2, 3, 9, 9), (6, 2, 3, 3), dict(window_strides=(1, 1), padding="VALID", feature_group_count=3)),
    ((2, 3, 9, 9), (6, 1, 3, 3), dict(window_strides=(1, 1), padding="VALID", feature_group_count=2)),
    ((2, 3, 9, 9), (6, 1, 3, 3), dict(window_strides=(1, 1), padding="VALID", feature_group_count=0)),
    ((2, 3, 9, 9), (5, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
    ((3, 3, 9, 9), (6, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
    ((2, 3, 9, 9), (6, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID", batch_group_count=0)),
    ((2, 3, 9, 9), (6, 1, 3, 3), dict(window_strides=(1, 1), padding="VALID", batch_group_count=2,
                                      feature_group_count=3)),
    ((2, 3, 9, 9), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 3, 9, 9), (4, 3, 3), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NCHW", "OIHW"))),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NCHW", "OIHW", "NCHWX"))),
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NCHW", "IOHW", "NCHW"))),
]


@pytest.mark.parametrize("case", range(len(CONV_ERRORS)))
def test_conv_errors_match_jax(jax, case):
  ls, rs, kw = CONV_ERRORS[case]
  lhs, rhs = np.ones(ls, np.float32), np.ones(rs, np.float32)
  ours = _err(lambda: lax.conv_general_dilated(lhs, rhs, **kw))
  ref = _err(lambda: jax.lax.conv_general_dilated(lhs, rhs, **kw))
  assert ours is not None and ours == ref


def test_conv_dtype_mismatch_error(jax):
  lhs, rhs = np.ones((2, 3, 5, 5), np.float32), np.ones((4, 3, 3, 3), np.int32)
  ours = _err(lambda: lax.conv(lhs, rhs, (1, 1), "VALID"))
  assert ours == _err(lambda: jax.lax.conv(lhs, rhs, (1, 1), "VALID"))
  assert ours[0] is TypeError


def test_conv_errors_without_jax():
  lhs = np.ones((2, 3, 9, 9), np.float32)
  with pytest.raises(ValueError, match="must have the same number of dimensions"):
    lax.conv(lhs, np.ones((4, 3, 3, 3), np.float32), (1,), "VALID")
  with pytest.raises(ValueError, match="window_strides must be positive"):
    lax.conv(lhs, np.ones((4, 3, 3, 3), np.float32), (0, 1), "VALID")
  with pytest.raises(ValueError, match="lhs_dilation and window"):
    lax.conv_general_dilated(lhs, np.ones((4, 3, 3, 3), np.float32), (1, 1), [(0, 0)] * 2,
                             lhs_dilation=(1,))


def test_conv_wrappers_match_jax(jax):
  rng = np.random.default_rng(3)
  lhs = rng.standard_normal((2, 3, 8, 7)).astype(np.float32)
  rhs = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
  _check_close(lax.conv(lhs, rhs, (2, 1), "SAME"),
               jax.lax.conv(lhs, rhs, (2, 1), "SAME", precision="highest"))
  _check_close(lax.conv_with_general_padding(lhs, rhs, (1, 2), [(1, 2), (0, 1)], (2, 1), (1, 2)),
               jax.lax.conv_with_general_padding(lhs, rhs, (1, 2), [(1, 2), (0, 1)], (2, 1),
                                                 (1, 2), precision="highest"))


@pytest.mark.parametrize("strides", [(1, 1), (2, 3)])
@pytest.mark.parametrize("rhs_dilation", [None, (2, 1)])
@pytest.mark.parametrize("padding", ["SAME", "VALID", [(1, 0), (0, 2)]])
@pytest.mark.parametrize("consistent", [False, True])
def test_conv_transpose_matches_jax(jax, strides, rhs_dilation, padding, consistent):
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
  w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
  ours = lax.conv_transpose(x, w, strides, padding, rhs_dilation=rhs_dilation,
                            use_consistent_padding=consistent)
  ref = jax.lax.conv_transpose(x, w, strides, padding, rhs_dilation=rhs_dilation,
                               use_consistent_padding=consistent, precision="highest")
  _check_close(ours, ref)


def test_conv_transpose_nchw_and_1d(jax):
  rng = np.random.default_rng(1)
  x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
  w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  dn = ("NCHW", "OIHW", "NCHW")
  _check_close(lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=dn),
               jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=dn,
                                      precision="highest"))
  x1 = rng.standard_normal((2, 7, 3)).astype(np.float32)
  w1 = rng.standard_normal((3, 3, 5)).astype(np.float32)
  _check_close(lax.conv_transpose(x1, w1, (3,), "VALID"),
               jax.lax.conv_transpose(x1, w1, (3,), "VALID", precision="highest"))


def test_conv_transpose_kernel(jax):
  from pyjax._src.lax import shapes
  if not (hasattr(shapes, "rev") and hasattr(shapes, "transpose")):
    pytest.skip("lax.rev / lax.transpose not available yet")
  rng = np.random.default_rng(2)
  x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
  w = rng.standard_normal((3, 2, 4, 3)).astype(np.float32)
  _check_close(lax.conv_transpose(x, w, (2, 1), "SAME", transpose_kernel=True),
               jax.lax.conv_transpose(x, w, (2, 1), "SAME", transpose_kernel=True,
                                      precision="highest"))


def test_conv_weak_type():
  w = ShapedArray((2, 3, 9, 9), np.dtype(np.float32), True)
  r = ShapedArray((4, 3, 3, 3), np.dtype(np.float32), True)
  s = ShapedArray((4, 3, 3, 3), np.dtype(np.float32), False)
  j = _trace(lambda a, b: [lax.conv(a, b, (1, 1), "SAME")], w, r)
  assert j.out_avals[0].weak_type is True
  j = _trace(lambda a, b: [lax.conv(a, b, (1, 1), "SAME")], w, s)
  assert j.out_avals[0].weak_type is False


def test_conv_shape_tuple_helpers(jax):
  args = ((2, 3, 9, 9), (4, 3, 3, 3), (2, 1), "SAME")
  assert lax.conv_shape_tuple(*args) == tuple(jax.lax.conv_shape_tuple(*args))
  args = ((2, 9, 9, 3), (3, 3, 3, 4), (2, 1), [(1, 1), (0, 2)], ("NHWC", "HWIO", "NHWC"))
  assert lax.conv_general_shape_tuple(*args) == tuple(jax.lax.conv_general_shape_tuple(*args))
