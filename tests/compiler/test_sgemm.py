"""pyjax's float32 GEMM kernel (``compiler/kernels/sgemm.py``): both jit tiers run float32
products through it, so the bits agree between tiers and do not depend on the operands'
layout; it never reads or writes outside its operands (guard-page fuzz)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pyjax._src.backends.cpu.compiler.kernels import sgemm

from test_compiler import native, numpy_path

_fn = sgemm.function()
needs_kernel = pytest.mark.skipif(_fn is None, reason="no native runtime")


def _handles(m, n, k):
  """Whether the kernel takes an m x n x k product on this machine (AVX-512)."""
  a = np.ones((m, k), np.float32)
  b = np.ones((k, n), np.float32)
  return sgemm.block(_fn, False, False, a, b, np.empty((m, n), np.float32))


@needs_kernel
def test_layouts_and_tiers_give_the_same_bits():
  rng = np.random.default_rng(3)
  m, k, n = 130, 600, 100    # a partial row strip, a masked column panel, 3 chunks of k
  if not _handles(m, n, k):
    pytest.skip("the kernel declines here (no AVX-512)")
  a = rng.standard_normal((m, k)).astype(np.float32)
  b = rng.standard_normal((k, n)).astype(np.float32)
  at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)

  def f(a, b, at, bt):
    return [a @ b, at.T @ b, a @ bt.T, at.T @ bt.T]

  outs, _ = native(f, a, b, at, bt)
  ref = np.asarray(outs[0])
  for o, r in zip(outs, numpy_path(f, a, b, at, bt)):
    np.testing.assert_array_equal(np.asarray(o), ref)   # every layout, native tier
    np.testing.assert_array_equal(np.asarray(r), ref)   # and the NumPy tier
  np.testing.assert_allclose(ref, a.astype(np.float64) @ b, rtol=1e-4, atol=2e-4)


def test_declines_narrow_products():
  if _fn is None:
    pytest.skip("no native runtime")
  assert not _handles(128, 10, 512)   # 10 columns: OpenBLAS
  assert not _handles(8, 256, 512)    # 8 rows: OpenBLAS
  assert not _handles(64, 1024, 512)  # B past 2**18 elements: OpenBLAS's cache blocking


_FUZZ = textwrap.dedent("""
    import ctypes, mmap, sys
    import numpy as np
    from pyjax._src.backends.cpu.compiler.kernels import sgemm
    fn = sgemm.function()
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    PAGE = mmap.PAGESIZE

    def guarded(shape, fill=None):
      # a float32 array whose last element ends where a PROT_NONE page starts
      nbytes = int(np.prod(shape)) * 4
      pages = -(-nbytes // PAGE) + 1
      buf = mmap.mmap(-1, pages * PAGE + PAGE)
      base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
      assert libc.mprotect(base + pages * PAGE, PAGE, 0) == 0
      off = pages * PAGE - nbytes
      arr = np.frombuffer(buf, np.float32, int(np.prod(shape)), off).reshape(shape)
      KEEP.append(buf)
      if fill is not None:
        arr[...] = fill
      return arr

    KEEP = []
    rng = np.random.default_rng(int(sys.argv[1]))
    done = 0
    for case in range(int(sys.argv[2])):
      m, n, k = int(rng.integers(16, 70)), int(rng.integers(64, 140)), int(rng.integers(1, 700))
      ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
      A = guarded((k, m) if ta else (m, k), rng.standard_normal((k, m) if ta else (m, k)))
      B = guarded((n, k) if tb else (k, n), rng.standard_normal((n, k) if tb else (k, n)))
      C = guarded((m, n), np.nan)
      a, b = (A.T if ta else A), (B.T if tb else B)
      if not sgemm.block(fn, ta, tb, a, b, C):
        continue
      ref = a.astype(np.float64) @ b
      err = np.abs(C - ref).max()
      assert err <= 1e-5 * (k + 1) ** 0.5 * 4 + 1e-6, (m, n, k, ta, tb, err)
      done += 1
      KEEP.clear()
    print("checked", done)
""")


@needs_kernel
def test_guard_page_fuzz(tmp_path):
  """Random shapes and layouts, each operand (and the result) ending at a PROT_NONE page:
  a read or write past the end kills the process (the kernel's masked loads and stores
  and its partial row strips stay inside)."""
  if not _handles(16, 64, 8):
    pytest.skip("the kernel declines here (no AVX-512)")
  script = tmp_path / "fuzz.py"
  script.write_text(_FUZZ)
  r = subprocess.run([sys.executable, str(script), "11", "120"], capture_output=True,
                     text=True, timeout=300, env=dict(os.environ))
  assert r.returncode == 0, r.stderr[-3000:]
  assert int(r.stdout.split()[-1]) >= 100
