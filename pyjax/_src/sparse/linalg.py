"""``jax.experimental.sparse.linalg``: ``spsolve``, a direct solve of a square CSR system.

The ``spsolve`` primitive (JAX's name and params ``tol``, ``reorder``) runs SciPy's
``scipy.sparse.linalg.spsolve`` on the host (JAX's CPU lowering does the same through a
callback); its JVP and transpose rules are JAX's: differentiable in ``data`` and ``b``.

Differs from JAX: ``lobpcg_standard`` is not implemented yet (docs/sparse.md).
"""
from __future__ import annotations

from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad

__all__ = ["spsolve", "spsolve_p"]

spsolve_p = core.Primitive("spsolve")


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
  """Solve ``A x = b`` for the square CSR matrix ``A = (data, indices, indptr)``
  (SciPy's sparse LU on the host; ``tol`` and ``reorder`` are validated and recorded as
  JAX's GPU solver uses them, and ignored on CPU as in JAX).  No ``vmap`` (as JAX)."""
  from pyjax import numpy as jnp
  data, indices, indptr, b = map(jnp.asarray, (data, indices, indptr, b))
  return spsolve_p.bind(data, indices, indptr, b, tol=tol, reorder=reorder)


@spsolve_p.def_abstract_eval
def _abstract(data, indices, indptr, b, *, tol, reorder):
  import numpy as np
  if data.dtype != b.dtype:
    raise ValueError(f"data types do not match: data.dtype={data.dtype} b.dtype={b.dtype}")
  if not (np.issubdtype(indices.dtype, np.integer) and np.issubdtype(indptr.dtype, np.integer)):
    raise ValueError(f"index arrays must be integer typed; got indices.dtype={indices.dtype} "
                     f"indptr.dtype={indptr.dtype}")
  if not data.ndim == indices.ndim == indptr.ndim == b.ndim == 1:
    raise ValueError("Arrays must be one-dimensional. Got data.shape={} indices.shape={} "
                     "indptr.shape={} b.shape={}".format(data.shape, indices.shape,
                                                         indptr.shape, b.shape))
  if indptr.shape[0] != b.shape[0] + 1 or data.shape != indices.shape:
    raise ValueError(f"Invalid CSR buffer sizes: data.shape={data.shape} "
                     f"indices.shape={indices.shape} indptr.shape={indptr.shape}")
  if reorder not in (0, 1, 2, 3):
    raise ValueError(f"reorder={reorder} not valid, must be one of [1, 2, 3, 4]")
  float(tol)
  return ShapedArray(b.shape, b.dtype)


def _csr_transpose(data, indices, indptr):
  """CSR buffers of the transpose of a square CSR matrix (traceable)."""
  from pyjax import lax
  from pyjax import numpy as jnp
  from pyjax._src.sparse.csr import csr_to_rows
  m = indptr.shape[0] - 1
  row = csr_to_rows(indices, indptr)
  row_t, col_t, data_t = lax.sort((indices, row, data), num_keys=2)
  counts = jnp.bincount(row_t, length=m).astype(indptr.dtype)
  indptr_t = jnp.zeros_like(indptr).at[1:].set(jnp.cumsum(counts).astype(indptr.dtype))
  return data_t, col_t, indptr_t


def _jvp_lhs(g, data, indices, indptr, b, **kw):
  from pyjax._src.sparse.csr import csr_matvec_p
  x = spsolve_p.bind(data, indices, indptr, b, **kw)
  q = csr_matvec_p.bind(g, indices, indptr, x, shape=(b.shape[0], b.shape[0]),
                        transpose=False)
  return -spsolve_p.bind(data, indices, indptr, q, **kw)


def _transpose(ct, data, indices, indptr, b, **kw):
  if not ad.is_undefined_primal(b) or ad.is_undefined_primal(data):
    raise NotImplementedError("spsolve transpose with respect to data")
  if type(ct) is ad.Zero:
    return [None, None, None, None]
  dt, it, pt = _csr_transpose(data, indices, indptr)
  return [None, None, None, spsolve_p.bind(dt, it, pt, ct, **kw)]


ad.defjvp(spsolve_p, _jvp_lhs, None, None,
          lambda g, data, indices, indptr, b, **kw: spsolve_p.bind(data, indices, indptr, g, **kw))
ad.primitive_transposes[spsolve_p] = _transpose
