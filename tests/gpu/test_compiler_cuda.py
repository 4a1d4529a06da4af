"""The CUDA C emitter (backends/gpu/codegen_cuda.py), checked without a GPU.

Each test program is lowered by the jit pipeline to CUDA kernels, which are (a) compiled
with NVRTC through cuda-bindings (skipped when the ``nvrtc`` extra is not installed) and
(b) compiled as C++ for the CPU with emulate.py's shim and run there (threads of a block
as coroutines meeting at ``__syncthreads``), the results compared with pyjax's CPU
backend: bit for bit for elementwise programs (the same vector math), within summation
rounding for float sums (the block tree adds in another order than XLA's).
"""
import contextlib

import numpy as np
import pytest

import pyjax as jax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.gpu import codegen_cuda, emulate, nvrtc

HAVE_NVRTC = nvrtc.available()
HAVE_CXX = emulate.compiler() is not None
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="cuda-bindings / NVRTC not installed "
                                 "(pip install 'pyjax[nvrtc]')")
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no C++ compiler")

_rng = np.random.default_rng(0)


def _normal(shape, dtype=np.float32):
  return _rng.standard_normal(shape).astype(dtype)


def _selu(x):
  return 1.0507 * jnp.where(x > 0, x, 1.6733 * jnp.exp(x) - 1.6733)


def _softmax(x):
  m = jnp.max(x, axis=-1, keepdims=True)
  e = jnp.exp(x - m)
  return e / jnp.sum(e, axis=-1, keepdims=True)


def _layer_norm(x, g):
  m = jnp.mean(x, -1, keepdims=True)
  v = jnp.mean((x - m) ** 2, -1, keepdims=True)
  return (x - m) * lax.rsqrt(v + 1e-5) * g


def _ints(x, y, z):
  return (x // y, x % y, (x << 3) ^ (x >> 2), jnp.where(x > y, x, y).astype(jnp.uint8),
          z.astype(jnp.int32), (x * 7).astype(jnp.float32))


def _chain(x, n):
  for _ in range(n):
    x = x * 0.5 - jnp.sum(x, -1, keepdims=True) / 40
  return x


def _nan_ties():
  x = _normal((6, 300))
  x[1, 7] = x[1, 250] = 50.0          # a tie: the first index wins
  x[2, 100] = np.nan                  # a NaN is the extreme value
  x[3, 5] = x[3, 200] = np.nan        # the first NaN
  return (x,)


# name -> (function, arguments, x64, tolerance (0: bit for bit), kernel kinds)
PROGRAMS = {
    "selu_vec": (_selu, lambda: (_normal(16384),), False, 0, ["map"]),
    "vec_offsets": (lambda x, y: x[4:] * y[0] + y[:-4], lambda: (_normal(4100), _normal(4100)),
                    False, 0, ["map"]),
    "vec_f64_int": (lambda x, i: (x * 2 + 1, i * 3 - 1), lambda: (_normal(4096, np.float64),
                    _rng.integers(-9, 9, 4096, np.int32)), True, 0, ["map", "map"]),
    "chain_f64": (lambda x: (jnp.log1p(jnp.abs(x)) + jax.nn.sigmoid(x) * jnp.tanh(x), jnp.exp2(x)),
                  lambda: (_normal((33, 17), np.float64),), True, 0, ["map", "map"]),
    "transcendental_f32": (lambda x: (jnp.sin(x) * jnp.cos(x) + jnp.log(jnp.abs(x) + 1), x ** 2.5,
                                      lax.erf(x), lax.erf_inv(jnp.tanh(x))),
                           lambda: (_normal((9, 31)),), False, 0, None),
    "ints": (_ints, lambda: (_rng.integers(-1000, 1000, (7, 9), np.int32),
                             _rng.integers(-5, 5, (7, 9), np.int32),
                             _normal((7, 9)) * 1e10), False, 0, None),
    "broadcast_slice_iota": (lambda x, b: x[1:, ::2] * b[:, None] + jnp.arange(7.0)[None, :],
                             lambda: (_normal((6, 13)), _normal(5)), False, 0, ["map"]),
    "scalar": (lambda x: jnp.exp(x) * 2, lambda: (np.float32(1.5),), False, 0, ["map"]),
    "softmax": (_softmax, lambda: (_normal((9, 1000)),), False, 2e-6, ["row"]),
    "layer_norm_f64": (_layer_norm, lambda: (_normal((5, 300), np.float64), _normal(300, np.float64)),
                       True, 1e-13, ["row"]),
    "argmax_nan_ties": (lambda x: (jnp.argmax(x, -1), jnp.argmin(x, -1), jnp.max(x, -1)),
                        _nan_ties, False, 0, None),
    "sum_all": (lambda x: (jnp.sum(x), jnp.max(x)), lambda: (_normal((40, 30)),), False, 1e-5, None),
    "columns": (lambda x: (x.sum(0), x.max(0), jnp.argmin(x, 0)), lambda: (_normal((40, 30)),),
                False, 1e-5, ["col", "col", "col"]),
    "multi_axis_rows": (lambda x: (x.sum((1, 2)), x * 2, jnp.any(x > 1, axis=(1, 2)),
                                   jnp.max(x.T, axis=-1)),
                        lambda: (_normal((3, 40, 9)),), False, 1e-5, None),
    "int_reductions": (lambda i: (i.sum(-1), i.max(0), (i > 0).all(-1)),
                       lambda: (_rng.integers(-9, 9, (6, 300)).astype(np.int32),), False, 0,
                       ["row", "col", "row"]),
    "view_and_empty": (lambda x, e: (jnp.sum(x, axis=(0, 2)), e * 2, e.sum(-1)),
                       lambda: (_normal((1, 50, 1)), np.ones((3, 0), np.float32)), False, 1e-6, None),
    # 25 dependent float64 row sums: one kernel, its trees sharing one shared scratch
    "phase_chain": (lambda x: _chain(x, 25), lambda: (_normal((3, 40), np.float64),), True,
                    1e-12, ["row"]),
    "threefry": (lambda k: jax.random.bits(k, (4096,)), lambda: (np.array([0, 42], np.uint32),),
                 False, 0, ["map"]),
}


@contextlib.contextmanager
def _x64(on):
  prev = jax.config.jax_enable_x64
  jax.config.update("jax_enable_x64", bool(on))
  try:
    yield
  finally:
    jax.config.update("jax_enable_x64", prev)


_lowered = {}


def _lower(name):
  """(CudaProgram, closed jaxpr, arguments, CPU results) of program ``name``, once."""
  hit = _lowered.get(name)
  if hit is None:
    fn, make_args, x64, _, _ = PROGRAMS[name]
    with _x64(x64):
      args = make_args()
      closed = jax.make_jaxpr(fn)(*args)
      ref = [np.asarray(r) for r in jax.tree.leaves(jax.jit(fn)(*args))]
      hit = _lowered[name] = (codegen_cuda.lower(closed, name), closed, args, ref)
  return hit


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_lowers_to_kernels(name):
  prog, _, _, _ = _lower(name)
  kinds = PROGRAMS[name][4]
  assert all(k is not None for _, k in prog.steps)   # every group is a CUDA kernel
  if kinds is not None:
    assert [k.kind for k in prog.kernels] == kinds
  for k in prog.kernels:
    assert k.source.startswith(f'extern "C" __global__ void __launch_bounds__(PJ_BLOCK) {k.name}(')
    assert "({" not in k.source   # no GNU statement expressions (NVRTC rejects them)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_nvrtc_compiles_every_kernel(name):
  prog, _, _, _ = _lower(name)
  ptx, _ = nvrtc.compile_ptx(codegen_cuda.module_source(prog.kernels), f"{name}.cu")
  for k in prog.kernels:
    assert f".entry {k.name}(" in ptx


@needs_nvrtc
def test_vectorized_kernel_uses_vector_loads_and_stores():
  prog, _, _, _ = _lower("selu_vec")
  (k,) = prog.kernels
  assert k.vec == 4 and k.work == 16384 // 4
  ptx, _ = nvrtc.compile_ptx(codegen_cuda.module_source([k]))
  assert ".v4.f32" in ptx and "ld.global" in ptx and "st.global" in ptx
  prog, _, _, _ = _lower("vec_f64_int")
  assert [k.vec for k in prog.kernels] == [2, 4]      # double2, int4
  assert _lower("vec_offsets")[0].kernels[0].vec == 4  # offsets by whole vectors


@pytest.mark.skipif(not (HAVE_NVRTC and nvrtc.available("cupy")),
                    reason="needs both cuda-bindings and CuPy's NVRTC")
def test_cupy_nvrtc_gives_the_same_ptx():
  # the GPU launcher compiles with CuPy's NVRTC wrapper and exactly pyjax's options
  if nvrtc.version("cupy") != nvrtc.version():
    pytest.skip("different NVRTC versions")
  src = codegen_cuda.module_source(_lower("softmax")[0].kernels)
  assert nvrtc.compile_ptx(src, backend="cupy")[0] == nvrtc.compile_ptx(src)[0]


@needs_cxx
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulated_kernels_match_cpu(name):
  _, closed, args, ref = _lower(name)
  tol = PROGRAMS[name][3]
  assert_matches(emulate.run(closed, args, max_blocks=4), ref, tol)


@needs_cxx
@pytest.mark.parametrize("name", ["softmax", "layer_norm_f64", "argmax_nan_ties",
                                  "multi_axis_rows", "phase_chain"])
def test_row_kernels_do_not_depend_on_thread_order(name):
  # threads run in reverse order between barriers: a missing __syncthreads would show
  _, closed, args, _ = _lower(name)
  fwd = emulate.run(closed, args, max_blocks=4)
  rev = emulate.run(closed, args, max_blocks=4, reverse=True)
  for a, b in zip(fwd, rev):
    np.testing.assert_array_equal(a, b)


def assert_matches(outs, ref, tol):
  """Outputs equal the CPU results: bit for bit (``tol`` 0, or integers), else within
  ``tol``."""
  assert len(outs) == len(ref)
  for o, r in zip(outs, ref):
    assert o.dtype == r.dtype and o.shape == r.shape
    if tol == 0 or not np.issubdtype(r.dtype, np.floating):
      np.testing.assert_array_equal(o, r)
    else:
      np.testing.assert_allclose(o, r, rtol=tol, atol=tol)


def test_statement_expressions_become_lambdas():
  src = "a + ({ float x = f(1); union { int s; float d; } b = { .s = ({ int q = 2; q; }) }; b.d; })"
  assert codegen_cuda.lambdas(src) == (
      "a + ([&]() { float x = f(1); union { int s; float d; } b = { .s = ([&]() { int q = 2; "
      "return q; }()) }; return b.d; }())")


def test_unsupported_primitive_raises():
  closed = jax.make_jaxpr(lambda x: lax.lgamma(x) + 1)(np.ones(8, np.float32))
  with pytest.raises(codegen_cuda.Unsupported, match="lgamma"):
    codegen_cuda.lower(closed)


def test_launch_config():
  prog, _, _, _ = _lower("softmax")
  (k,) = prog.kernels
  assert codegen_cuda.launch_config(k) == (9, codegen_cuda.BLOCK)      # a block per row
  assert codegen_cuda.launch_config(k, max_blocks=4) == (4, codegen_cuda.BLOCK)
  prog, _, _, _ = _lower("selu_vec")
  assert codegen_cuda.launch_config(prog.kernels[0]) == (4096 // codegen_cuda.BLOCK, codegen_cuda.BLOCK)


@needs_cxx
def test_emulator_reports_a_divergent_barrier():
  src = ('extern "C" __global__ void __launch_bounds__(PJ_BLOCK) bad(float *__restrict__ p0) {\n'
         "  if (threadIdx.x == 0) __syncthreads();\n  p0[threadIdx.x] = 1.0f;\n}\n")
  v = type("V", (), {"dtype": np.dtype(np.float32)})()
  k = codegen_cuda.CudaKernel("bad", src, ((v, True),), "map", 32, 1)
  lib = emulate.build([k], block=32)
  out = np.zeros(32, np.float32)
  ptrs = (emulate.ctypes.c_void_p * 1)(out.ctypes.data)
  assert lib.pj_launch_bad(ptrs, emulate.ctypes.c_long(1), emulate.ctypes.c_int(32)) == -1
