"""JAX's ``canonicalize_dtype_handlers`` (``jax.interpreters.xla``): Python type ->
function turning a value of that type into its canonical form (NumPy data of a dtype
allowed under the current x64 setting).  pyjax's own conversions canonicalize natively;
this table exposes those functions for the types pyjax knows, and libraries copy entries
from it (tfp registers its ``ndarray`` subclass with the ``np.ndarray`` handler).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import dtypes


def _canonicalize_ndarray(x):
  return np.asarray(x, dtypes.canonicalize_dtype(x.dtype))


def _canonicalize_python_scalar(x):
  return np.asarray(x, dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(type(x))))


def _identity(x):
  return x


canonicalize_dtype_handlers = {np.ndarray: _canonicalize_ndarray}
canonicalize_dtype_handlers.update(
    (t, _canonicalize_python_scalar) for t in dtypes.python_scalar_types)
canonicalize_dtype_handlers.update(
    (np.dtype(n).type, _canonicalize_ndarray)
    for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64", "complex64", "complex128"))


def _register_array_types():
  from pyjax._src.runtime.array import ArrayImpl
  canonicalize_dtype_handlers[ArrayImpl] = _identity


_register_array_types()
