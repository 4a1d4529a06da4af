"""Contractions: the ``dot_general`` primitive, ``Precision`` and ``DotAlgorithmPreset``,
and the public ``lax.dot_general`` / ``lax.dot`` / ``lax.batch_matmul``.

Shape rule: the output has the batch dimensions, then the lhs free dimensions, then the
rhs free dimensions.  Dtype rule (XLA's "higher precision type"): operands of different
dtypes are allowed; the result has the dtype that is complex over real, then has the
larger exponent range, then more mantissa bits, then more bits, then is signed.
``preferred_element_type`` overrides it (it must not be narrower than an integer
result unless a ``DotAlgorithmPreset`` is given).  The result is weakly typed only if
both operands are.
"""
from __future__ import annotations

import enum
import functools
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.config import config

__all__ = ["dot_general", "dot", "batch_matmul", "Precision", "DotAlgorithmPreset",
           "dot_general_p", "DotDimensionNumbers", "PrecisionLike"]


# --- precision ---------------------------------------------------------------------------
class Precision(enum.Enum):
  """Precision of a contraction on accelerators (ignored by the CPU backend, which always
  computes float32 contractions in float32).  Also constructible from JAX's strings:
  ``Precision('highest')``, ``'float32'``, ``'high'``, ``'bfloat16_3x'``,
  ``'tensorfloat32'``, ``'default'``, ``'bfloat16'``, ``'fastest'``."""
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    if isinstance(value, str):
      p = _precision_strings.get(value)
      if p is not None:
        return cls[p]
    return None

  def __repr__(self):
    return f"Precision.{self.name}"

  def __str__(self):
    return self.name


_precision_strings = {"highest": "HIGHEST", "float32": "HIGHEST", "high": "HIGH",
                      "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH", "default": "DEFAULT",
                      "bfloat16": "DEFAULT", "fastest": "DEFAULT"}


class DotAlgorithmPreset(enum.Enum):
  """Named dot algorithms (operand, operand, accumulation types).  Accepted and carried in
  the jaxpr; the CPU backend computes every preset at the operands' precision."""
  DEFAULT = 0
  ANY_F8_ANY_F8_F32 = 1
  ANY_F8_ANY_F8_F32_FAST_ACCUM = 2
  ANY_F8_ANY_F8_ANY = 3
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = 4
  F16_F16_F16 = 5
  F16_F16_F32 = 6
  BF16_BF16_BF16 = 7
  BF16_BF16_F32 = 8
  BF16_BF16_F32_X3 = 9
  BF16_BF16_F32_X6 = 10
  BF16_BF16_F32_X9 = 11
  TF32_TF32_F32 = 12
  TF32_TF32_F32_X3 = 13
  F32_F32_F32 = 14
  F64_F64_F64 = 15

  def __repr__(self):
    return f"DotAlgorithmPreset.{self.name}"

  def __str__(self):
    return self.name


DotDimensionNumbers = tuple
PrecisionLike = object


def _precision_error(precision):
  return ValueError(
      "Precision argument must be one of:\n"
      "- None,\n"
      f"- a string in {list(_precision_strings) + [None]},\n"
      "- a lax.Precision value,\n"
      "- a tuple of two lax.Precision values or strings,\n"
      "- a lax.DotAlgorithmPreset or the name of one of these presets, or\n"
      "- a lax.DotAlgorithm value;\n"
      f"but got {precision}.")


def canonicalize_precision(precision):
  """None, a (Precision, Precision) pair or a DotAlgorithmPreset, as JAX stores the
  ``precision`` param.  None defers to ``jax_default_matmul_precision``."""
  if precision is None:
    default = config.jax_default_matmul_precision
    if default is None:
      return None
    try:
      return canonicalize_precision(default)
    except ValueError:
      raise ValueError("jax_default_matmul_precision flag must be set to None, a value in "
                       f"{list(_precision_strings)}, or the name of a lax.DotAlgorithmPreset, "
                       f"but got {default}") from None
  if isinstance(precision, Precision):
    return (precision, precision)
  if isinstance(precision, DotAlgorithmPreset):
    return precision
  if isinstance(precision, str):
    if precision in _precision_strings:
      p = Precision(precision)
      return (p, p)
    if precision in DotAlgorithmPreset.__members__:
      return DotAlgorithmPreset[precision]
    raise _precision_error(precision)
  if isinstance(precision, (tuple, list)) and len(precision) == 2:
    a, b = precision
    if isinstance(a, Precision) and isinstance(b, Precision):
      return (a, b)
    if isinstance(a, str) and isinstance(b, str) and a in _precision_strings and b in _precision_strings:
      return (Precision(a), Precision(b))
  raise _precision_error(precision)


# --- dtype rule --------------------------------------------------------------------------
def _bits(d):
  """Bit width as XLA counts it: bool is 1 bit, complex counts its real component."""
  if d == dtypes.bool_:
    return 1
  if dtypes.is_complex(d):
    return d.itemsize * 4
  if d.name in ("int4", "uint4"):
    return 4
  if d.name in ("int2", "uint2"):
    return 2
  return d.itemsize * 8


def _precision_rank(d):
  """Sort key of XLA's HigherPrecisionType (larger is higher)."""
  cplx = dtypes.is_complex(d)
  real = np.dtype(np.float32 if d == dtypes.complex64 else np.float64) if cplx else d
  if dtypes.is_float(real):
    fi = dtypes.finfo(real)
    maxexp, nmant = int(fi.maxexp), int(fi.nmant)
  else:
    maxexp = nmant = -1
  return (cplx, maxexp, nmant, _bits(real), not dtypes.is_unsigned(real))


@functools.lru_cache(maxsize=1024)
def dot_result_dtype(lhs_dtype, rhs_dtype, preferred_element_type=None, check_bit_width=True):
  """The output dtype of dot_general (shared with other contraction primitives)."""
  if lhs_dtype == rhs_dtype:
    result = lhs_dtype
  else:
    lk, rk = _precision_rank(lhs_dtype), _precision_rank(rhs_dtype)
    if lk > rk:
      result = lhs_dtype
    elif rk > lk:
      result = rhs_dtype
    else:
      raise TypeError(f"lax.dot_general argument type error: {lhs_dtype.name}, {rhs_dtype.name}")
  pref = preferred_element_type
  if pref is None or pref == result:
    return result
  if check_bit_width and not dtypes.is_float(result) and _bits(pref) < _bits(result):
    raise TypeError("`preferred_element_type` must not be narrower than the original type, "
                    f"got preferred_element_type of {pref.name} for result type of "
                    f"{result.name}.")
  return pref


# --- shape rule --------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _dot_general_shape(lhs_shape, rhs_shape, dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  for side, shape, b, c in (("lhs", lhs_shape, lb, lc), ("rhs", rhs_shape, rb, rc)):
    n = len(shape)
    if not all(0 <= d < n for d in b + c):
      raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative and "
                      f"less than the number of axes of the {side} value, got {side}_batch of "
                      f"{b} and {side}_contracting of {c} for {side} of rank {n}")
  if len(lb) != len(rb):
    raise TypeError("dot_general requires equal numbers of lhs_batch and rhs_batch "
                    f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
  for side, dims in (("lhs", lb), ("rhs", rb)):
    if len(set(dims)) != len(dims):
      raise TypeError(f"dot_general requires {side} batch dimensions to be distinct, got "
                      f"{side}_batch {dims}.")
  for side, dims in (("lhs", lc), ("rhs", rc)):
    if len(set(dims)) != len(dims):
      raise TypeError(f"dot_general requires {side} contracting dimensions to be distinct, "
                      f"got {side}_contracting {dims}.")
  for side, b, c in (("lhs", lb, lc), ("rhs", rb, rc)):
    if set(b) & set(c):
      raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                      f"contracting dimensions, got {side}_batch {b} and {side}_contracting "
                      f"{c}.")
  lbs = tuple(lhs_shape[d] for d in lb)
  rbs = tuple(rhs_shape[d] for d in rb)
  if lbs != rbs:
    raise TypeError("dot_general requires lhs batch dimensions and rhs batch dimensions to "
                    f"have the same shape, got {lbs} and {rbs}.")
  lcs = tuple(lhs_shape[d] for d in lc)
  rcs = tuple(rhs_shape[d] for d in rc)
  if lcs != rcs:
    raise TypeError("dot_general requires contracting dimensions to have the same shape, "
                    f"got {lcs} and {rcs}.")
  lfree = tuple(s for i, s in enumerate(lhs_shape) if i not in lb and i not in lc)
  rfree = tuple(s for i, s in enumerate(rhs_shape) if i not in rb and i not in rc)
  return lbs + lfree + rfree


# --- the primitive -----------------------------------------------------------------------
dot_general_p = core.Primitive("dot_general")
dot_general_p.arg_names = ("lhs", "rhs")


@dot_general_p.def_abstract_eval
def _dot_general_abstract(lhs, rhs, *, dimension_numbers, precision=None,
                          preferred_element_type=None, out_sharding=None):
  shape = _dot_general_shape(lhs.shape, rhs.shape, dimension_numbers)
  dtype = dot_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type,
                           check_bit_width=not isinstance(precision, DotAlgorithmPreset))
  return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _fmt_dims(dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  return f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))"


def _dot_general_printer(params):
  out = {"dimension_numbers": _fmt_dims(params["dimension_numbers"])}
  for k in ("precision", "preferred_element_type", "out_sharding"):
    v = params.get(k)
    if v is not None and v is not LIKE_PRIMAL:
      out[k] = v
  return out


dot_general_p.param_printer = _dot_general_printer


# --- public functions --------------------------------------------------------------------
def _aval_of(x, fun_name, pos):
  try:
    if isinstance(x, (list, tuple)):
      raise TypeError
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Error interpreting argument to {fun_name} as a JAX value. The "
                    f"problematic value is of type {type(x)} and was passed to {fun_name} at "
                    f"position {pos}.\n") from None


def _dims_tuple(d):
  if isinstance(d, np.ndarray):
    d = d.tolist()
  if isinstance(d, (list, tuple, range)):
    return tuple(operator.index(i) for i in d)
  return (operator.index(d),)


def canonicalize_dimension_numbers(dimension_numbers):
  """((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)) as tuples of ints."""
  (lc, rc), (lb, rb) = dimension_numbers
  return ((_dims_tuple(lc), _dims_tuple(rc)), (_dims_tuple(lb), _dims_tuple(rb)))


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                *, out_sharding=None):
  """General contraction (XLA DotGeneral).  ``out_sharding`` (a NamedSharding, or a
  PartitionSpec under a context mesh) is the result's sharding type (see
  ``pyjax._src.sharding_types``).  Mixed operand dtypes follow XLA's higher-precision
  rule."""
  _aval_of(lhs, "dot_general", 0)
  _aval_of(rhs, "dot_general", 1)
  dims = canonicalize_dimension_numbers(dimension_numbers)
  pref = dtypes.check_user_dtype(preferred_element_type, "dot")
  if out_sharding is not None:
    from pyjax._src.out_sharding import resolve_out_sharding
    out_sharding = resolve_out_sharding(out_sharding, "dot_general")
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                            precision=canonicalize_precision(precision),
                            preferred_element_type=pref, out_sharding=out_sharding)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
  """Vector/matrix dot product (or ``dot_general`` when ``dimension_numbers`` is given).
  As in JAX 0.10, every argument after ``rhs`` is keyword-only."""
  if dimension_numbers is not None:
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                       out_sharding=out_sharding)
  la = _aval_of(lhs, "dot_general", 0)
  ra = _aval_of(rhs, "dot_general", 1)
  if 1 <= la.ndim <= 2 and 1 <= ra.ndim <= 2 and la.shape[-1] == ra.shape[0]:
    dims = (((la.ndim - 1,), (0,)), ((), ()))
    pref = dtypes.check_user_dtype(preferred_element_type, "dot")
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=pref, out_sharding=None)
  raise ValueError("jax.lax.dot: dimension_numbers must be specified when not performing "
                   "simple un-batched matrix-matrix, matrix-vector, or vector-vector "
                   f"products; got lhs_shape={la.shape} rhs_shape={ra.shape}")


def batch_matmul(lhs, rhs, precision=None):
  """Batched matrix product: leading dimensions are batch dimensions."""
  la = _aval_of(lhs, "dot_general", 0)
  ra = _aval_of(rhs, "dot_general", 1)
  if min(la.ndim, ra.ndim) < 2:
    raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {la.ndim}, {ra.ndim}")
  if la.ndim != ra.ndim:
    raise ValueError(f"Arguments to batch_matmul must have same ndim, got {la.ndim}, {ra.ndim}")
  batch = tuple(range(la.ndim - 2))
  return dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)),
                     precision=precision)


# --- differentiation rules ----------------------------------------------------------------
# dot_general is bilinear: JVP = dot(t_lhs, rhs) + dot(lhs, t_rhs); each transpose is a
# dot_general of the cotangent with the other operand followed by a transpose (JAX's
# formulas), cast to the operand's dtype.
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _ad_aval(x):
  return x.aval if _ad.is_undefined_primal(x) else core.get_aval(x)


def _ranges_like(*xs):
  start = 0
  for x in xs:
    n = len(x)
    yield tuple(range(start, start + n))
    start += n


def _remaining(original, *removed_lists):
  removed = set()
  for r in removed_lists:
    removed.update(r)
  return [i for i in original if i not in removed]


class _LikePrimal:
  """``out_sharding`` of a transposed ``dot_general``: the result is laid out as the primal
  operand it is the cotangent of.  JAX passes that operand's sharding type; pyjax's avals
  carry none, so the end-of-trace sharding-type walk (``sharding_types``) sums the
  contracted mesh axes away instead of raising for sharded contracting dimensions (JAX
  raises there only when the primal has no mesh type).  Prints as ``None``; every
  implementation ignores it, as it ignores ``None``."""
  __slots__ = ()

  def __repr__(self):
    return "None"

  def __reduce__(self):
    return "LIKE_PRIMAL"


LIKE_PRIMAL = _LikePrimal()


def _dot_transpose_lhs(g, x_aval, y, *, dimension_numbers, precision, preferred_element_type=None,
                       swap_ans=False):
  from pyjax._src.lax import shapes as _shapes
  from pyjax._src.lax import elementwise as _ew
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_ndim = len(x_aval.shape)
  y_ndim = len(core.get_aval(y).shape)
  x_kept = _remaining(range(x_ndim), x_contract, x_batch)
  y_kept = _remaining(range(y_ndim), y_contract, y_batch)
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
  x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
  out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
  d = dot_general_p.bind(g, y, dimension_numbers=dims, precision=precision,
                         preferred_element_type=preferred_element_type,
                         out_sharding=LIKE_PRIMAL)
  perm = tuple(int(i) for i in out_axes)
  if perm != tuple(range(len(perm))):
    d = _shapes.transpose_p.bind(d, permutation=perm)
  if core.get_aval(d).dtype != x_aval.dtype:
    d = _ew.convert_element_type_p.bind(d, new_dtype=x_aval.dtype, weak_type=x_aval.weak_type,
                                        sharding=None)
  return d


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision=None,
                           preferred_element_type=None, out_sharding=None):
  if _ad.is_undefined_primal(lhs) and _ad.is_undefined_primal(rhs):
    raise ValueError("dot_general is not linear in both operands at once")
  if _ad.is_undefined_primal(lhs):
    return [_dot_transpose_lhs(ct, lhs.aval, rhs, dimension_numbers=dimension_numbers,
                               precision=precision,
                               preferred_element_type=preferred_element_type), None]
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  return [None, _dot_transpose_lhs(ct, rhs.aval, lhs, dimension_numbers=swapped,
                                   precision=precision,
                                   preferred_element_type=preferred_element_type,
                                   swap_ans=True)]


_ad.defjvp(dot_general_p,
           lambda g, lhs, rhs, **params: dot_general_p.bind(g, rhs, **params),
           lambda g, lhs, rhs, **params: dot_general_p.bind(lhs, g, **params))
_ad.primitive_transposes[dot_general_p] = _dot_general_transpose


# --- batching rules -----------------------------------------------------------------------
# Both operands batched: the batch dimension becomes a new leading dot_general batch
# dimension.  One operand batched: it is a free dimension of that operand, and the result
# keeps it where dot_general puts that operand's free dimensions.
from pyjax._src.interpreters import batching as _bt  # noqa: E402


def _bump(dims, b):
  return tuple(int(d) + 1 if d >= b else int(d) for d in dims)


def _dot_general_batch(args, dims, *, dimension_numbers, **params):
  lhs, rhs = args
  lbd, rbd = dims
  (lc, rc), (lb, rb) = dimension_numbers
  nm = _bt.not_mapped
  if lbd is not nm and rbd is not nm:
    new_dn = ((_bump(lc, lbd), _bump(rc, rbd)), ((lbd,) + _bump(lb, lbd), (rbd,) + _bump(rb, rbd)))
    out_d = 0
  elif lbd is not nm:
    nd = len(core.get_aval(lhs).shape) - 1
    free = [d for d in range(nd) if d not in lc and d not in lb]
    out_d = len(lb) + sum(1 for d in free if d < lbd)
    new_dn = ((_bump(lc, lbd), tuple(rc)), (_bump(lb, lbd), tuple(rb)))
  else:
    lnd = len(core.get_aval(lhs).shape)
    nd = len(core.get_aval(rhs).shape) - 1
    free = [d for d in range(nd) if d not in rc and d not in rb]
    out_d = lnd - len(lc) + sum(1 for d in free if d < rbd)
    new_dn = ((tuple(lc), _bump(rc, rbd)), (tuple(lb), _bump(rb, rbd)))
  return dot_general_p.bind(lhs, rhs, dimension_numbers=new_dn, **params), out_d


_bt.primitive_batchers[dot_general_p] = _dot_general_batch
