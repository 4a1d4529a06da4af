"""jnp products and contractions: dot, matmul, matvec/vecmat, vdot, vecdot, inner, outer,
tensordot, einsum/einsum_path, kron, trace, diagonal, cross, convolve/correlate.

Each case runs the same function with pyjax.numpy and with jax.numpy on the same NumPy
inputs and compares values, dtypes, shapes, weak types and exceptions (class + message);
some tests compare values with NumPy only, so the file is useful without JAX too."""
import warnings

import numpy as np
import pytest

from jax_compare import (bf16, f16, f32, i8, u8, i32, b_, c64, ALL, weak, arr, check_jnp,
                         fast, pjnp)


# --- dot / matmul -----------------------------------------------------------------------
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((1, 2, 3), (5, 1, 3, 4)),
                 ((5, 1, 2, 3), (1, 6, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (1, 3, 4)),
                 ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((0, 3), (3, 4)), ((2, 0), (0, 4)),
                 ((2, 1, 1, 3), (1, 3, 1)), ((7, 1, 2, 3), (4, 3, 2))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check_jnp(lambda m: m.matmul(a, b))
  np.testing.assert_allclose(np.asarray(pjnp.matmul(a, b)), np.matmul(a, b), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(np.asarray(pjnp.asarray(a) @ pjnp.asarray(b)), a @ b,
                             rtol=1e-5, atol=1e-6)


DOT_SHAPES = [((), ()), ((), (2, 3)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)),
              ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (4, 3, 6)), ((2, 3), (6, 3, 4)),
              ((0,), (0,)), ((2, 0), (0, 3))]


@pytest.mark.parametrize("sa,sb", DOT_SHAPES)
def test_dot_shapes(sa, sb):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check_jnp(lambda m: m.dot(a, b))
  np.testing.assert_allclose(np.asarray(pjnp.dot(a, b)), np.dot(a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", fast(["dot", "matmul", "vdot", "inner", "outer", "kron",
                                       "tensordot", "vecdot"], ["dot", "matmul", "outer"]))
@pytest.mark.parametrize("da,db", fast([(f32, f32), (bf16, bf16), (f16, f32), (i8, i8),
                                        (u8, u8), (i8, bf16), (b_, b_), (i32, f16),
                                        (u8, i8), (c64, f32)],
                                       [(bf16, bf16), (i8, i8), (i8, bf16), (b_, b_)], True))
def test_products_dtypes(name, da, db):
  a, b = arr((2, 3), da), arr((2, 3), db, seed=1)
  if name in ("dot", "matmul", "tensordot"):
    b = b.T.copy()
  f = {"tensordot": lambda m: m.tensordot(a, b, 1)}.get(name, lambda m: getattr(m, name)(a, b))
  check_jnp(f)


@pytest.mark.parametrize("name", ["dot", "matmul", "vdot", "inner", "outer", "kron",
                                  "tensordot", "vecdot", "einsum"])
def test_products_weak_types(name):
  def f(m):
    w = weak(m, np.arange(1.0, 4.0), np.float32)
    wi = weak(m, np.arange(1, 4), np.int32)
    s = np.arange(3, dtype=np.float16)
    fn = {"tensordot": lambda x, y: m.tensordot(x, y, 1),
          "einsum": lambda x, y: m.einsum("i,i->", x, y)}.get(name, getattr(m, name))
    return fn(w, w), fn(wi, wi), fn(w, s), fn(wi, w)
  check_jnp(f)


@pytest.mark.parametrize("name", ["dot", "matmul", "tensordot", "inner", "vdot", "einsum"])
@pytest.mark.parametrize("pet", fast([np.float32, np.int32, np.float16, np.bfloat16
                                      if hasattr(np, "bfloat16") else bf16], [np.float32]))
def test_preferred_element_type(name, pet):
  a, b = arr((2, 3), i8), arr((3, 2), i8, seed=1)
  fn = {"tensordot": lambda m: m.tensordot(a, b, 1, preferred_element_type=pet),
        "inner": lambda m: m.inner(a, b.T, preferred_element_type=pet),
        "vdot": lambda m: m.vdot(a, b, preferred_element_type=pet),
        "einsum": lambda m: m.einsum("ij,jk->ik", a, b, preferred_element_type=pet)}.get(
      name, lambda m: getattr(m, name)(a, b, preferred_element_type=pet))
  check_jnp(fn)


def test_precision_is_accepted():
  a, b = arr((2, 3), f32), arr((3, 2), f32, seed=1)
  for p in (None, "highest", "default", ("highest", "highest")):
    check_jnp(lambda m: m.dot(a, b, precision=p))
    check_jnp(lambda m: m.matmul(a, b, precision=p))
    check_jnp(lambda m: m.einsum("ij,jk", a, b, precision=p))


@pytest.mark.parametrize("case", [
    lambda m: m.dot(np.ones((2, 3)), np.ones((2, 3))),
    lambda m: m.dot([1, 2], [1, 2]),
    lambda m: m.matmul(2.0, np.ones((2, 3))),
    lambda m: m.matmul(np.ones((2, 3)), 2.0),
    lambda m: m.matmul(np.ones((2, 3)), np.ones((2, 3))),
    lambda m: m.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 4), np.float32)),
    lambda m: m.matmul(np.ones(3), np.ones(4)),
    lambda m: m.matmul([1.0], [1.0]),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), 3),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), ((1, 0), (0,))),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), (1, (0,))),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), "x"),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), (1, 2, 3)),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), ((0,), (0,))),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), np.int64(1)),
    lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 4)), (5, 0)),
    lambda m: m.vecdot(np.ones((2, 3)), np.ones((3, 4))),
    lambda m: m.matvec(np.ones((2, 3)), np.ones(4)),
    lambda m: m.matvec(np.ones(3), np.ones(3)),
    lambda m: m.vecmat(np.ones(4), np.ones((3, 4))),
    lambda m: m.vecmat(np.ones((3, 4)), np.ones(4)),
    lambda m: m.outer(np.ones(2), np.ones(2), out=1),
    lambda m: m.kron([1, 2], [1, 2]),
    lambda m: m.vdot([1, 2], [1, 2]),
    lambda m: m.inner([1, 2], [1, 2]),
])
def test_product_errors(case):
  check_jnp(case)


# --- matvec, vecmat, vdot, vecdot, inner, outer, tensordot ------------------------------
@pytest.mark.parametrize("sa,sb", [((2, 3), (3,)), ((5, 2, 3), (3,)), ((2, 3), (4, 3)),
                                   ((5, 1, 2, 3), (4, 3)), ((0, 3), (3,))])
def test_matvec(sa, sb):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check_jnp(lambda m: m.matvec(a, b))
  check_jnp(lambda m: m.vecmat(b, np.swapaxes(a, -1, -2)))


def test_vecmat_conjugates():
  a, b = arr((3,), c64), arr((3, 2), c64, seed=1)
  check_jnp(lambda m: m.vecmat(a, b))
  np.testing.assert_allclose(np.asarray(pjnp.vecmat(a, b)), np.conj(a) @ b, rtol=1e-5)


@pytest.mark.parametrize("sa,sb,axis", [((3,), (3,), -1), ((2, 3), (2, 3), -1), ((2, 3), (3,), -1),
                                        ((3, 2), (3, 1), 0), ((4, 1, 3), (5, 3), -1)])
@pytest.mark.parametrize("dtype", fast([f32, c64, i32], [c64]))
def test_vecdot(sa, sb, axis, dtype):
  a, b = arr(sa, dtype), arr(sb, dtype, seed=1)
  check_jnp(lambda m: m.vecdot(a, b, axis=axis))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (2, 3)), ((2, 2), (4,)), ((), ())])
def test_vdot(sa, sb):
  a, b = arr(sa, c64), arr(sb, c64, seed=1)
  check_jnp(lambda m: m.vdot(a, b))
  np.testing.assert_allclose(np.asarray(pjnp.vdot(a, b)), np.vdot(a, b), rtol=1e-5)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (4, 3)), ((2, 5, 3), (3,)), ((), (2, 3)),
                                   ((2, 3), ())])
def test_inner(sa, sb):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check_jnp(lambda m: m.inner(a, b))
  check_jnp(lambda m: m.inner(a, b, preferred_element_type=bf16))
  np.testing.assert_allclose(np.asarray(pjnp.inner(a, b)), np.inner(a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (4,)), ((), (2,)), ((0,), (3,))])
def test_outer(sa, sb):
  a, b = arr(sa, i8), arr(sb, f16, seed=1)
  check_jnp(lambda m: m.outer(a, b))


@pytest.mark.parametrize("sa,sb,axes", [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1),
                                        ((2, 3), (4, 5), 0), ((2, 3, 4), (4, 3, 5), ((1, 2), (1, 0))),
                                        ((2, 3), (3, 2), [[0, 1], [1, 0]]), ((2, 3), (4, 3), (-1, -1)),
                                        ((2, 3), (3,), ([1], [0]))])
def test_tensordot(sa, sb, axes):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check_jnp(lambda m: m.tensordot(a, b, axes))
  np.testing.assert_allclose(np.asarray(pjnp.tensordot(a, b, axes)), np.tensordot(a, b, axes),
                             rtol=1e-5, atol=1e-5)


# --- einsum -----------------------------------------------------------------------------
EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
           ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]),
           ("i,i->", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
           ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
           ("iij->j", [(3, 3, 2)]), ("iji,j->i", [(3, 2, 3), (2,)]), ("ij,ij->i", [(2, 3), (2, 3)]),
           ("ij,kj->ikj", [(2, 3), (4, 3)]), ("i,i,i->i", [(3,), (3,), (3,)]),
           ("ij,j->i", [(2, 1), (3,)]), ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
           ("i->", [(0,)]), ("ij,jk->ik", [(2, 0), (0, 3)]), ("iii->", [(2, 2, 2)]),
           ("ab,ab,ab->", [(1, 3), (2, 3), (2, 1)])]


@pytest.mark.parametrize("spec,shapes", EINSUMS)
def test_einsum(spec, shapes):
  ops = [arr(s, f32, seed=i) for i, s in enumerate(shapes)]
  check_jnp(lambda m: m.einsum(spec, *ops))
  np.testing.assert_allclose(np.asarray(pjnp.einsum(spec, *ops)), np.einsum(spec, *ops),
                             rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("optimize", ["auto", "optimal", "greedy", True, False,
                                      [(0, 1), (0, 1)], "einsum_path"])
def test_einsum_optimize(optimize):
  a, b, c = arr((2, 3), f32), arr((3, 4), f32, seed=1), arr((4, 5), f32, seed=2)
  if optimize == "einsum_path":
    optimize = pjnp.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")[0]
  check_jnp(lambda m: m.einsum("ij,jk,kl->il", a, b, c, optimize=optimize))


def test_einsum_interleaved_and_dtypes():
  a, b = arr((2, 3), i8), arr((3, 4), bf16, seed=1)
  check_jnp(lambda m: m.einsum(a, [0, 1], b, [1, 2], [0, 2]))
  check_jnp(lambda m: m.einsum("ij,jk->ik", a, b))
  check_jnp(lambda m: m.einsum("ij,jk->ik", a.astype(bool), a.T.astype(bool)))
  check_jnp(lambda m: m.einsum("ij->", a))
  check_jnp(lambda m: m.einsum("ii->", arr((3, 3), b_)))
  check_jnp(lambda m: m.einsum("ij", a))
  check_jnp(lambda m: m.einsum("i,i", arr((3,), c64), arr((3,), f32)))


@pytest.mark.parametrize("case", [
    lambda m: m.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((2, 3))),
    lambda m: m.einsum("ij->", np.ones((2, 3)), out=1),
    lambda m: m.einsum("ij,->ik", np.ones((2, 3)), np.ones((2, 3))),
    lambda m: m.einsum("ij->", [[1, 2]]),
    lambda m: m.einsum("ij,jk,kl->il", np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)),
                       optimize=[(0, 1, 2)]),
])
def test_einsum_errors(case):
  check_jnp(case, message=False)


def test_einsum_path():
  a, b, c = arr((2, 3), f32), arr((3, 4), f32, seed=1), arr((4, 5), f32, seed=2)
  jax = pytest.importorskip("jax")
  for opt in ("greedy", "optimal", True, False):
    ours = pjnp.einsum_path("ij,jk,kl->il", a, b, c, optimize=opt)
    ref = jax.numpy.einsum_path("ij,jk,kl->il", a, b, c, optimize=opt)
    assert ours[0] == ref[0]
    assert str(ours[1]) == str(ref[1])
  assert pjnp.einsum_path("ij,jk", pjnp.asarray(a), pjnp.asarray(b))[0] == [(0, 1)]


# --- kron, trace, diagonal, cross -------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((2,), (3,)), ((2, 3), (4, 5)), ((2,), (3, 4)), ((), (3,)),
                                   ((2, 2), ()), ((1, 2, 3), (2, 1)), ((0, 2), (3, 1))])
def test_kron(sa, sb):
  a, b = arr(sa, i32), arr(sb, f32, seed=1)
  check_jnp(lambda m: m.kron(a, b))
  np.testing.assert_allclose(np.asarray(pjnp.kron(a, b)), np.kron(a, b), rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 3, 4), (0, 3), (1, 1)])
@pytest.mark.parametrize("offset", [0, 1, -1, 3, -5])
def test_diagonal_trace(shape, offset):
  x = arr(shape, f32)
  check_jnp(lambda m: m.diagonal(x, offset))
  check_jnp(lambda m: m.trace(x, offset))
  np.testing.assert_array_equal(np.asarray(pjnp.diagonal(x, offset)), np.diagonal(x, offset))
  np.testing.assert_allclose(np.asarray(pjnp.trace(x, offset)), np.trace(x, offset), rtol=1e-6)


@pytest.mark.parametrize("axis1,axis2", [(0, 1), (1, 0), (0, 2), (2, 0), (-1, -2), (1, 2)])
def test_diagonal_trace_axes(axis1, axis2):
  x = arr((2, 3, 4), f32)
  check_jnp(lambda m: m.diagonal(x, 1, axis1, axis2))
  check_jnp(lambda m: m.trace(x, -1, axis1, axis2))


@pytest.mark.parametrize("dtype", fast(ALL, [i8, b_, bf16]))
def test_diagonal_trace_dtypes(dtype):
  x = arr((3, 3), dtype)
  check_jnp(lambda m: m.diagonal(x))
  check_jnp(lambda m: m.trace(x))
  check_jnp(lambda m: m.trace(x, dtype=np.float32))
  check_jnp(lambda m: m.diagonal(weak(m, x.astype(np.float32))))
  check_jnp(lambda m: m.trace(weak(m, x.astype(np.float32))))


@pytest.mark.parametrize("case", [
    lambda m: m.trace(np.ones((2, 3)), axis1=1, axis2=1),
    lambda m: m.trace(np.ones(3)),
    lambda m: m.trace(np.ones((2, 3)), out=1),
    lambda m: m.diagonal(np.ones(3)),
    lambda m: m.diagonal(np.ones((2, 3)), axis1=1, axis2=1),
    lambda m: m.diagonal(np.ones((2, 3)), axis1=2),
    lambda m: m.diagonal([[1, 2]]),
])
def test_trace_diagonal_errors(case):
  check_jnp(case)


@pytest.mark.parametrize("sa,sb,kw", [((3,), (3,), {}), ((2,), (2,), {}), ((2,), (3,), {}),
                                      ((3,), (2,), {}), ((4, 3), (3,), {}), ((5, 1, 3), (4, 3), {}),
                                      ((3, 4), (3, 4), {"axis": 0}),
                                      ((3, 4), (4, 3), {"axisa": 0, "axisc": 0}),
                                      ((2, 5), (5, 2), {"axisa": 0, "axisb": 1})])
@pytest.mark.parametrize("dtype", fast([f32, i32], [f32]))
def test_cross(sa, sb, kw, dtype):
  a, b = arr(sa, dtype), arr(sb, dtype, seed=1)
  check_jnp(lambda m: m.cross(a, b, **kw))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2 deprecates 2-vectors
    ref = np.cross(a, b, **kw)
  np.testing.assert_allclose(np.asarray(pjnp.cross(a, b, **kw)), ref, rtol=1e-5, atol=1e-5)


def test_cross_errors_and_weak():
  check_jnp(lambda m: m.cross(np.ones(4), np.ones(3)))
  check_jnp(lambda m: m.cross(np.ones(3, bool), np.ones(3, bool)))
  check_jnp(lambda m: m.cross(weak(m, [1.0, 2, 3], np.float32), weak(m, [3.0, 1, 0], np.float32)))
  check_jnp(lambda m: m.cross(weak(m, [1.0, 2], np.float32), weak(m, [3.0, 1], np.float32)))


# --- convolve / correlate ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(5, 3), (3, 5), (4, 4), (1, 1), (6, 1), (2, 7)])
def test_convolve_modes(name, mode, na, nv):
  a, v = arr((na,), f32), arr((nv,), f32, seed=1)
  check_jnp(lambda m: getattr(m, name)(a, v, mode=mode))
  np.testing.assert_allclose(np.asarray(getattr(pjnp, name)(a, v, mode=mode)),
                             getattr(np, name)(a, v, mode=mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("da,dv", fast([(f32, f32), (i32, i32), (b_, b_), (f16, f16),
                                        (bf16, f16), (c64, f32), (f32, c64), (i8, u8)],
                                       [(i32, i32), (bf16, f16), (f32, c64)], True))
def test_convolve_dtypes(name, da, dv):
  a, v = arr((5,), da), arr((3,), dv, seed=1)
  check_jnp(lambda m: getattr(m, name)(a, v, mode="full"))
  check_jnp(lambda m: getattr(m, name)(v, a, mode="same"))


def test_convolve_options():
  a, v = arr((5,), i32), arr((3,), i32, seed=1)
  check_jnp(lambda m: m.convolve(a, v, preferred_element_type=np.int32))
  check_jnp(lambda m: m.correlate(a, v, mode="full", preferred_element_type=np.float32))
  check_jnp(lambda m: m.convolve(a.astype(np.float32), v.astype(np.float32), precision="highest"))
  check_jnp(lambda m: m.convolve(weak(m, [1.0, 2.0], np.float32), weak(m, [1.0, 2.0, 3.0], np.float32)))
  check_jnp(lambda m: m.correlate(weak(m, [1, 2], np.int32), weak(m, [1, 2, 3], np.int32)))


@pytest.mark.parametrize("case", [
    lambda m: m.convolve(np.ones((2, 3)), np.ones(3)),
    lambda m: m.convolve(np.ones(0), np.ones(3)),
    lambda m: m.correlate(np.ones(3), np.ones(0)),
    lambda m: m.convolve(np.ones(3), np.ones(3), mode="foo"),
    lambda m: m.correlate(np.ones(3), 2.0),
    lambda m: m.convolve([1.0, 2.0], np.ones(3)),
])
def test_convolve_errors(case):
  check_jnp(case)
