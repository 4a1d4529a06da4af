"""``jax.experimental.sparse.linalg``: ``spsolve``, a direct solve of a square CSR system,
and ``lobpcg_standard``, the top-k eigenpairs of a symmetric operator.

The ``spsolve`` primitive (JAX's name and params ``tol``, ``reorder``) runs SciPy's
``scipy.sparse.linalg.spsolve`` on the host (JAX's CPU lowering does the same through a
callback); its JVP and transpose rules are JAX's: differentiable in ``data`` and ``b``.

``lobpcg_standard`` is a jitted LOBPCG written on ``jnp``/``lax`` (a ``while_loop``): each
step does a Rayleigh-Ritz on the block ``[X, P, R]`` whose Gram matrix is inverted through
its eigendecomposition (directions with a tiny Gram eigenvalue are dropped by zero
weights, so shapes stay static), and uses JAX's convergence test (residual norm below
``tol * 10 * n * (|A x| + theta)``).  Differs from JAX: the basis is orthonormalized
differently, so iteration counts and the last bits of the results differ (the eigenpairs
agree to the tolerance); no ``debug`` diagnostics.
"""
from __future__ import annotations

from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad

__all__ = ["spsolve", "spsolve_p", "lobpcg_standard"]

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


# --- lobpcg_standard ------------------------------------------------------------------------
def _check_lobpcg(A, X):
  from pyjax import numpy as jnp
  n, k = X.shape
  if k == 0:
    raise ValueError(f"must have search dim > 0, got {k}")
  if k * 5 >= n:
    raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
  out = A(jnp.zeros((n, 1), X.dtype))
  if out.dtype != X.dtype:
    raise ValueError(f"A, X must have same dtypes (were {out.dtype}, {X.dtype})")
  if tuple(out.shape) != (n, 1):
    raise ValueError(f"A must be ({n}, {n}) matrix A, got output {tuple(out.shape)}")


def _ritz(A, S, k):
  """Rayleigh-Ritz on the block ``S``: (the top-``k`` Ritz values, descending; the
  coefficients of their vectors in ``S``)."""
  from pyjax import lax
  from pyjax import numpy as jnp
  hi = lax.Precision.HIGHEST
  G = jnp.matmul(S.T, S, precision=hi)
  H = jnp.matmul(S.T, A(S), precision=hi)
  w, V = jnp.linalg.eigh(G)
  eps = jnp.finfo(S.dtype).eps
  keep = w > eps * S.shape[1] * jnp.max(w)
  T = V * jnp.where(keep, 1 / jnp.sqrt(jnp.where(keep, w, 1)), 0)
  Hs = jnp.matmul(T.T, jnp.matmul(H, T, precision=hi), precision=hi)
  Hs = (Hs + Hs.T) / 2
  theta, Z = jnp.linalg.eigh(Hs)
  # dropped directions have zero rows/columns in Hs (eigenvalue 0): rank them last
  ok = jnp.abs(jnp.sum(Z * Z * keep[:, None], axis=0)) > 0.5
  order = jnp.argsort(jnp.where(ok, -theta, jnp.inf))[:k]
  return theta[order], jnp.matmul(T, Z[:, order], precision=hi)


def _normalize(V):
  from pyjax import numpy as jnp
  nrm = jnp.linalg.norm(V, axis=0, keepdims=True)
  return V / jnp.where(nrm == 0, 1, nrm)


def _lobpcg(A, X, m, tol):
  from pyjax import lax
  from pyjax import numpy as jnp
  n, k = X.shape
  hi = lax.Precision.HIGHEST
  X, _ = jnp.linalg.qr(X)
  AX = A(X)
  theta = jnp.sum(X * AX, axis=0)
  R = AX - theta * X
  P = jnp.zeros_like(X)

  def cond(state):
    i, _, _, _, converged, _ = state
    return (i < m) & (converged < k)

  def body(state):
    i, X, P, R, _, _ = state

    def against_x(V):   # V's directions outside span(X), columns scaled to norm 1
      for _ in range(2):
        V = V - jnp.matmul(X, jnp.matmul(X.T, V, precision=hi), precision=hi)
      return _normalize(V)
    S = jnp.concatenate([X, against_x(P), against_x(R)], axis=1)
    theta, C = _ritz(A, S, k)
    Xn = _normalize(jnp.matmul(S, C, precision=hi))
    Pn = _normalize(jnp.matmul(S[:, k:], C[k:], precision=hi))
    AX = A(Xn)
    R = AX - theta[None, :] * Xn
    reltol = (jnp.linalg.norm(AX, axis=0) + theta) * n * 10
    converged = jnp.sum(jnp.linalg.norm(R, axis=0) < tol * reltol).astype(jnp.int32)
    return i + 1, Xn, Pn, R, converged, theta

  state = (jnp.int32(0), X, P, R, jnp.int32(0), theta)
  i, X, _, _, _, theta = lax.while_loop(cond, body, state)
  return theta, X, i


def lobpcg_standard(A, X, m=100, tol=None):
  """The top-``k`` eigenvalues and eigenvectors of the symmetric ``(n, n)`` operator ``A``
  (an array, a sparse matrix, or a callable applying it to an ``(n, k')`` block) from the
  ``(n, k)`` start block ``X`` (``0 < 5 k < n``), by LOBPCG with at most ``m`` iterations.
  Returns ``(theta, U, i)``: eigenvalues (descending), eigenvectors as columns, and the
  iterations run.  ``tol`` defaults to the dtype's epsilon (JAX's criterion).  See the
  module docstring for how it differs from JAX."""
  import numpy as np
  from pyjax import numpy as jnp
  from pyjax._src.api import jit
  X = jnp.asarray(X)
  if not callable(A):
    mat = A if hasattr(A, "todense") else jnp.asarray(A)
    A = lambda V: mat @ V  # noqa: E731
  _check_lobpcg(A, X)
  if tol is None:
    tol = float(np.finfo(X.dtype).eps)
  return jit(lambda X, tol: _lobpcg(A, X, m, tol))(X, tol)
