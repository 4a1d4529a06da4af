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
load = np.load
