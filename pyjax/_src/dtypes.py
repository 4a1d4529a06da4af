"""dtypes and JAX's type-promotion lattice (leaf module).

Promotion follows JAX's documented lattice, including weak types: a Python scalar (or an
array created from one) is *weakly typed* and takes the dtype of the other operand where
the lattice allows it.  64-bit types are canonicalized to 32-bit unless x64 is enabled.
"""
from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from pyjax._src import config as _config


class TypePromotionError(ValueError):
  pass


# --- the dtypes -------------------------------------------------------------------------
bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
bfloat16_type = ml_dtypes.bfloat16   # the scalar type (what jax.dtypes.bfloat16 is)
int4, uint4 = np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)
int2 = np.dtype(ml_dtypes.int2) if hasattr(ml_dtypes, "int2") else None
uint2 = np.dtype(ml_dtypes.uint2) if hasattr(ml_dtypes, "uint2") else None

_float8_names = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                 "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                 "float4_e2m1fn"]
float8_dtypes = [np.dtype(getattr(ml_dtypes, n)) for n in _float8_names if hasattr(ml_dtypes, n)]
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

_custom_float_dtypes = [bfloat16, *float8_dtypes]
_sub_byte_int_dtypes = [d for d in (int2, int4) if d is not None]
_sub_byte_uint_dtypes = [d for d in (uint2, uint4) if d is not None]

signed_int_dtypes = [*_sub_byte_int_dtypes, int8, int16, int32, int64]
unsigned_int_dtypes = [*_sub_byte_uint_dtypes, uint8, uint16, uint32, uint64]
int_dtypes = signed_int_dtypes + unsigned_int_dtypes
float_dtypes = [*float8_dtypes, bfloat16, float16, float32, float64]
complex_dtypes = [complex64, complex128]
all_dtypes = [bool_, *int_dtypes, *float_dtypes, *complex_dtypes]

_float_set = frozenset(float_dtypes)
_int_set = frozenset(int_dtypes)
_complex_set = frozenset(complex_dtypes)
# the dtypes an array may hold (native byte order: '>f4' is not float32 and, as in JAX,
# not an array type; nor are object, string, datetime64 and timedelta64)
_array_dtype_set = frozenset(all_dtypes)


def is_array_dtype(d):
  """Whether NumPy dtype ``d`` is one a JAX array may hold."""
  return d in _array_dtype_set

# --- x64 canonicalization ---------------------------------------------------------------
_to_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonicalize_dtype(dtype, allow_extended=False):
  """The dtype JAX would use: 64-bit types become 32-bit unless x64 is enabled."""
  d = dtype if type(dtype) is np.dtype else np.dtype(dtype)
  if _config.x64_enabled:
    return d
  return _to_32.get(d, d)


def default_int_dtype():
  return int64 if _config.x64_enabled else int32


def default_uint_dtype():
  return uint64 if _config.x64_enabled else uint32


def default_float_dtype():
  return float64 if _config.x64_enabled else float32


def default_complex_dtype():
  return complex128 if _config.x64_enabled else complex64


python_scalar_types = (bool, int, float, complex)


def python_scalar_dtype(typ):
  """Canonical dtype of a Python scalar type (bool, int, float, complex)."""
  if typ is bool:
    return bool_
  if typ is int:
    return default_int_dtype()
  if typ is float:
    return default_float_dtype()
  if typ is complex:
    return default_complex_dtype()
  raise TypeError(f"{typ} is not a Python scalar type")


def is_python_scalar(x):
  return type(x) in (bool, int, float, complex) or (
      isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic))


def check_user_dtype(dtype, fun_name=None):
  """Canonicalize a user-requested dtype, warning like JAX when x64 drops it to 32 bits."""
  if dtype is None:
    return None
  d = to_numpy_dtype(dtype)
  c = canonicalize_dtype(d)
  if c != d and _config.config.jax_explicit_x64_dtypes == 2:   # ExplicitX64Mode.ERROR
    where = f" requested in {fun_name}" if fun_name else ""
    raise ValueError(f"Explicitly requested dtype {d.name}{where} is not available. To enable "
                     "more dtypes, set the jax_enable_x64 or allow_explicit_x64_dtypes "
                     "configuration options.See https://github.com/jax-ml/jax#current-gotchas "
                     "for more.")
  if c != d:   # every time, as JAX (the warnings filters decide what shows: once per place)
    msg = (f"Explicitly requested dtype {d.name} requested in {fun_name} is not available, "
           f"and will be truncated to dtype {c.name}. To enable more dtypes, set the "
           "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
           "variable. See https://github.com/jax-ml/jax#current-gotchas for more.")
    if fun_name is None:
      msg = msg.replace(" requested in None", "")
    warnings.warn(msg, UserWarning, stacklevel=3)
  return c


def to_numpy_dtype(dtype):
  """np.dtype of a dtype-like: strings, NumPy/ml_dtypes types, Python types, pyjax scalar types."""
  if type(dtype) is np.dtype:
    return dtype
  if dtype is None:
    raise TypeError("dtype must not be None")
  np_dt = getattr(dtype, "dtype", None)
  if isinstance(dtype, type):
    if dtype is int:
      return default_int_dtype()
    if dtype is float:
      return default_float_dtype()
    if dtype is complex:
      return default_complex_dtype()
    if dtype is bool:
      return bool_
    sub = getattr(dtype, "_pyjax_dtype", None)  # pyjax.numpy scalar types (jnp.float32)
    if sub is not None:
      return sub
  elif isinstance(np_dt, np.dtype):
    return np_dt
  if isinstance(dtype, str):
    named = _by_name.get(dtype)
    if named is not None:
      return named
  try:
    return np.dtype(dtype)
  except TypeError as e:
    raise TypeError(f"data type {dtype!r} not understood") from e


_by_name = {d.name: d for d in all_dtypes}
_by_name.update({"bf16": bfloat16})


def dtype(x, *, canonicalize=False):
  """The dtype of a value or dtype-like (``jnp.dtype`` semantics for values too)."""
  if type(x) in python_scalar_types:
    d = python_scalar_dtype(type(x))
    return d
  d = getattr(x, "dtype", None)
  if isinstance(d, np.dtype):
    out = d
  elif isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
    out = python_scalar_dtype(type(x) if type(x) in python_scalar_types else
                              next(t for t in (bool, int, float, complex) if isinstance(x, t)))
  else:
    out = to_numpy_dtype(x)
  return canonicalize_dtype(out) if canonicalize else out


def has_extended_dtype(x):
  """Whether ``x`` (an array, tracer or aval) has an extended dtype: a typed PRNG key
  array (the dtypes that mark themselves ``_pyjax_extended``)."""
  return getattr(getattr(x, "dtype", None), "_pyjax_extended", False)


def is_weakly_typed(x):
  if type(x) in python_scalar_types:
    return True
  return bool(getattr(x, "weak_type", False))


class extended(np.generic):
  """Scalar class of extended dtypes (``jax.dtypes.extended``), e.g. PRNG key dtypes."""


class prng_key(extended):
  """Scalar class of PRNG key dtypes (``jax.dtypes.prng_key``)."""


def issubdtype(a, b):
  """np.issubdtype that knows bfloat16/float8 are floating, int4 is an integer, and
  extended dtypes (key<fry>) are subtypes of ``extended``/``prng_key`` only."""
  if getattr(a, "_pyjax_extended", False) or getattr(b, "_pyjax_extended", False):
    if isinstance(b, type):
      return getattr(a, "_pyjax_extended", False) and issubclass(a.type, b)
    return a == b
  a = _as_generic_or_dtype(a)
  b = _as_generic_or_dtype(b)
  if isinstance(a, np.dtype) and a in _custom_float_dtypes or (a in (int4, uint4) if isinstance(a, np.dtype) else False) \
      or (isinstance(a, np.dtype) and a in (int2, uint2)):
    if isinstance(b, np.dtype):
      return a == b
    if a in _custom_float_dtypes:
      return b in (np.floating, np.inexact, np.number, np.generic)
    if a in _sub_byte_int_dtypes:
      return b in (np.signedinteger, np.integer, np.number, np.generic)
    return b in (np.unsignedinteger, np.integer, np.number, np.generic)
  if isinstance(b, np.dtype) and b in _custom_float_dtypes + [int4, uint4]:
    return a == b
  return np.issubdtype(a, b)


def _as_generic_or_dtype(x):
  if isinstance(x, type) and issubclass(x, np.generic) and x in (
      np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger, np.inexact,
      np.floating, np.complexfloating, np.bool_, np.character, np.flexible):
    return x
  sub = getattr(x, "_pyjax_abstract", None)
  if sub is not None:
    return sub
  try:
    return to_numpy_dtype(x)
  except TypeError:
    return x


def is_float(d):
  return d in _float_set


def is_int(d):
  return d in _int_set


def is_complex(d):
  return d in _complex_set


def is_inexact(d):
  return d in _float_set or d in _complex_set


def is_unsigned(d):
  return d in unsigned_int_dtypes


def kind_name(d):
  if d == bool_:
    return "bool"
  if d in _int_set:
    return "int"
  if d in _float_set:
    return "float"
  return "complex"


# --- the promotion lattice --------------------------------------------------------------
# Weak types are the lattice nodes for Python scalars: i* (int), f* (float), c* (complex).
_weak_int, _weak_float, _weak_complex = "i*", "f*", "c*"
_weak_nodes = (_weak_int, _weak_float, _weak_complex)
_weak_default = {_weak_int: default_int_dtype, _weak_float: default_float_dtype,
                 _weak_complex: default_complex_dtype}


def _lattice_edges():
  edges = {
      bool_: [_weak_int, *_sub_byte_int_dtypes, *_sub_byte_uint_dtypes],
      uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64],
      uint64: [_weak_float],
      _weak_int: [uint8, int8],
      int8: [int16], int16: [int32], int32: [int64], int64: [_weak_float],
      _weak_float: [*float8_dtypes, bfloat16, float16, _weak_complex],
      bfloat16: [float32], float16: [float32], float32: [float64, complex64],
      float64: [complex128],
      _weak_complex: [complex64], complex64: [complex128], complex128: [],
  }
  for d in float8_dtypes + _sub_byte_int_dtypes + _sub_byte_uint_dtypes:
    edges.setdefault(d, [])
  return edges


def _compute_upper_bounds():
  edges = _lattice_edges()
  ub = {}
  for node in edges:
    seen, stack = {node}, [node]
    while stack:
      n = stack.pop()
      for m in edges[n]:
        if m not in seen:
          seen.add(m)
          stack.append(m)
    ub[node] = seen
  return ub


_upper_bounds = _compute_upper_bounds()


def _node(d, weak):
  if weak and d != bool_:
    if d in _int_set:
      return _weak_int
    if d in _float_set:
      return _weak_float
    if d in _complex_set:
      return _weak_complex
  return d


@functools.lru_cache(maxsize=4096)
def _least_upper_bound(nodes):
  nodes = tuple(nodes)
  if len(nodes) == 1:
    return nodes[0]
  common = set.intersection(*(_upper_bounds[n] for n in nodes))
  lub = [c for c in common if common <= _upper_bounds[c]]
  if len(lub) == 1:
    return lub[0]
  names = tuple(n if isinstance(n, str) else n.name for n in nodes)
  if any(n in float8_dtypes for n in nodes if isinstance(n, np.dtype)):
    msg = ("To avoid unintended promotion, 8-bit floats do not support implicit promotion. "
           "If you'd like your inputs to be promoted to another type, you can do so "
           "explicitly using e.g. x.astype('float32')")
  elif any(n in _sub_byte_int_dtypes + _sub_byte_uint_dtypes for n in nodes if isinstance(n, np.dtype)):
    msg = ("To avoid unintended promotion, 4-bit integers do not support implicit promotion. "
           "If you'd like your inputs to be promoted to another type, you can do so "
           "explicitly using e.g. x.astype('int32')")
  else:
    msg = ("You may be attempting to promote incompatible types, which is not supported by "
           "this package.")
  raise TypePromotionError(
      f"Input dtypes {tuple(str(n) for n in names)} have no available implicit dtype promotion path. {msg}")


def _strict_upper_bounds():
  # jax_numpy_dtype_promotion='strict': a weak node (a Python scalar's type) may become any
  # dtype of its kind or the next weak kind (int -> float -> complex); a strongly typed
  # dtype promotes to nothing but itself
  ints = [d for d in int_dtypes]
  floats = [d for d in float_dtypes]
  edges = {_weak_int: [_weak_float, *ints], _weak_float: [_weak_complex, *floats],
           _weak_complex: list(complex_dtypes)}
  ub = {}
  for node in (*_weak_nodes, bool_, *ints, *floats, *complex_dtypes):
    seen, stack = {node}, [node]
    while stack:
      for m in edges.get(stack.pop(), ()):
        if m not in seen:
          seen.add(m)
          stack.append(m)
    ub[node] = seen
  return ub


_strict_ubs = _strict_upper_bounds()
_weak_node_names = {_weak_int: "<class 'int'>", _weak_float: "<class 'float'>",
                    _weak_complex: "<class 'complex'>"}


def _strict_least_upper_bound(nodes, ordered):
  """The least upper bound of ``nodes`` on JAX's strict promotion lattice, or
  TypePromotionError (naming the input nodes as JAX does) when there is none."""
  if len(nodes) == 1:
    return next(iter(nodes))
  common = set.intersection(*(_strict_ubs.get(n, {n}) for n in nodes))
  lub = (common & set(nodes)) or {c for c in common if common <= _strict_ubs.get(c, {c})}
  if len(lub) == 1:
    return lub.pop()
  names = []
  for n in ordered:
    name = _weak_node_names.get(n) or str(n)
    if name not in names:
      names.append(name)
  raise TypePromotionError(
      f"Input dtypes {tuple(names)} have no available implicit dtype promotion path when "
      "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
      "type, or set jax_numpy_dtype_promotion=standard.")


def _dtype_and_weak(x):
  t = type(x)
  if t in python_scalar_types:
    return python_scalar_dtype(t), t is not bool
  if isinstance(x, np.dtype):
    return x, False
  d = getattr(x, "dtype", None)
  if isinstance(d, np.dtype):
    return d, bool(getattr(x, "weak_type", False))
  if isinstance(x, (bool, int, float, complex)):
    return dtype(x), not isinstance(x, bool)
  return to_numpy_dtype(x), False


def lattice_result_type(*args):
  """(dtype, weak_type) of promoting args (values, dtypes or (dtype, weak) pairs)."""
  if not args:
    raise ValueError("at least one array or dtype is required")
  pairs = [a if type(a) is tuple else _dtype_and_weak(a) for a in args]
  if len(pairs) == 1:
    d, w = pairs[0]
    return canonicalize_dtype(d), w and d != bool_
  ds = {p[0] for p in pairs}
  if len(ds) == 1 and not all(p[1] for p in pairs):
    d = next(iter(ds))
    return canonicalize_dtype(d), False
  strict = _config.config.jax_numpy_dtype_promotion == "strict"
  if all(p[1] for p in pairs) and not strict:
    nodes = frozenset(_node(d, False) for d, _ in pairs)
    out = _least_upper_bound(tuple(sorted(nodes, key=str)))
    weak = True
  else:
    nodes = frozenset(_node(d, w) for d, w in pairs)
    if strict:
      out = _strict_least_upper_bound(nodes, tuple(_node(d, w) for d, w in pairs))
    else:
      out = _least_upper_bound(tuple(sorted(nodes, key=str)))
    weak = isinstance(out, str)
  if isinstance(out, str):
    out = _weak_default[out]()
  out = canonicalize_dtype(out)
  return out, weak and out != bool_


def result_type(*args, return_weak_type_flag=False):
  """jnp.result_type: the dtype of promoting the given values/dtypes (weak types honoured).
  Values of one extended dtype (key arrays) give that dtype, as in JAX; an extended dtype
  does not promote with anything else."""
  ext = [getattr(a, "dtype", None) for a in args]
  if any(getattr(d, "_pyjax_extended", False) for d in ext):
    d = ext[0]
    if all(e == d for e in ext):
      return (d, False) if return_weak_type_flag else d
    bad = next(e for e in ext if getattr(e, "_pyjax_extended", False))
    raise ValueError(f"dtype={bad} is not a valid dtype for JAX type promotion.")
  d, w = lattice_result_type(*args)
  return (d, w) if return_weak_type_flag else d


def promote_types(a, b):
  """jnp.promote_types: promotion of two dtypes (never weak)."""
  da, db = to_numpy_dtype(a), to_numpy_dtype(b)
  if _config.config.jax_numpy_dtype_promotion == "strict":   # as JAX: the strict lattice
    return np.dtype(_strict_least_upper_bound(frozenset((da, db)), (da, db)))
  nodes = tuple(sorted({da, db}, key=str))
  out = _least_upper_bound(nodes)
  if isinstance(out, str):  # weak nodes become 64-bit types
    out = {_weak_int: int64, _weak_float: float64, _weak_complex: complex128}[out]
  out = np.dtype(out)
  # JAX keeps a 64-bit result only when an input was 64-bit (else it canonicalizes)
  if not _config.x64_enabled and out in _to_32 and da not in _to_32 and db not in _to_32:
    out = _to_32[out]
  return out


_int_to_inexact = {bool_: float32, int8: float32, uint8: float32, int16: float32,
                   uint16: float32, int32: float32, uint32: float32, int64: float64,
                   uint64: float64, int4: float32, uint4: float32}


def to_inexact_dtype(d):
  """The inexact dtype JAX moves an integer/bool dtype to (e.g. for jnp.sqrt): 8-32 bit
  integers and bool go to float32, 64-bit ones to float64; then x64 canonicalization."""
  if d in _float_set or d in _complex_set:
    return d
  return canonicalize_dtype(_int_to_inexact.get(d, float32))


def to_complex_dtype(d):
  if d in _complex_set:
    return d
  f = to_inexact_dtype(d)
  return canonicalize_dtype(complex128 if f == float64 else complex64)


# ``jnp.finfo``/``jnp.iinfo`` are ml_dtypes' classes, as in JAX: ``isinstance`` works, the
# attribute set is NumPy's, bfloat16/float8/float4/int4 are covered, and the argument is
# taken as NumPy takes it (``finfo(float)`` is float64 whatever x64 says; ``finfo(bfloat16)``
# is a plain ``np.finfo`` instance, as JAX's is).
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo


def itemsize_bits(dtype) -> int:
  """Bits per element of ``dtype`` (``jax.dtypes.itemsize_bits``): 4 for int4 and
  float4, 8 for bool (its storage), twice the component's for complex types."""
  if dtype is None:
    raise ValueError("dtype cannot be None.")
  if dtype == np.dtype(bool):
    return 8
  if issubdtype(dtype, np.integer):
    return int(iinfo(dtype).bits)
  if issubdtype(dtype, np.floating):
    return int(finfo(dtype).bits)
  if issubdtype(dtype, np.complexfloating):
    return 2 * int(finfo(dtype).bits)
  raise ValueError(f"unexpected input: {dtype=}")


def scalar_type_of(x) -> type:
  """The Python scalar type (bool, int, float or complex) of a value's dtype
  (``jax.dtypes.scalar_type_of``): float for bfloat16/float8, int for int4."""
  from pyjax._src.lax.elementwise import dtype as value_dtype   # (jax.dtypes.dtype)
  d = value_dtype(x)
  if d in _custom_float_dtypes:
    return float
  if d == bool_:
    return bool
  if issubdtype(d, np.integer):
    return int
  if issubdtype(d, np.floating):
    return float
  if issubdtype(d, np.complexfloating):
    return complex
  raise TypeError(f"Invalid scalar value {x}")


_short = {bool_: "bool", bfloat16: "bf16"}


def short_dtype_name(d):
  """Jaxpr names: f32, i32, u8, bf16, bool, c64, f8_e4m3fn, ..."""
  s = _short.get(d)
  if s is not None:
    return s
  name = d.name
  if name.startswith("float8_") or name.startswith("float4_"):
    s = "f" + name[5:]
  elif name.startswith("float"):
    s = "f" + name[5:]
  elif name.startswith("uint"):
    s = "u" + name[4:]
  elif name.startswith("int"):
    s = "i" + name[3:]
  elif name.startswith("complex"):
    s = "c" + name[7:]
  else:
    s = name
  _short[d] = s
  return s


class float0_type:
  pass


# float0: the tangent dtype of integer/boolean primals (a zero-size void dtype, as in JAX).
float0 = np.dtype([("float0", np.void, 0)])


class ExtendedDType:
  """Base class of extended (non-NumPy) dtypes, JAX's ``dtypes.ExtendedDType``: a
  subclass gives ``type`` (a subclass of ``extended``), ``name`` and ``_rules``.  pyjax
  recognizes extended dtypes by ``_pyjax_extended`` (``issubdtype``)."""
  _pyjax_extended = True
  type = extended

  @property
  def name(self):
    return type(self).__name__


DType = np.dtype
