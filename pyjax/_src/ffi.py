"""``jax.ffi``: calling C functions from pyjax programs.

JAX's foreign function interface is XLA's typed FFI (C++ handlers bound with
``XLA_FFI_DEFINE_HANDLER``).  pyjax has no XLA, so it defines its own small C ABI, in
``pyjax_ffi.h`` (``include_dir()``; described in ``docs/ffi.md``)::

    int32_t my_target(PyjaxFfiCallFrame *frame);

The frame holds the argument and result buffers (data pointer, dtype code, rank, logical
dims, major-to-minor layout), the call's keyword attributes (int, float, bool, str, NumPy
arrays) and an error buffer.  A handler returns 0, or a status code after writing a
message (``pyjax_ffi_error``); pyjax raises ``JaxRuntimeError("<CODE>: <message>")``.

* ``register_ffi_target(name, fn, platform="cpu", api_version=1)``: ``fn`` is a ctypes
  function pointer (``ctypes.CDLL(path).my_target``), a PyCapsule holding one
  (``pycapsule``), a ``{"execute": capsule}`` dict, or an integer address.
* ``ffi_call(target_name, result_shape_dtypes, ...)(*args, **attributes)`` binds the
  ``ffi_call`` primitive (params as JAX's).  It runs eagerly, inside ``jit`` (on the
  compiled tier as a NumPy step that calls the C pointer), and under ``vmap`` according
  to ``vmap_method`` (``sequential``/``sequential_unrolled`` loop over the batch in a
  ``scan``; ``expand_dims`` gives unbatched arguments a size-1 leading axis;
  ``broadcast_all`` broadcasts them to the batch size; ``legacy_vectorized`` passes them
  as they are; ``None`` raises NotImplementedError, as JAX).  Not differentiable (JAX's
  ValueError).  ``has_side_effect=True`` gives the equation JAX's ``FFI`` effect, so it
  is never dropped.

Differs from JAX: the C ABI above instead of XLA FFI (``api_version`` must be 1,
``custom_call_api_version`` 4); dict attributes are rejected; there is no MLIR, so
``ffi_lowering``/``build_ffi_lowering_function`` and
``register_ffi_target_as_batch_partitionable`` do not exist; ``register_ffi_type`` is
not supported (pyjax has no opaque FFI types).
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.backends.cpu.eager import ffi as _backend
from pyjax._src.interpreters import ad

__all__ = ["ffi_call", "register_ffi_target", "register_ffi_type_id", "pycapsule",
           "include_dir", "ffi_call_p", "FfiEffect"]


class FfiEffect(core.Effect):
  """The effect of an ``ffi_call`` with ``has_side_effect=True`` (printed ``FFI``)."""

  def __init__(self):
    super().__init__("FFI")


_ffi_effect = FfiEffect()


# --- registration -------------------------------------------------------------------------
def _capsule_pointer(capsule):
  get_name = ctypes.pythonapi.PyCapsule_GetName
  get_name.restype = ctypes.c_char_p
  get_name.argtypes = [ctypes.py_object]
  get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
  get_ptr.restype = ctypes.c_void_p
  get_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
  return get_ptr(capsule, get_name(capsule))


def _address(fn):
  if isinstance(fn, dict):
    extra = sorted(set(fn) - {"execute"})
    if extra or "execute" not in fn:
      raise ValueError("pyjax FFI targets have a single 'execute' stage; got stages "
                       f"{sorted(fn)}")
    return _address(fn["execute"])
  if type(fn).__name__ == "PyCapsule":
    return _capsule_pointer(fn)
  if isinstance(fn, ctypes._CFuncPtr):   # noqa: SLF001  -- ctypes' function pointer type
    return ctypes.cast(fn, ctypes.c_void_p).value
  if isinstance(fn, ctypes.c_void_p):
    return fn.value
  if isinstance(fn, (int, np.integer)) and not isinstance(fn, bool):
    return int(fn)
  raise TypeError("register_ffi_target: fn must be a PyCapsule, a ctypes function pointer, "
                  f"a dict of stages or an integer address; got {type(fn).__name__}")


def register_ffi_target(name, fn, platform="cpu", api_version=1, **kwargs):
  """Register the C function ``fn`` (see the module docstring for what it may be) as FFI
  target ``name`` for ``platform``.  Differs from JAX: the function implements pyjax's
  call-frame ABI (``pyjax_ffi.h``), so ``api_version`` must be 1; platforms other than
  ``"cpu"`` (``"host"`` is the same) are recorded but no pyjax device calls them."""
  del kwargs
  if api_version != 1:
    raise ValueError(f"register_ffi_target: api_version={api_version} is not supported; "
                     "pyjax targets implement its call-frame ABI (api_version=1)")
  if not isinstance(name, str):
    raise TypeError(f"register_ffi_target: name must be a string, got {type(name).__name__}")
  addr = _address(fn)
  if not addr:
    raise ValueError("register_ffi_target: fn is a null pointer")
  plat = str(platform).lower()
  plat = "cpu" if plat == "host" else plat
  _backend.add_target(name, plat, addr, fn)


def register_ffi_type_id(name, obj, platform="cpu"):
  """Not supported, as in JAX 0.10 (which raises the same ValueError)."""
  raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def pycapsule(funcptr):
  """Wrap a ctypes function pointer (e.g. ``ctypes.CDLL(path).fn``) in a PyCapsule, as
  ``register_ffi_target`` accepts."""
  destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
  builder = ctypes.pythonapi.PyCapsule_New
  builder.restype = ctypes.py_object
  builder.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
  return builder(ctypes.cast(funcptr, ctypes.c_void_p).value, None, destructor(0))


def include_dir():
  """The directory holding ``pyjax_ffi.h``, pyjax's FFI header (pass it as ``-I``)."""
  return os.path.join(os.path.dirname(os.path.abspath(__file__)), "ffi_include")


# --- the primitive ------------------------------------------------------------------------
ffi_call_p = core.Primitive("ffi_call")
ffi_call_p.multiple_results = True


@ffi_call_p.def_effectful_abstract_eval
def _ffi_call_abstract(*avals, result_avals, has_side_effect, **_):
  del avals
  return list(result_avals), ({_ffi_effect} if has_side_effect else core.no_effects)


def _ffi_call_jvp(primals, tangents, *, target_name, **_):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. "
                   "You can use `jax.custom_jvp` or `jax.custom_jvp` to add support.")


def _ffi_call_transpose(cts, *args, target_name, **_):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. "
                   "You can use `jax.custom_jvp` or `jax.custom_jvp` to add support.")


ad.primitive_jvps[ffi_call_p] = _ffi_call_jvp
ad.primitive_transposes[ffi_call_p] = _ffi_call_transpose


class HashableArray:
  """A NumPy array attribute, hashed and compared by value (params must be hashable)."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = np.array(val, copy=True)
    self.val.setflags(write=False)

  def __hash__(self):
    return hash((self.val.shape, self.val.dtype.str, self.val.tobytes()))

  def __eq__(self, other):
    return (isinstance(other, HashableArray) and self.val.shape == other.val.shape
            and self.val.dtype == other.val.dtype and np.array_equal(self.val, other.val))

  def __repr__(self):
    return f"HashableArray({self.val!r})"


def _wrap_attributes(kwargs):
  out = []
  for k, v in sorted(kwargs.items()):
    if isinstance(v, np.ndarray):
      out.append((k, HashableArray(v)))
    elif isinstance(v, dict):
      raise TypeError(f"ffi_call: dict attribute {k!r} is not supported by pyjax's FFI")
    else:
      try:
        hash(v)
      except TypeError as e:
        raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v}") from e
      out.append((k, v))
  return tuple(out)


def _result_avals(results):
  avals = []
  for idx, r in enumerate(results):
    if not hasattr(r, "shape") or not hasattr(r, "dtype"):
      raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                       f"attributes. Got {r} at position {idx}.")
    dt = np.dtype(r.dtype)
    if dtypes.canonicalize_dtype(dt) != dt:
      dt = dtypes.canonicalize_dtype(dt)
    avals.append(ShapedArray(tuple(r.shape), dt))
  return tuple(avals)


def _default_layout(aval):
  return tuple(range(len(aval.shape) - 1, -1, -1))


def _layout(aval, layout):
  """A user layout (major-to-minor sequence, ``Layout``-like object or None) as the
  minor-to-major tuple stored in the params (JAX's convention)."""
  if layout is None:
    return _default_layout(aval)
  m2m = getattr(layout, "major_to_minor", None)
  if m2m is not None:
    if getattr(layout, "tiling", None) is not None:
      raise ValueError("The FFI does not support layouts with tiling")
    major = tuple(int(d) for d in m2m)
  else:
    major = tuple(int(d) for d in layout)
  if sorted(major) != list(range(len(aval.shape))):
    raise ValueError(f"ffi_call: layout {major} is not a permutation of the dimensions of "
                     f"{aval.str_short()}")
  return major[::-1]


_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None]


def ffi_call(target_name, result_shape_dtypes, *, has_side_effect=False, vmap_method=None,
             input_layouts=None, output_layouts=None, input_output_aliases=None,
             custom_call_api_version=4, legacy_backend_config=None):
  """A function calling FFI target ``target_name`` on its positional (array) arguments,
  with its keyword arguments as attributes, returning arrays described by
  ``result_shape_dtypes`` (one object with ``shape``/``dtype``, or a sequence: then a
  list, or a tuple for a tuple).  Layouts are major-to-minor per argument/result; the
  target receives buffers in those memory orders.  See the module docstring for
  ``vmap_method`` and how pyjax differs from JAX."""
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, "
                     f"but got: {vmap_method}")
  if isinstance(result_shape_dtypes, (list, tuple)):
    multiple = True
    result_avals = _result_avals(result_shape_dtypes)
    out_layouts = output_layouts
  else:
    multiple = False
    result_avals = _result_avals([result_shape_dtypes])
    out_layouts = (output_layouts,)
  if custom_call_api_version >= 4 and legacy_backend_config is not None:
    raise ValueError("The use of the legacy_backend_config parameter requires "
                     f"custom_call_api_version < 4; got {custom_call_api_version}.")
  if custom_call_api_version != 4:
    raise ValueError("ffi_call: pyjax supports custom_call_api_version=4 only (its typed "
                     f"call frame); got {custom_call_api_version}")

  def wrapped(*args, **kwargs):
    in_avals = [core.get_aval(x) for x in args]
    if input_layouts is None:
      in_l = tuple(_default_layout(a) for a in in_avals)
    else:
      if len(input_layouts) != len(in_avals):
        raise ValueError(f"The number of input arguments ({len(in_avals)}) must equal the "
                         f"number of input layouts ({len(input_layouts)}).")
      in_l = tuple(_layout(a, lay) for a, lay in zip(in_avals, input_layouts))
    if out_layouts is None:
      out_l = tuple(_default_layout(a) for a in result_avals)
    else:
      if len(out_layouts) != len(result_avals):
        raise ValueError(f"The number of outputs ({len(result_avals)}) must equal the "
                         f"number of output layouts ({len(out_layouts)}).")
      out_l = tuple(_layout(a, lay) for a, lay in zip(result_avals, out_layouts))
    aliases = []
    for i, o in sorted((input_output_aliases or {}).items()):
      i, o = int(i), int(o)
      if i >= len(args):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with input "
                         f"index {i} outside the range [0, {len(args)}).")
      if o >= len(result_avals):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with output "
                         f"index {o} outside the range [0, {len(result_avals)}).")
      a, r = in_avals[i], result_avals[o]
      if tuple(a.shape) != tuple(r.shape) or a.dtype != r.dtype:
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' referring to "
                         f"an input with abstract value {a} and an output with a different "
                         f"abstract value {r}.")
      if in_l[i] != out_l[o]:
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' referring to "
                         f"an input with layout {in_l[i]} and an output with a different "
                         f"layout {out_l[o]}.")
      aliases.append((i, o))
    outs = ffi_call_p.bind(
        *args, result_avals=result_avals, vmap_method=vmap_method, target_name=target_name,
        has_side_effect=has_side_effect, input_layouts=in_l, output_layouts=out_l,
        input_output_aliases=tuple(aliases), custom_call_api_version=custom_call_api_version,
        legacy_backend_config=legacy_backend_config, attributes=_wrap_attributes(kwargs))
    if multiple:
      return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)
    return outs[0]
  return wrapped


# --- batching -----------------------------------------------------------------------------
def _ffi_call_batch(args, dims, *, vmap_method, result_avals, **params):
  from pyjax._src.callback import _moveaxis0, _sequential
  from pyjax._src.lax import shapes
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  moved = [x if d is None else _moveaxis0(x, d) for x, d in zip(args, dims)]
  batched_avals = tuple(ShapedArray((size,) + tuple(a.shape), a.dtype) for a in result_avals)

  def lift(layout):   # the batch axis is the most major one
    return tuple(n + 1 for n in layout) + (0,)
  if vmap_method in ("sequential", "sequential_unrolled"):
    return _sequential(ffi_call_p, args, dims,
                       dict(params, vmap_method=vmap_method, result_avals=result_avals),
                       unroll=vmap_method == "sequential_unrolled")
  out_l = tuple(lift(lay) for lay in params.pop("output_layouts"))
  in_l = params.pop("input_layouts")
  if vmap_method == "legacy_vectorized":
    in_l = tuple(lay if d is None else lift(lay) for lay, d in zip(in_l, dims))
    ext = moved
  elif vmap_method in ("expand_dims", "broadcast_all"):
    n = size if vmap_method == "broadcast_all" else 1
    ext = [shapes.broadcast(x, (n,)) if d is None else x for x, d in zip(moved, dims)]
    in_l = tuple(lift(lay) for lay in in_l)
  else:
    raise NotImplementedError(
        "vmap is only supported for the ffi_call primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method}.")
  outs = ffi_call_p.bind(*ext, vmap_method=vmap_method, result_avals=batched_avals,
                         input_layouts=in_l, output_layouts=out_l, **params)
  return list(outs), [0] * len(outs)


def _register_batching():
  from pyjax._src.interpreters import batching
  batching.primitive_batchers[ffi_call_p] = _ffi_call_batch


_register_batching()
