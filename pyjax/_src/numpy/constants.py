"""Constants and type aliases of jax.numpy (pi, e, inf, nan, newaxis, ndarray, ...)."""
import numpy as np

from pyjax._src.runtime.array import Array

__all__ = ["pi", "e", "inf", "nan", "euler_gamma", "newaxis", "ndarray", "printoptions",
           "set_printoptions", "get_printoptions", "save", "load"]

pi = np.pi
e = np.e
inf = np.inf
nan = np.nan
euler_gamma = np.euler_gamma
newaxis = None
ndarray = Array
printoptions = np.printoptions
set_printoptions = np.set_printoptions
get_printoptions = np.get_printoptions
save = np.save


def load(file, *args, **kwargs):
  """``numpy.load``; an ``.npy`` array comes back as an Array (its ``bfloat16`` restored:
  NumPy writes it as 2-byte void), as JAX's.  ``.npz`` archives and object arrays are
  returned as NumPy gives them."""
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == "V2":
      import ml_dtypes
      out = out.view(ml_dtypes.bfloat16)
    from pyjax._src.numpy.array_constructors import asarray
    try:
      out = asarray(out)
    except TypeError:   # a dtype pyjax has no Array for (object, strings)
      pass
  return out
