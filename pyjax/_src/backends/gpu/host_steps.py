"""The groups of a lowered program that are not CUDA kernels (dot and host groups), run
with the CPU compiler's NumPy step implementations on host arrays: between emulated
kernels (``emulate.py``) and, until cuBLAS/CuPy steps exist, between GPU kernels
(``launch.py``: operands copied to the host and results back)."""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.compiler.ir import Lit

_impls = None


def run(node, bufs):
  """The outputs (NumPy arrays of the exact dtypes and shapes) of the compiler node
  ``node`` on the host arrays ``bufs`` (one per non-literal operand, in order)."""
  global _impls
  from pyjax._src.backends.cpu.compiler import driver
  if _impls is None:
    _impls = driver._impls()
  it = iter(bufs)
  ins = [np.asarray(x.value, x.dtype) if type(x) is Lit else next(it).reshape(x.shape)
         for x in node.ins]
  impl = _impls.get(node.prim)
  if impl is not None:
    out = impl(*ins, **node.params)
    multiple = len(node.outs) > 1 or (node.primitive is not None
                                     and node.primitive.multiple_results)
    outs = list(out) if multiple else [out]
  else:
    outs = driver._python_impl_runner(node)(*ins)
  return [np.ascontiguousarray(driver._fix_output(o, v.dtype, v.shape))
          for o, v in zip(outs, node.outs)]
