"""Pallas' user-facing types and kernel-side functions (``jax.experimental.pallas``).

Block specifications (``BlockSpec`` with ``Blocked`` / ``Element`` / ``Squeezed`` /
``BoundedSlice`` dimensions, ``None`` meaning ``Squeezed``), ``GridSpec``, memory spaces
(``MemorySpace``, ``MemoryRef``), the grid environment a kernel is traced in
(``program_id``, ``num_programs``) and the helpers kernels call (``when``, ``loop``,
``run_scoped``, ``cdiv``, ``multiple_of``).

How pyjax represents a kernel: ``pallas_call`` traces it with Ref-typed variables
(``stateful.py``: ``program_id(axis)`` stages a ``program_id`` equation, as in JAX), then
discharges that jaxpr with ``pyjax._src.state`` boxes into a pure function of the grid
position (one int32 per grid axis), the scalar-prefetch operands and the blocks of the
inputs, outputs and scratch buffers, returning the blocks' final values; while the boxes
trace (discharge, or a kernel ``stateful.py`` does not model) ``program_id(axis)`` is
that function's input for the axis.  ``num_programs(axis)`` is the
grid size (a Python int, as JAX returns for a static grid).
"""
from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Any

import numpy as np

from pyjax._src import core
from pyjax._src.avals import ShapedArray


# --- memory spaces --------------------------------------------------------------------------
class MemorySpace(enum.Enum):
  """Logical memory spaces (``pl.MemorySpace``).  On CPU every space is host memory; a
  ``MemorySpace`` called with ``(shape, dtype)`` gives a ``MemoryRef`` (a scratch buffer
  type for ``scratch_shapes`` / ``run_scoped``)."""
  ANY = "any"
  DEFAULT = "default"
  ERROR = "error"
  INDEX = "index"
  KEY = "key"
  HOST = "host"

  def __call__(self, shape, dtype):
    return MemoryRef(tuple(shape), np.dtype(dtype), self)

  def __str__(self):
    return self.value


@dataclasses.dataclass(frozen=True)
class MemoryRef:
  """The type of a buffer of ``shape`` and ``dtype`` in ``memory_space`` (scratch shapes,
  ``run_scoped`` allocations)."""
  shape: tuple
  dtype: Any
  memory_space: Any = None

  def get_array_aval(self):
    return ShapedArray(tuple(self.shape), np.dtype(self.dtype))


# --- block dimensions -----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Element:
  """A block dimension indexed by element: the index map returns the start element, not
  the block number (``padding``: (low, high) elements of padding added to the operand)."""
  block_size: int
  padding: tuple = (0, 0)

  def __str__(self):
    if self.padding == (0, 0):
      return f"Element({self.block_size})"
    return f"Element({self.block_size}, padding={self.padding})"


@dataclasses.dataclass(frozen=True)
class Squeezed:
  """A block dimension of size 1 that the kernel does not see (``None`` in a block
  shape)."""


squeezed = Squeezed()


@dataclasses.dataclass(frozen=True)
class Blocked:
  """A block dimension of ``block_size`` elements indexed by block number (what an int in a
  block shape means)."""
  block_size: int

  def __str__(self):
    return f"Blocked({self.block_size})"


@dataclasses.dataclass(frozen=True)
class BoundedSlice:
  """A block dimension whose index map returns a ``pl.ds`` of at most ``block_size``
  elements.  As in JAX's interpret mode, running such a block spec raises
  ``ValueError`` (unsupported block dim type)."""
  block_size: int

  def __repr__(self):
    return f"BoundedSlice({self.block_size})"


@dataclasses.dataclass(frozen=True)
class Buffered:
  """``pipeline_mode=pl.Buffered(n)``: the number of buffers a pipelining backend uses;
  accepted and ignored on CPU (there is no pipelining)."""
  buffer_count: int
  use_lookahead: bool = False


def _canonical_dim(d):
  if d is None:
    return squeezed
  if isinstance(d, (Squeezed, Blocked, Element, BoundedSlice)):
    return d
  if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
    return Blocked(int(d))
  try:
    return Blocked(int(d))
  except Exception as e:
    raise ValueError(
        f"Unsupported block dimension type: {type(d)}. Allowed types: `pl.Squeezed`, "
        "`pl.Blocked`, `pl.Element`, `int`, `None`.") from e


def dim_size(d):
  return 1 if isinstance(d, Squeezed) else d.block_size


def _default_index_map(ndim):
  return lambda *args: (0,) * ndim


class _IndexMapFunc:
  """An index map (a user function); equal when the wrapped functions are."""

  def __init__(self, index_map):
    self.index_map = index_map
    for a in ("__name__", "__qualname__", "__module__", "__doc__", "__wrapped__"):
      if hasattr(index_map, a):
        try:
          setattr(self, a, getattr(index_map, a))
        except (AttributeError, TypeError):
          pass
    self.__wrapped__ = index_map

  def __eq__(self, other):
    if not isinstance(other, _IndexMapFunc):
      return NotImplemented
    return self.index_map == other.index_map

  def __hash__(self):
    return hash(self.index_map)

  def __call__(self, *args):
    out = self.index_map(*args)
    if isinstance(out, list):
      out = tuple(out)
    if not isinstance(out, tuple):
      out = (out,)
    return out

  def __repr__(self):
    return f"_IndexMapFunc({self.index_map!r})"


@dataclasses.dataclass
class BlockSpec:
  """How each kernel invocation sees an operand: a block of ``block_shape`` (ints,
  ``None``, or ``pl.Blocked``/``pl.Element``/``pl.Squeezed``/``pl.BoundedSlice``) at the
  position ``index_map(*grid_indices, *scalar_prefetch_refs)`` returns (block numbers for
  ``Blocked`` dimensions, element offsets for ``Element`` ones).  ``block_shape=None``:
  the whole array; ``index_map=None``: all zeros.  ``memory_space`` and
  ``pipeline_mode`` are accepted; they change nothing on CPU."""
  block_shape: Any = None
  index_map: Any = None
  memory_space: Any = dataclasses.field(kw_only=True, default=None)
  pipeline_mode: Any = None

  def __post_init__(self):
    if self.index_map is not None and not isinstance(self.index_map, _IndexMapFunc):
      self.index_map = _IndexMapFunc(self.index_map)

  replace = dataclasses.replace


class NoBlockSpec:
  def __repr__(self):
    return "NoBlockSpec"


no_block_spec = NoBlockSpec()


class GridSpec:
  """``grid``, ``in_specs``, ``out_specs`` and ``scratch_shapes`` of a ``pallas_call`` in
  one object (``pl.GridSpec``)."""

  def __init__(self, grid=(), in_specs=no_block_spec, out_specs=no_block_spec,
               scratch_shapes=()):
    if isinstance(in_specs, list):
      in_specs = tuple(in_specs)
    elif in_specs is not no_block_spec and not isinstance(in_specs, tuple):
      raise ValueError(f"`in_specs` must be a tuple or a list. Found: {in_specs}")
    if isinstance(out_specs, list):
      out_specs = tuple(out_specs)
    if isinstance(grid, (int, np.integer)):
      grid = (int(grid),)
    self.grid = tuple(grid) if grid is not None else ()
    self.grid_names = None
    self.in_specs = in_specs
    self.out_specs = out_specs
    self.scratch_shapes = tuple(scratch_shapes)

  def __repr__(self):
    return (f"GridSpec(grid={self.grid}, in_specs={self.in_specs}, "
            f"out_specs={self.out_specs}, scratch_shapes={self.scratch_shapes})")


@dataclasses.dataclass(frozen=True)
class CostEstimate:
  """``cost_estimate=``: flops, transcendentals and bytes accessed (recorded, unused on
  CPU)."""
  flops: int
  transcendentals: int
  bytes_accessed: int
  remote_bytes_transferred: int = 0


# --- the grid environment while a kernel is traced ------------------------------------------
class _Env(threading.local):
  def __init__(self):
    self.stack = []


_env = _Env()


class GridEnv:
  """The grid position (traced int32 scalars, one per grid axis the kernel sees) and the
  grid sizes, while a kernel is traced."""

  def __init__(self, ids, sizes):
    self.ids, self.sizes = ids, tuple(sizes)   # ids: a sequence (``program_id`` indexes it)

  def __enter__(self):
    _env.stack.append(self)
    return self

  def __exit__(self, *exc):
    _env.stack.pop()


def program_id(axis):
  """The kernel invocation's position along grid axis ``axis`` (an int32 scalar)."""
  env = _env.stack[-1] if _env.stack else None
  if env is None:
    raise ValueError("program_id can only be called inside a Pallas kernel (pallas_call).")
  try:
    return env.ids[axis]
  except IndexError:
    raise ValueError(f"Axis {axis} is out of bounds for grid {env.sizes}") from None


def num_programs(axis):
  """The size of the grid along ``axis`` (a Python int: pyjax grids are static)."""
  env = _env.stack[-1] if _env.stack else None
  if env is None:
    raise ValueError("num_programs can only be called inside a Pallas kernel "
                     "(pallas_call).")
  try:
    return env.sizes[axis]
  except IndexError:
    raise ValueError(f"Axis {axis} is out of bounds for grid {env.sizes}") from None


# --- helpers kernels call -------------------------------------------------------------------
def cdiv(a, b):
  """Ceiling division: ``(a + b - 1) // b`` for ints, ``lax.div(a + (b - 1), b)`` for
  arrays."""
  if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
    return (a + b - 1) // b
  import pyjax.lax as lax
  return lax.div(a + (b - 1), b)


def multiple_of(x, values):
  """A hint that ``x`` is a multiple of ``values``; returns ``x`` (pyjax's compiler does
  not use the hint)."""
  return x


def when(condition, /):
  """Decorator: call the decorated function when ``condition`` holds (a Python bool: at
  trace time; an array: ``lax.cond`` with an empty false branch)."""
  def deco(f):
    if isinstance(condition, (bool, np.bool_)):
      if condition:
        f()
      return None
    import pyjax.lax as lax
    lax.cond(condition, f, lambda: None)
    return None
  return deco


def _is_concrete(x):
  return isinstance(x, (int, np.integer)) or (
      not isinstance(x, core.Tracer) and hasattr(x, "shape"))


def loop(lower, upper, *, init_carry=None, step=1, unroll=None):
  """Decorator: run ``body(i)`` (or ``carry = body(i, carry)`` with ``init_carry``) for
  ``i`` in ``range(lower, upper, step)`` as a ``lax.fori_loop``; returns the final carry."""
  import pyjax.lax as lax
  import pyjax.numpy as jnp
  if all(isinstance(v, (int, np.integer)) for v in (lower, upper, step)):
    zero = 0
  else:
    t = jnp.result_type(lower, upper, step)
    lower, upper, step = (lax.convert_element_type(v, t) for v in (lower, upper, step))
    zero = jnp.array(0, dtype=t)

  def deco(body):
    if init_carry is None:
      fn = lambda i, _: body(lower + i * step)  # noqa: E731
    else:
      fn = lambda i, c: body(lower + i * step, c)  # noqa: E731
    return lax.fori_loop(zero, cdiv(upper - lower, step), fn, init_carry, unroll=unroll)
  return deco


def uninitialized_value(shape, dtype):
  """What JAX's interpret mode fills uninitialized buffers with: NaN for floats, the
  minimum for integers, False for booleans (0 for other dtypes)."""
  import pyjax.numpy as jnp
  dtype = np.dtype(dtype)
  if jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.complexfloating):
    return jnp.full(shape, np.nan, dtype)
  if jnp.issubdtype(dtype, jnp.integer):
    return jnp.full(shape, jnp.iinfo(dtype).min, dtype)
  if dtype == np.bool_:
    return jnp.full(shape, False, dtype)
  return jnp.full(shape, 0, dtype)


def _alloc_type_aval(t):
  if isinstance(t, MemoryRef) or hasattr(t, "get_array_aval"):
    return t.get_array_aval()
  if hasattr(t, "shape") and hasattr(t, "dtype"):
    return ShapedArray(tuple(t.shape), np.dtype(t.dtype))
  raise TypeError(f"run_scoped: cannot allocate a buffer of type {t!r}")


def run_scoped(f, *types, collective_axes=(), **kw_types):
  """Call ``f`` with new refs of the given types (``MemoryRef``s such as
  ``pltpu.VMEM((8, 128), jnp.float32)``), holding uninitialized values as in JAX's
  interpret mode, and return its result.  ``collective_axes`` must be empty."""
  if collective_axes:
    raise NotImplementedError("run_scoped interpret rule does not support collective axes")
  from pyjax._src.pallas import stateful
  if stateful.active():   # the kernel's stateful trace: a run_scoped equation
    return stateful.run_scoped(f, types, kw_types)
  from pyjax._src.state import primitives
  def new(t):
    a = _alloc_type_aval(t)
    return primitives.new_ref(uninitialized_value(a.shape, a.dtype))
  refs = [new(t) for t in types]
  kw = {k: new(t) for k, t in kw_types.items()}
  return f(*refs, **kw)


# --- small utilities (pl.align_to, ...) -----------------------------------------------------
def align_to(a, alignment):
  """``a`` rounded up to a multiple of ``alignment``."""
  return cdiv(a, alignment) * alignment


def next_power_of_2(x):
  """The smallest power of two >= ``x`` (1 for 0)."""
  if x < 0:
    raise ValueError("`next_power_of_2` requires a non-negative integer.")
  return 1 if x == 0 else 2 ** (x - 1).bit_length()


def strides_from_shape(shape):
  """Row-major strides of ``shape``, in elements."""
  size = int(np.prod(shape))
  out = []
  for s in shape:
    size = size // s
    out.append(int(size))
  return tuple(out)


def broadcast_to(a, shape):
  """``a`` broadcast to ``shape`` (``jnp.broadcast_to``)."""
  import pyjax.numpy as jnp
  a = jnp.asarray(a)
  return a if tuple(a.shape) == tuple(shape) else jnp.broadcast_to(a, shape)
