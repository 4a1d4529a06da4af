"""Random programs (the differential fuzzer's generator, CUDA-lowerable dtypes) lowered to
CUDA kernels, compiled with NVRTC and run under the CPU emulation (dot and host groups as
the CPU compiler's NumPy steps), against pyjax's CPU results.  Slow: 40 programs."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.backends.gpu import codegen_cuda, emulate, nvrtc

import fuzz_vs_jax

_DTYPES = ["float32", "int8", "int16", "int32", "uint8", "uint16", "uint32", "bool"]


@pytest.mark.slow
@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("chunk", range(4))
def test_random_programs_emulated(chunk, monkeypatch):
  monkeypatch.setattr(fuzz_vs_jax, "DTYPES_32", _DTYPES)
  for seed in range(chunk * 10, chunk * 10 + 10):
    prog = fuzz_vs_jax.generate(seed, pyjax, x64=False, n_ops=12)
    f = prog.fn(jnp, pyjax.lax)
    with np.errstate(all="ignore"):
      closed = pyjax.make_jaxpr(f)(*prog.inputs)
      ref = [np.asarray(r) for r in pyjax.jit(f)(*prog.inputs)]
      cuda = codegen_cuda.lower(closed, f"fuzz{seed}")
      outs = emulate.run(closed, prog.inputs)
    if nvrtc.available():
      nvrtc.compile_ptx(codegen_cuda.module_source(cuda.kernels))
    for i, (o, r) in enumerate(zip(outs, ref)):
      msg = f"seed {seed}, value {i}:\n{prog.describe()}"
      assert o.dtype == r.dtype and o.shape == r.shape, msg
      if np.issubdtype(r.dtype, np.floating):   # float sums add in another order
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5, equal_nan=True, err_msg=msg)
      else:
        np.testing.assert_array_equal(o, r, err_msg=msg)
