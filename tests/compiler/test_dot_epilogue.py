"""Dot epilogues (``compiler/kernels/dot.py`` ``emit_call``, ``fusion.Fusion._epilogue_able``):
a map kernel reading a large BLAS product only at the index it computes runs on each block
of the product as soon as BLAS wrote it.  Row blocks and column blocks, linear (form 1) and
rows x columns (form 2) kernels, each against the NumPy tier bit for bit (the epilogue
computes what the kernel computes after the product) and against NumPy."""
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax._src.backends.cpu.compiler import plan

from test_compiler import leaves, native, numpy_path

_rng = np.random.default_rng(7)
X = _rng.standard_normal((64, 300)).astype(np.float32)
D = _rng.standard_normal((64, 256)).astype(np.float32)
W = _rng.standard_normal((300, 256)).astype(np.float32)
B = _rng.standard_normal(256).astype(np.float32)


def _epilogues(exe):
  return {g.epilogue_mode for g in exe.native.fusion.groups if g.epilogue_of is not None}


@pytest.mark.parametrize("name,f,ref,mode", [
    # rows of the product (300 >= 256: two row blocks), linear kernel: an SGD update
    ("rows_linear", lambda x, d, w, b: w - 0.01 * (x.T @ d),
     lambda: (W - np.float32(0.01) * (X.T @ D),), 1),
    # rows, a broadcast bias (rows x columns kernel)
    ("rows_bias", lambda x, d, w, b: jnp.tanh(x.T @ d + b),
     lambda: (np.tanh(X.T @ D + B),), 2),
    # columns of the product (64 < 256: two column blocks), linear kernel: one range per row
    ("cols_linear", lambda x, d, w, b: jnp.exp(-jnp.abs(x @ w)) * 3,
     lambda: (np.exp(-np.abs(X @ W)) * 3,), 1),
    # columns, a broadcast bias, several outputs (a gelu layer's forward pass)
    ("cols_bias", lambda x, d, w, b: (jnp.tanh(x @ w + b), (x @ w + b) * 0.5),
     lambda: (np.tanh(X @ W + B), (X @ W + B) * 0.5), 2),
])
def test_epilogue_forms_match_numpy_tier(name, f, ref, mode):
  args = (X, D, W, B)
  out, exe = native(f, *args)
  assert _epilogues(exe) == {mode}, name
  for o, r, e in zip(leaves(out), leaves(numpy_path(f, *args)), ref(), strict=True):
    np.testing.assert_array_equal(o, r)
    np.testing.assert_allclose(o, e, rtol=2e-4, atol=2e-4)


def test_no_epilogue_for_shifted_reads_or_small_products():
  # the kernel reads the product transposed: not a block's elements
  out, exe = native(lambda x: (lambda p: p + p.T)(x.T @ x), X)
  assert not _epilogues(exe)
  np.testing.assert_allclose(np.asarray(out), 2 * (X.T @ X), rtol=1e-4, atol=1e-3)
  # under fusion.EPILOGUE_MIN elements
  out, exe = native(lambda x, w: jnp.tanh(x[:8] @ w[:, :64]), X, W)
  assert not _epilogues(exe)


def test_epilogue_outputs_never_share_the_products_operands():
  """An epilogue writes its blocks while other threads' blocks still read the product's
  operands: the arena keeps its outputs apart from them (a buffer freed by the product
  is not reused by its epilogue)."""
  def f(x, w, w2):
    h = jnp.tanh(x * 2.0)          # an arena value read last by the product below
    y = jnp.sin(h @ w)             # the epilogue's output: an arena value too
    return (y @ w2).sum()

  w2 = _rng.standard_normal((256, 300)).astype(np.float32)
  out, exe = native(f, X, W, w2)
  assert _epilogues(exe) == {1}
  seg = next(s for s in exe.native.steps if isinstance(s, plan.Segment))
  for i, g in enumerate(seg.groups):
    if g.epilogue_of is None:
      continue
    dot = seg.groups[i - 1]
    spans = lambda vs: [(seg.arena[v], seg.arena[v] + v.size * v.dtype.itemsize)  # noqa: E731
                        for v in vs if v in seg.arena]
    for a0, a1 in spans(g.outputs):
      for b0, b1 in spans(dot.node.ins):
        assert a1 <= b0 or b1 <= a0
  np.testing.assert_array_equal(np.asarray(out), np.asarray(numpy_path(f, X, W, w2)))
