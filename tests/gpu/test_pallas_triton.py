"""Pallas kernels lowered to Triton source (``backends/gpu/pallas_triton.py``), checked
without a GPU: each kernel's source is compiled by ``triton.compile`` for sm_90 to PTX and a
cubin (Triton's bundled ptxas; no driver), and run by Triton's interpreter (NumPy on the
CPU) against pyjax's Pallas interpret mode.  Skipped when ``triton`` is absent; the launch
test needs a GPU (``gpu`` marker)."""
import importlib.util
import os

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax.experimental import pallas as pl
from pyjax._src.backends.gpu import pallas_triton as pt
from pyjax._src.backends.gpu import platform as gpu_platform
from pallas_kernels import kblocked_kernel

triton = pytest.importorskip("triton")
_spec = importlib.util.spec_from_file_location(
    "_bench_pallas", os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "pallas.py"))
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)


def _rand(shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _add(x, y, interpret=True):   # ragged: 40 elements in blocks of 16
  def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]
  spec = pl.BlockSpec((16,), lambda i: (i,))
  return pl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct(x.shape, x.dtype),
                        grid=(pl.cdiv(x.shape[0], 16),), in_specs=[spec, spec],
                        out_specs=spec, interpret=interpret)(x, y)


def _matmul(x, y, interpret=True, precision=None, b=16):
  def kernel(x_ref, y_ref, z_ref):
    z_ref[...] = jnp.maximum(jnp.dot(x_ref[...], y_ref[...], precision=precision), 0)
  return pl.pallas_call(
      kernel, out_shape=pyjax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
      grid=(x.shape[0] // b, y.shape[1] // b),
      in_specs=[pl.BlockSpec((b, x.shape[1]), lambda i, j: (i, 0)),
                pl.BlockSpec((x.shape[1], b), lambda i, j: (0, j))],
      out_specs=pl.BlockSpec((b, b), lambda i, j: (i, j)), interpret=interpret)(x, y)


def _kblocked(x, y, interpret=True, b=16):
  kernel = kblocked_kernel(pl, jnp)
  m, k = x.shape
  n = y.shape[1]
  return pl.pallas_call(
      kernel, out_shape=pyjax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // b, n // b, k // b),
      in_specs=[pl.BlockSpec((b, b), lambda i, j, kk: (i, kk)),
                pl.BlockSpec((b, b), lambda i, j, kk: (kk, j))],
      out_specs=pl.BlockSpec((b, b), lambda i, j, kk: (i, j)),
      scratch_shapes=[pl.ANY((b, b), jnp.float32)], interpret=interpret)(x, y)


def _rows(which):
  def kernel(x_ref, w_ref, b_ref, o_ref):
    x = x_ref[...]
    if which == "softmax":
      e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
      o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)
    else:
      mu = jnp.mean(x, axis=-1, keepdims=True)
      var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
      o_ref[...] = (x - mu) * lax.rsqrt(var + 1e-5) * w_ref[...] + b_ref[...]

  def f(x, w, b, interpret=True):
    rows, cols = x.shape
    return pl.pallas_call(
        kernel, out_shape=pyjax.ShapeDtypeStruct(x.shape, x.dtype), grid=(rows // 2,),
        in_specs=[pl.BlockSpec((2, cols), lambda i: (i, 0)),
                  pl.BlockSpec((cols,), lambda i: (0,)), pl.BlockSpec((cols,), lambda i: (0,))],
        out_specs=pl.BlockSpec((2, cols), lambda i: (i, 0)), interpret=interpret)(x, w, b)
  return f


def _flash(q, k, v, interpret=True):
  # the flash attention forward kernel of benchmarks/pallas.py, 16-row blocks
  f, _ = _bench.flash(pl, jnp, pyjax, lax, q.shape[0], q.shape[1], bq=16, bk=16)
  return f(q, k, v, interpret)


def _elementwise(x, interpret=True):
  def kernel(x_ref, o_ref):
    v = x_ref[...]
    o_ref[0, :] = jnp.where(jnp.isfinite(v), jnp.sign(v) * jnp.square(v), -1.0)
    o_ref[1, :] = jnp.clip(v, -0.5, 0.5) + lax.rem(v, 0.75)
    o_ref[2, :] = jnp.cumsum(v) + lax.cummax(v, axis=0)
    o_ref[3, :] = lax.iota(jnp.int32, 16).astype(jnp.float32) / 4 - jnp.abs(v)
  return pl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct((4, 16), jnp.float32),
                        interpret=interpret)(x)


# name: (function, arguments, tolerance in float32 ulps against pyjax's interpret mode:
# 0 = bit for bit)
CASES = {
    "add_ragged": (_add, (_rand(40), _rand(40, 1)), 0),
    "elementwise_scan": (_elementwise, (np.r_[np.float32([np.inf, np.nan, -np.inf]),
                                               _rand(13)].astype(np.float32),), 0),
    "matmul_relu": (_matmul, (_rand((32, 16)), _rand((16, 32), 1)), 0),
    # vmap adds a leading grid axis (a program axis) and a squeezed block dimension
    "matmul_vmap": (lambda x, y: pyjax.vmap(_matmul)(x, y),
                    (_rand((2, 16, 16)), _rand((2, 16, 32), 1)), 0),
    "kblocked_scratch": (_kblocked, (_rand((32, 48)), _rand((48, 32), 1)), 0),
    # Triton's exp (the interpreter: NumPy's) and its reduction tree differ from pyjax's in
    # an ulp or two
    "softmax": (_rows("softmax"), (_rand((4, 16)), _rand(16, 1), _rand(16, 2)), 4),
    "layer_norm": (_rows("layer_norm"), (_rand((4, 16)), _rand(16, 1), _rand(16, 2)), 4),
    "flash_attention": (_flash, (_rand((32, 16)), _rand((32, 16), 1), _rand((32, 16), 2)), 8),
}


@pytest.mark.filterwarnings("ignore:invalid value encountered in fmod")   # pyjax's eager rem
@pytest.mark.parametrize("name", list(CASES))
def test_kernel_compiles_to_cubin_and_interprets_as_pallas(name):
  f, args, ulps = CASES[name]
  kernel = pt.lower_function(f, *args)
  # one Triton program per grid point of the parallel axes
  assert ("tl.program_id(0)" in kernel.source) == (name != "elementwise_scan")
  compiled = pt.compile_ptx(kernel)
  assert ".target sm_90" in compiled.asm["ptx"]
  assert len(compiled.asm["cubin"]) > 1000
  got = pt.interpret(kernel, *args)[0]
  want = np.asarray(f(*[jnp.asarray(a) for a in args]))
  assert got.dtype == want.dtype and got.shape == want.shape
  if ulps:   # outputs near 0 (flash attention) get an absolute floor of ulps at 1.0
    tol = ulps * np.finfo(np.float32).eps
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
  else:
    np.testing.assert_array_equal(got, want)


def _masked_softmax(x, interpret=True):
  # Triton's own style: plt.load/plt.store through ref.at views, masked to 12 of 16 columns
  from pyjax.experimental.pallas import triton as plt

  def kernel(x_ref, o_ref):
    cols = lax.broadcasted_iota(jnp.int32, (4, 16), 1)
    mask = cols < 12
    v = plt.load(x_ref.at[:, pl.ds(0, 16)], mask=mask, other=-jnp.inf)
    e = jnp.exp(v - jnp.max(v, axis=1, keepdims=True))
    plt.store(o_ref.at[pl.ds(0, 4)], e / jnp.sum(e, axis=1, keepdims=True), mask=mask)
  return pl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct((4, 16), jnp.float32),
                        interpret=interpret)(x)


def test_masked_load_store():
  x = _rand((4, 16))
  kernel = pt.lower_function(_masked_softmax, x)
  assert 'other=tl.full([], float("-inf"), tl.float32)' in kernel.source
  pt.compile_ptx(kernel)
  got = pt.interpret(kernel, x)[0]
  want = np.asarray(_masked_softmax(jnp.asarray(x)))
  tol = 4 * np.finfo(np.float32).eps
  np.testing.assert_allclose(got[:, :12], want[:, :12], rtol=tol, atol=tol)
  e = np.exp(x[:, :12] - x[:, :12].max(1, keepdims=True))
  np.testing.assert_allclose(got[:, :12], e / e.sum(1, keepdims=True), rtol=1e-6)
  assert (got[:, 12:] == 0).all()   # never stored (the interpreter's outputs start at 0)


def test_structure_of_the_generated_source():
  x, y = _rand((32, 48)), _rand((48, 32), 1)
  k = pt.lower_function(_kblocked, x, y)
  # the revisiting k axis is a loop inside the program; the scratch is a register tensor
  assert k.grid == (2, 2)
  assert "for pid" in k.source and "in range(3):" in k.source
  assert 'tl.full([16, 16], tl.full([], float("nan"), tl.float32), tl.float32)' in k.source
  assert "if " in k.source   # pl.when
  # JAX's Triton precision choice: TF32 by default for float32, IEEE for HIGHEST
  assert 'input_precision="tf32"' in k.source
  hi = pt.lower_function(lambda a, b: _matmul(a, b, precision=lax.Precision.HIGHEST),
                         _rand((32, 16)), _rand((16, 32)))
  assert 'input_precision="ieee"' in hi.source
  ragged = pt.lower_function(_add, _rand(40), _rand(40))
  assert "< 40" in ragged.source and "other=0" in ragged.source and ragged.grid == (3,)
  fl = pt.lower_function(_flash, *CASES["flash_attention"][1])
  assert "for _ in range(2):" in fl.source


def test_bf16_operands_f32_accumulation_compile():
  # compile-only: Triton's interpreter multiplies bf16 tensors' raw uint16 storage in tl.dot
  x, y = (jnp.asarray(_rand((32, 32), s)).astype(jnp.bfloat16) for s in (0, 1))
  k = pt.lower_function(_kblocked, x, y)
  assert k.signature == {"in0_ptr": "*bf16", "in1_ptr": "*bf16", "out0_ptr": "*fp32"}
  # bf16 operands: no input_precision (JAX passes none), f32 accumulation
  assert "tl.dot(" in k.source and "input_precision" not in k.source
  assert "out_dtype=tl.float32" in k.source
  assert ".target sm_90" in pt.compile_ptx(k).asm["ptx"]


def _lowering_error(jpl, jjnp, jx, body, n):
  """The exception lowering a one-block kernel ``o = body(x)`` raises: pyjax's
  ``pallas_triton`` for ``jx`` = pyjax, JAX's Triton lowering for ``jx`` = jax (its
  ``lower`` for CUDA needs no GPU)."""
  def kernel(x_ref, o_ref):
    o_ref[...] = body(jjnp, x_ref[...])
  if jx is pyjax:
    f = jpl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((n,), jjnp.float32))
    run = lambda: pt.lower_function(f, _rand(n))
  else:
    import jax.experimental.pallas.triton  # noqa: F401
    f = jpl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((n,), jjnp.float32),
                        compiler_params=jpl.triton.CompilerParams())
    run = lambda: jx.jit(f).trace(jjnp.zeros(n, jjnp.float32)).lower(
        lowering_platforms=("cuda",))
  with pytest.raises(Exception) as info:
    run()
  return info.value


@pytest.mark.parametrize("case", ["unlowered_primitive", "size_not_power_of_2"])
def test_errors_match_jax(case):
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  from jax.experimental import pallas as jpl
  body, n = {"unlowered_primitive": (lambda np_, x: np_.sort(x), 16),   # no rule in JAX either
             "size_not_power_of_2": (lambda np_, x: x * 2, 12)}[case]
  ours = _lowering_error(pl, jnp, pyjax, body, n)
  theirs = _lowering_error(jpl, jjnp, jax, body, n)
  assert type(ours) is type(theirs)
  assert str(ours) == str(theirs)
  assert ("Unimplemented primitive in Pallas Triton lowering: sort." in str(ours)
          if case == "unlowered_primitive" else "power of 2" in str(ours))


HAVE_GPU = gpu_platform.device_count() > 0


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("name", ["matmul_relu", "kblocked_scratch", "flash_attention"])
def test_launch_on_the_gpu(name):
  import cupy
  f, args, _ = CASES[name]
  kernel = pt.lower_function(f, *args)
  compiled = pt.compile_ptx(kernel, arch=int(cupy.cuda.Device().compute_capability))
  got = cupy.asnumpy(pt.launch(kernel, compiled, [cupy.asarray(a) for a in args])[0])
  want = np.asarray(f(*[jnp.asarray(a) for a in args]))
  # tl.dot runs TF32 by default (as JAX's Triton lowering): a few 1e-3 relative
  np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
