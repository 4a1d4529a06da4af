"""A table-driven grad + vmap sweep over the float-input public functions of pyjax.numpy
(elementwise, reductions, manipulation, linalg, fft, statistics), pyjax.scipy.special,
pyjax.scipy.stats and pyjax.nn.

For every case (name -> function of a module namespace, argument domains):
  (a) ``vmap(f)`` over a leading axis of every argument (and, with several arguments, of
      the first one only) equals stacking ``f`` per example;
  (b) ``f``'s value and ``grad(sum o f)`` (every argument) equal real JAX's;
  (c) (float32) ``vmap(grad(sum o f))`` equals stacking the per-example gradients.
float32 runs a deterministic third of the cases by default and all of them under
``-m slow``; float64 (x64) runs all of them under ``-m slow``.  Real pyjax bugs are
``xfail(strict=True)`` with the file and function to fix.
"""
import types
import zlib

import numpy as np
import pytest

import pyjax
import pyjax.nn
import pyjax.numpy as pjnp
import pyjax.scipy.special
import pyjax.scipy.stats

jax = pytest.importorskip("jax")
import jax.nn  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special  # noqa: E402
import jax.scipy.stats  # noqa: E402

P = types.SimpleNamespace(np=pjnp, sp=pyjax.scipy.special, st=pyjax.scipy.stats, nn=pyjax.nn,
                          lax=pyjax.lax)
J = types.SimpleNamespace(np=jnp, sp=jax.scipy.special, st=jax.scipy.stats, nn=jax.nn,
                          lax=jax.lax)

SHAPE = (3, 4)
BATCH = 3
# Argument domains: name -> (low, high) of a uniform draw of shape SHAPE, or a maker.
RANGES = {"u": (-0.9, 0.9), "r": (-2.0, 2.0), "p": (0.5, 2.0), "p01": (0.1, 0.9),
          "big": (1.2, 3.0), "pp": (2.0, 4.0)}


def _draw(spec, dtype, rng):
  if isinstance(spec, tuple):
    kind, shape = spec
  else:
    kind, shape = spec, SHAPE
  if kind in RANGES:
    lo, hi = RANGES[kind]
    return rng.uniform(lo, hi, shape).astype(dtype)
  if kind == "sq":  # well-conditioned square matrix
    n = shape[-1]
    return (rng.uniform(-0.5, 0.5, shape) + 2.0 * np.eye(n)).astype(dtype)
  if kind == "spd":  # symmetric positive definite, distinct eigenvalues
    n = shape[-1]
    a = rng.uniform(-0.5, 0.5, shape)
    return (a @ np.swapaxes(a, -1, -2) + np.diag(np.arange(1.0, n + 1.0))).astype(dtype)
  if kind == "sorted":  # strictly increasing vector
    return np.cumsum(rng.uniform(0.5, 1.5, shape), axis=-1).astype(dtype)
  raise ValueError(kind)


class Case:
  def __init__(self, cid, fn, specs, *, tol=1.0, xfail=None, vmap_xfail=None,
               grad_xfail=None, vmap_grad_xfail=None, argnums=None, grad_raises=None,
               f64_xfail=None, tol64=None):
    self.id, self.fn, self.specs = cid, fn, list(specs)
    self.tol, self.xfail, self.argnums, self.grad_raises = tol, xfail, argnums, grad_raises
    self.tol64 = tol if tol64 is None else tol64
    self.vmap_xfail, self.grad_xfail, self.f64_xfail = vmap_xfail, grad_xfail, f64_xfail
    self.vmap_grad_xfail = vmap_grad_xfail


def _attr(ns, path):
  obj = ns
  for part in path.split("."):
    obj = getattr(obj, part)
  return obj


CASES = []


def case(path, *specs, kw=None, cid=None, **opts):
  """A case calling ``<namespace>.<path>(*args, **kw)``."""
  kw = kw or {}
  fn = lambda m, *a: _attr(m, path)(*a, **kw)
  label = cid or (path + ("" if not kw else "[" + ",".join(f"{k}={v}" for k, v in
                                                            kw.items()) + "]"))
  CASES.append(Case(label, fn, specs, **opts))


def lcase(cid, fn, *specs, **opts):
  """A case with a custom call ``fn(namespace, *args)``."""
  CASES.append(Case(cid, fn, specs, **opts))


# --- numpy: unary elementwise ----------------------------------------------------------
for _n in ["sin", "cos", "tan", "arctan", "sinh", "cosh", "tanh", "arcsinh", "exp", "exp2",
           "expm1", "square", "abs", "absolute", "fabs", "sign", "negative", "positive",
           "floor", "ceil", "trunc", "rint", "round", "deg2rad", "rad2deg", "degrees",
           "radians", "sinc", "i0", "nan_to_num", "real", "imag", "conj", "conjugate",
           "atan", "asinh", "angle"]:
  case("np." + _n, "r")
_NO_NEXTAFTER_JVP = (NotImplementedError, "Differentiation rule for 'nextafter' not implemented")
case("np.spacing", "r", grad_raises=_NO_NEXTAFTER_JVP)
for _n in ["arcsin", "arccos", "arctanh", "asin", "acos", "atanh"]:
  case("np." + _n, "u")
for _n in ["log", "log2", "log10", "log1p", "sqrt", "cbrt", "reciprocal"]:
  case("np." + _n, "p")
for _n in ["arccosh", "acosh"]:
  case("np." + _n, "big")
case("np.around", "r", kw={"decimals": 1})
case("np.clip", "r", kw={"min": -0.5, "max": 0.7})
lcase("np.clip[array bounds]", lambda m, x, lo: m.np.clip(x, lo, lo + 1.0), "r", "u")
case("np.modf", "r")
lcase("np.frexp[mantissa]", lambda m, x: m.np.frexp(x)[0], "p")
lcase("np.ldexp", lambda m, x: m.np.ldexp(x, m.np.array([[1, 2, -1, 0]] * 3)), "r")

# --- numpy: binary elementwise ---------------------------------------------------------
for _n in ["add", "subtract", "multiply", "divide", "true_divide", "maximum", "minimum",
           "fmax", "fmin", "arctan2", "atan2", "hypot", "copysign", "logaddexp",
           "logaddexp2", "heaviside"]:
  case("np." + _n, "r", "r" if _n not in ("divide", "true_divide") else "p")
for _n in ["power", "pow", "float_power"]:
  case("np." + _n, "p", "u")
for _n in ["fmod", "remainder", "mod", "floor_divide"]:
  case("np." + _n, "r", "p")
case("np.nextafter", "r", "r", grad_raises=_NO_NEXTAFTER_JVP)
lcase("np.divmod[both]", lambda m, x, y: m.np.divmod(x, y), "r", "p")
lcase("np.add[broadcast]", lambda m, x, y: m.np.add(x, y), "r", ("r", (4,)))
lcase("np.where", lambda m, x, y: m.np.where(x > 0, x, y), "r", "r")

# --- numpy: reductions and statistics ----------------------------------------------------
for _n in ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "median",
           "nanmean", "nansum", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd",
           "nanmedian", "ptp", "average", "cumsum", "cumprod", "nancumsum", "nancumprod",
           "cumulative_sum", "cumulative_prod", "sort", "diff"]:
  case("np." + _n, "p" if "prod" in _n else "r", kw={"axis": 1})
for _n in ["sum", "prod", "max", "mean", "var", "std", "median", "logsumexp"]:
  if _n == "logsumexp":
    case("sp.logsumexp", "r", kw={"axis": None}, cid="sp.logsumexp[axis=None]")
  else:
    case("np." + _n, "p" if _n == "prod" else "r", kw={"axis": None},
         cid=f"np.{_n}[axis=None]")
case("np.var", "r", kw={"axis": 0, "ddof": 1})
case("np.std", "r", kw={"axis": 1, "keepdims": True})
for _n in ["percentile", "nanpercentile"]:
  case("np." + _n, "r", kw={"q": 30.0, "axis": 1})
for _n in ["quantile", "nanquantile"]:
  case("np." + _n, "r", kw={"q": 0.3, "axis": 1})
case("np.quantile", "r", kw={"q": 0.3, "axis": 1, "method": "nearest"},
     cid="np.quantile[method=nearest]")
lcase("np.average[weights]", lambda m, x, w: m.np.average(x, axis=1, weights=w), "r", "p")
case("np.cov", "r")
case("np.corrcoef", "r")
case("np.trapezoid", "r", kw={"axis": 1})
case("np.gradient", ("r", (6,)))
case("np.ediff1d", "r")
case("np.unwrap", "r", kw={"axis": 1})
lcase("np.interp", lambda m, x, fp: m.np.interp(x, m.np.linspace(-2.0, 2.0, 4, dtype=x.dtype),
                                                fp), ("u", (5,)), ("r", (4,)))
case("np.partition", ("r", (6,)), kw={"kth": 2})

# --- numpy: manipulation -----------------------------------------------------------------
for _n, _kw in [("reshape", {"shape": (2, 6)}), ("transpose", {}), ("ravel", {}),
                ("flip", {"axis": 1}), ("fliplr", {}), ("flipud", {}), ("rot90", {}),
                ("roll", {"shift": 2, "axis": 1}), ("swapaxes", {"axis1": 0, "axis2": 1}),
                ("moveaxis", {"source": 0, "destination": 1}), ("expand_dims", {"axis": 1}),
                ("tile", {"reps": (2, 1)}), ("repeat", {"repeats": 2, "axis": 0}),
                ("pad", {"pad_width": 1}), ("pad", {"pad_width": 2, "mode": "reflect"}),
                ("pad", {"pad_width": 2, "mode": "edge"}),
                ("pad", {"pad_width": 2, "mode": "wrap"}),
                ("pad", {"pad_width": 2, "mode": "symmetric"}),
                ("pad", {"pad_width": 2, "mode": "linear_ramp"}),
                ("pad", {"pad_width": 2, "mode": "mean"}),
                ("diagonal", {}), ("trace", {}), ("tril", {}), ("triu", {"k": 1}),
                ("atleast_3d", {}), ("broadcast_to", {"shape": (2, 3, 4)}),
                ("resize", {"new_shape": (5, 3)}), ("matrix_transpose", {}),
                ("permute_dims", {"axes": (1, 0)}), ("delete", {"obj": 1, "axis": 1}),
                ("insert", {"obj": 1, "values": 0.5, "axis": 1}),
                ("append", {"values": np.ones((3, 1), np.float32), "axis": 1}),
                ("split", {"indices_or_sections": 2, "axis": 1}),
                ("array_split", {"indices_or_sections": 3, "axis": 1}),
                ("unstack", {"axis": 1}), ("take", {"indices": np.array([0, 2, 2]),
                                                    "axis": 1}),
                ("squeeze", {})]:
  case("np." + _n, "r" if _n != "squeeze" else ("r", (3, 1, 4)), kw=_kw)
case("np.diag", ("r", (4,)))
case("np.diagflat", ("r", (3,)))
case("np.vander", ("r", (4,)), kw={"N": 3})
lcase("np.take_along_axis", lambda m, x: m.np.take_along_axis(
    x, m.np.array([[0, 3], [1, 1], [2, 0]]), axis=1), "r")
lcase("np.concatenate", lambda m, x, y: m.np.concatenate([x, y], axis=1), "r", "r")
lcase("np.stack", lambda m, x, y: m.np.stack([x, y], axis=1), "r", "r")
lcase("np.hstack", lambda m, x, y: m.np.hstack([x, y]), "r", "r")
lcase("np.vstack", lambda m, x, y: m.np.vstack([x, y]), "r", "r")
lcase("np.dstack", lambda m, x, y: m.np.dstack([x, y]), "r", "r")
lcase("np.column_stack", lambda m, x, y: m.np.column_stack([x, y]), "r", "r")
lcase("np.block", lambda m, x, y: m.np.block([[x, y], [y, x]]), "r", "r")
lcase("np.select", lambda m, x, y: m.np.select([x > 0.5, x < -0.5], [x, y], 0.25), "r",
      "r")
lcase("np.choose", lambda m, x, y: m.np.choose(m.np.array([0, 1, 0, 1]), [x, y]),
      ("r", (4,)), ("r", (4,)))
lcase("np.fill_diagonal", lambda m, x, v: m.np.fill_diagonal(x, v, inplace=False),
      ("r", (3, 3)), ("r", ()))
lcase("np.put_along_axis", lambda m, x, v: m.np.put_along_axis(
    x, m.np.array([[1], [0], [3]]), v, axis=1, inplace=False), "r", ("r", (3, 1)))
lcase("np.compress", lambda m, x: m.np.compress(m.np.array([True, False, True]), x, axis=0),
      "r")
lcase("np.x.at[].add", lambda m, x, v: m.np.asarray(x).at[m.np.array([0, 2, 0])].add(v), "r",
      ("r", (3, 4)))
lcase("np.x.at[].mul", lambda m, x, v: m.np.asarray(x).at[m.np.array([0, 2])].multiply(v),
      "r", ("r", (2, 4)), grad_raises=(NotImplementedError, "scatter_mul gradients are only "
                                       "implemented if `unique_indices=True`"))
lcase("np.x.at[].mul[unique]", lambda m, x, v: m.np.asarray(x).at[m.np.array([0, 2])].multiply(
    v, unique_indices=True), "r", ("r", (2, 4)))
lcase("np.x.at[].max", lambda m, x, v: m.np.asarray(x).at[m.np.array([0, 2])].max(v), "r",
      ("r", (2, 4)))
lcase("np.x.at[].set", lambda m, x, v: m.np.asarray(x).at[1:, 2].set(v), "r", ("r", (2,)))
lcase("np.x.at[].get", lambda m, x: m.np.asarray(x).at[m.np.array([0, 2, 2])].get(), "r")
lcase("np.getitem[fancy]", lambda m, x: m.np.asarray(x)[m.np.array([2, 0]), 1:3], "r")

# --- numpy: products, polynomials ---------------------------------------------------------
lcase("np.dot", lambda m, x, y: m.np.dot(x, y), "r", ("r", (4, 2)))
lcase("np.matmul", lambda m, x, y: m.np.matmul(x, y), "r", ("r", (4, 2)))
lcase("np.inner", lambda m, x, y: m.np.inner(x, y), "r", ("r", (2, 4)))
lcase("np.outer", lambda m, x, y: m.np.outer(x, y), ("r", (3,)), ("r", (4,)))
lcase("np.vdot", lambda m, x, y: m.np.vdot(x, y), "r", "r")
lcase("np.vecdot", lambda m, x, y: m.np.vecdot(x, y), "r", "r")
lcase("np.matvec", lambda m, x, y: m.np.matvec(x, y), "r", ("r", (4,)))
lcase("np.vecmat", lambda m, x, y: m.np.vecmat(x, y), ("r", (3,)), "r")
lcase("np.tensordot", lambda m, x, y: m.np.tensordot(x, y, axes=1), "r", ("r", (4, 2)))
lcase("np.einsum", lambda m, x, y: m.np.einsum("ij,kj->ik", x, y), "r", ("r", (2, 4)))
lcase("np.kron", lambda m, x, y: m.np.kron(x, y), ("r", (2, 2)), ("r", (2, 3)))
lcase("np.cross", lambda m, x, y: m.np.cross(x, y), ("r", (4, 3)), ("r", (4, 3)))
lcase("np.convolve", lambda m, x, y: m.np.convolve(x, y), ("r", (5,)), ("r", (3,)))
lcase("np.correlate", lambda m, x, y: m.np.correlate(x, y, mode="full"), ("r", (5,)),
      ("r", (3,)))
lcase("np.polyval", lambda m, p, x: m.np.polyval(p, x), ("r", (4,)), ("r", (5,)))
lcase("np.polymul", lambda m, p, q: m.np.polymul(p, q), ("r", (3,)), ("r", (4,)))
lcase("np.polyadd", lambda m, p, q: m.np.polyadd(p, q), ("r", (3,)), ("r", (4,)))
lcase("np.polysub", lambda m, p, q: m.np.polysub(p, q), ("r", (3,)), ("r", (4,)))
case("np.polyder", ("r", (4,)))
case("np.polyint", ("r", (4,)))
lcase("np.polyfit", lambda m, x, y: m.np.polyfit(x, y, 2), ("sorted", (6,)), ("r", (6,)),
      tol=10.0)
case("np.poly", ("r", (3,)))

# --- numpy.linalg ------------------------------------------------------------------------
for _n in ["inv", "det", "pinv", "matrix_rank", "cond", "norm", "matrix_norm", "eigvalsh",
           "svdvals", "cholesky", "slogdet", "qr"]:
  case("np.linalg." + _n, ("spd" if _n in ("cholesky", "eigvalsh") else "sq", (3, 3)),
       **({"tol": 10.0} if _n in ("pinv", "cond") else {}))
case("np.linalg.eigvalsh", ("spd", (4, 4)), cid="np.linalg.eigvalsh[4x4]")
lcase("np.linalg.eigh[w]", lambda m, a: m.np.linalg.eigh(a)[0], ("spd", (3, 3)))
lcase("np.linalg.eigh[|v|]", lambda m, a: m.np.abs(m.np.linalg.eigh(a)[1]), ("spd", (3, 3)),
      tol=10.0)
lcase("np.linalg.svd[s]", lambda m, a: m.np.linalg.svd(a, compute_uv=False), "r")
lcase("np.linalg.svd[|u|]", lambda m, a: m.np.abs(m.np.linalg.svd(
    a, full_matrices=False)[0]), "r", tol=10.0)
lcase("np.linalg.eigvals", lambda m, a: m.np.sort(m.np.linalg.eigvals(a).real),
      ("spd", (3, 3)), tol=10.0)
lcase("np.linalg.solve", lambda m, a, b: m.np.linalg.solve(a, b), ("sq", (3, 3)),
      ("r", (3, 2)))
lcase("np.linalg.lstsq", lambda m, a, b: m.np.linalg.lstsq(a, b)[0], ("r", (5, 3)),
      ("r", (5,)), tol=10.0)
case("np.linalg.matrix_power", ("sq", (3, 3)), kw={"n": 3})
case("np.linalg.matrix_power", ("sq", (3, 3)), kw={"n": -2})
case("np.linalg.norm", "r", kw={"ord": 1})
case("np.linalg.norm", "r", kw={"ord": "nuc"}, tol=10.0)
case("np.linalg.norm", "r", kw={"ord": 2}, tol=10.0)
case("np.linalg.norm", "r", kw={"axis": 1})
case("np.linalg.vector_norm", "r", kw={"ord": 3})
case("np.linalg.matrix_norm", "r", kw={"ord": "fro"})
lcase("np.linalg.multi_dot", lambda m, a, b, c: m.np.linalg.multi_dot([a, b, c]), "r",
      ("r", (4, 2)), ("r", (2, 3)))
lcase("np.linalg.tensorsolve", lambda m, a, b: m.np.linalg.tensorsolve(a, b),
      ("sq", (4, 4)), ("r", (4,)))
case("np.linalg.tensorinv", ("sq", (4, 4)), kw={"ind": 1})

# --- numpy.fft ---------------------------------------------------------------------------
for _n in ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift"]:
  case("np.fft." + _n, "r")
case("np.fft.fft", "r", kw={"n": 6, "norm": "ortho"})
case("np.fft.irfft", "r", kw={"n": 7})

# --- scipy.special -------------------------------------------------------------------------
for _n in ["erf", "erfc", "expit", "ndtr", "log_ndtr", "i0", "i0e", "i1", "i1e", "erfcx",
           "dawsn", "softmax", "log_softmax"]:
  case("sp." + _n, "r")
case("sp.erfinv", "u")
for _n in ["logit", "ndtri"]:
  case("sp." + _n, "p01")
for _n in ["gammaln", "digamma", "gamma", "loggamma", "entr", "spence", "exp1", "expi",
           "factorial"]:
  case("sp." + _n, "p")
for _n in ["xlogy", "xlog1py", "kl_div", "rel_entr", "beta", "betaln", "gammainc",
           "gammaincc", "poch"]:
  case("sp." + _n, "p", "p")
case("sp.zeta", "big", "p")
lcase("sp.polygamma[n=1]", lambda m, x: m.sp.polygamma(1, x), "p")
lcase("sp.multigammaln[d=3]", lambda m, a: m.sp.multigammaln(a, 3), "pp")
lcase("sp.expn[n=2]", lambda m, x: m.sp.expn(2, x), "p")
# JAX: "Betainc gradient with respect to a and b not supported."
case("sp.betainc", "p", "p", "p01", argnums=(2,))
case("sp.hyp1f1", "p", "pp", "u")
case("sp.owens_t", "r", "p")
case("sp.boxcox", "p", "u")
case("sp.boxcox1p", "p", "u")
lcase("sp.sici", lambda m, x: m.sp.sici(x), "p")
lcase("sp.fresnel", lambda m, x: m.sp.fresnel(x), "p")
lcase("sp.bessel_jn[v=2]", lambda m, z: m.sp.bessel_jn(z, v=2), "p")
case("sp.logsumexp", "r", kw={"axis": 1})
lcase("sp.logsumexp[b]", lambda m, x, b: m.sp.logsumexp(x, axis=1, b=b), "r", "p")

# --- scipy.stats ---------------------------------------------------------------------------
for _f in ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]:
  case("st.norm." + _f, "r", "u", "p")
for _f in ["ppf", "isf"]:
  case("st.norm." + _f, "p01", "u", "p")
for _d, _specs in [("t", ("r", "pp")), ("gamma", ("p", "pp")), ("beta", ("p01", "pp", "pp")),
                   ("expon", ("p",)), ("laplace", ("r",)), ("logistic", ("r",)),
                   ("cauchy", ("r",)), ("chi2", ("p", "pp")), ("uniform", ("u",)),
                   ("gennorm", ("r", "pp")), ("pareto", ("big", "pp")),
                   ("vonmises", ("u", "p")), ("gumbel_l", ("r",)), ("gumbel_r", ("r",)),
                   ("wrapcauchy", ("p", "p01"))]:
  _m = getattr(pyjax.scipy.stats, _d)
  for _f in ["logpdf", "cdf"]:
    if hasattr(_m, _f):
      case(f"st.{_d}.{_f}", *_specs, argnums=(0,) if (_d, _f) == ("beta", "cdf") else None)
for _f in ["logpdf", "cdf"]:
  lcase(f"st.truncnorm.{_f}", lambda m, x, a, _f=_f: getattr(m.st.truncnorm, _f)(
      x, a - 1.0, a + 2.0), "u", "u")
lcase("st.multivariate_normal.logpdf", lambda m, x, mu, cov: m.st.multivariate_normal.logpdf(
    x, mu, cov), ("r", (3,)), ("r", (3,)), ("spd", (3, 3)))
lcase("st.dirichlet.logpdf", lambda m, x, a: m.st.dirichlet.logpdf(x / x.sum(), a),
      ("p", (3,)), ("pp", (3,)))

# --- nn ------------------------------------------------------------------------------------
for _n in ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "silu", "swish", "gelu",
           "elu", "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu",
           "hard_swish", "mish", "soft_sign", "squareplus", "sparse_plus", "sparse_sigmoid",
           "tanh", "identity", "softmax", "log_softmax", "logsumexp", "standardize"]:
  case("nn." + _n, "r")
case("nn.gelu", "r", kw={"approximate": False})
case("nn.glu", "r", kw={"axis": 1})
case("nn.log1mexp", "p")
case("nn.logmeanexp", "r", kw={"axis": 1})
# JAX computes the attention softmax in float32 even for float64 inputs (pyjax in float64),
# so float64 results agree to ~1e-7 only.
lcase("nn.dot_product_attention", lambda m, q, k, v: m.nn.dot_product_attention(q, k, v),
      ("r", (3, 2, 4)), ("r", (5, 2, 4)), ("r", (5, 2, 4)), tol64=1e5)
lcase("nn.dot_product_attention[causal]", lambda m, q, k, v: m.nn.dot_product_attention(
    q, k, v, is_causal=True), ("r", (3, 2, 4)), ("r", (3, 2, 4)), ("r", (3, 2, 4)), tol64=1e5)


# --- the checks ----------------------------------------------------------------------------
def _leaves(out):
  if isinstance(out, (tuple, list)):
    return [x for o in out for x in _leaves(o)]
  return [out]


def _inexact(x):
  return np.issubdtype(np.dtype(x.dtype), np.inexact)


def _loss(m, c):
  def loss(*args):
    total = 0.0
    for leaf in _leaves(c.fn(m, *args)):
      if not _inexact(leaf):
        continue
      total = total + m.np.sum(m.np.real(leaf))
      if np.issubdtype(np.dtype(leaf.dtype), np.complexfloating):
        total = total + m.np.sum(m.np.imag(leaf))
    return total
  return loss


def _tols(dtype, c):
  if dtype == np.float32:
    return 2e-4 * c.tol, 2e-5 * c.tol
  return 1e-9 * c.tol64, 1e-11 * c.tol64


def _close(got, want, dtype, c, what):
  rtol, atol = _tols(dtype, c)
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
  np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _rng(c, dtype, salt):
  return np.random.default_rng(zlib.crc32(f"{c.id}/{np.dtype(dtype).name}/{salt}".encode()))


def check_vmap(c, dtype):
  rng = _rng(c, dtype, "vmap")
  examples = [[_draw(s, dtype, rng) for s in c.specs] for _ in range(BATCH)]
  batched = [np.stack([ex[i] for ex in examples]) for i in range(len(c.specs))]
  f = lambda *a: c.fn(P, *a)
  got = _leaves(pyjax.vmap(f)(*batched))
  per = [_leaves(f(*ex)) for ex in examples]
  assert len(got) == len(per[0])
  for k, g in enumerate(got):
    want = np.stack([np.asarray(p[k]) for p in per])
    _close(g, want, dtype, c, f"vmap output {k}")
  if len(c.specs) > 1:  # only the first argument batched, the others shared
    in_axes = (0,) + (None,) * (len(c.specs) - 1)
    got = _leaves(pyjax.vmap(f, in_axes=in_axes)(batched[0], *examples[0][1:]))
    per = [_leaves(f(ex[0], *examples[0][1:])) for ex in examples]
    for k, g in enumerate(got):
      want = np.stack([np.asarray(p[k]) for p in per])
      _close(g, want, dtype, c, f"vmap (first argument only) output {k}")


def check_grad(c, dtype):
  rng = _rng(c, dtype, "grad")
  args = [_draw(s, dtype, rng) for s in c.specs]
  argnums = tuple(range(len(args)))
  pv = _leaves(c.fn(P, *args))
  jv = _leaves(c.fn(J, *args))
  assert len(pv) == len(jv)
  for k, (a, b) in enumerate(zip(pv, jv)):
    _close(a, b, dtype, c, f"value {k}")
  if c.argnums is not None:
    argnums = c.argnums
  if c.grad_raises is not None:  # JAX defines no derivative: pyjax must raise the same
    exc, msg = c.grad_raises
    with pytest.raises(exc, match=msg):
      jax.grad(_loss(J, c), argnums=argnums)(*args)
    with pytest.raises(exc, match=msg):
      pyjax.grad(_loss(P, c), argnums=argnums)(*args)
    return
  pg = pyjax.grad(_loss(P, c), argnums=argnums)(*args)
  jg = jax.grad(_loss(J, c), argnums=argnums)(*args)
  for k, (a, b) in enumerate(zip(pg, jg)):
    _close(a, b, dtype, c, f"grad wrt argument {k}")


def check_vmap_of_grad(c, dtype):
  """Per-example gradients: ``vmap(grad(sum o f))`` equals stacking ``grad`` per example."""
  if c.grad_raises is not None:
    return
  rng = _rng(c, dtype, "vmap_grad")
  examples = [[_draw(s, dtype, rng) for s in c.specs] for _ in range(BATCH)]
  batched = [np.stack([ex[i] for ex in examples]) for i in range(len(c.specs))]
  argnums = tuple(range(len(c.specs))) if c.argnums is None else c.argnums
  g = pyjax.grad(_loss(P, c), argnums=argnums)
  got = pyjax.vmap(g)(*batched)
  per = [g(*ex) for ex in examples]
  for k, a in enumerate(got):
    want = np.stack([np.asarray(p[k]) for p in per])
    _close(a, want, dtype, c, f"vmap of grad wrt argument {k}")


def _in_default_sample(c):
  return zlib.crc32(c.id.encode()) % 3 == 0


def _params(check, *, sample, f64=False):
  out = []
  for c in CASES:
    reason = c.xfail or {"vmap": c.vmap_xfail, "grad": c.grad_xfail,
                         "vmap_grad": c.vmap_grad_xfail}[check]
    if f64 and c.f64_xfail:
      reason = reason or c.f64_xfail
    marks = []
    if reason:
      marks.append(pytest.mark.xfail(strict=True, reason=reason))
    if f64 or not (sample and _in_default_sample(c)):
      marks.append(pytest.mark.slow)
    out.append(pytest.param(c, id=c.id, marks=marks))
  return out


def test_case_ids_are_unique():
  ids = [c.id for c in CASES]
  assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


@pytest.mark.parametrize("c", _params("vmap", sample=True))
def test_vmap_f32(c):
  check_vmap(c, np.float32)


@pytest.mark.parametrize("c", _params("grad", sample=True))
def test_grad_f32(c):
  check_grad(c, np.float32)


@pytest.mark.parametrize("c", _params("vmap_grad", sample=True))
def test_vmap_of_grad_f32(c):
  check_vmap_of_grad(c, np.float32)


@pytest.mark.parametrize("c", _params("vmap", sample=False, f64=True))
def test_vmap_f64(c, x64):
  check_vmap(c, np.float64)


@pytest.mark.parametrize("c", _params("grad", sample=False, f64=True))
def test_grad_f64(c, x64):
  check_grad(c, np.float64)
