"""Foreign function calls on the CPU backend: the target table and the ``ffi_call``
implementation (eager and inside jitted programs on either tier: the compiled tier runs
it as a NumPy step).

pyjax's C ABI (``pyjax_ffi.h``, see ``pyjax.ffi.include_dir()`` and ``docs/ffi.md``): a
target is ``int32_t fn(PyjaxFfiCallFrame *frame)``; the frame lists the argument and
result buffers (data pointer, dtype code, rank, logical dims, major-to-minor layout) and
the keyword attributes, and has room for an error message.  The handler returns 0 on
success, or an absl-style status code (3 = INVALID_ARGUMENT, 13 = INTERNAL, ...) after
writing a NUL-terminated message into ``frame->error``; pyjax raises
``JaxRuntimeError("<CODE>: <message>")``.  The call releases the GIL.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from pyjax._src import errors
from pyjax._src import profiler as _profiler
from pyjax._src.backends.cpu.eager.registry import register

API_VERSION = 1

# dtype codes of the C ABI (PYJAX_FFI_<NAME> in pyjax_ffi.h)
DTYPE_CODES = {
    "bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7,
    "uint32": 8, "uint64": 9, "float16": 10, "float32": 11, "float64": 12, "bfloat16": 13,
    "complex64": 14, "complex128": 15,
}
ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_ARRAY = 1, 2, 3, 4

STATUS_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}
_ERROR_SIZE = 1024


class Buffer(ctypes.Structure):
  _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
              ("dims", ctypes.POINTER(ctypes.c_int64)),
              ("layout", ctypes.POINTER(ctypes.c_int64))]


class Attr(ctypes.Structure):
  _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int32), ("dtype", ctypes.c_int32),
              ("i64", ctypes.c_int64), ("f64", ctypes.c_double), ("data", ctypes.c_void_p),
              ("size", ctypes.c_int64)]


class CallFrame(ctypes.Structure):
  _fields_ = [("api_version", ctypes.c_int32), ("num_args", ctypes.c_int32),
              ("num_rets", ctypes.c_int32), ("num_attrs", ctypes.c_int32),
              ("args", ctypes.POINTER(Buffer)), ("rets", ctypes.POINTER(Buffer)),
              ("attrs", ctypes.POINTER(Attr)), ("error", ctypes.c_char_p),
              ("error_size", ctypes.c_int64)]


HANDLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(CallFrame))

_targets = {}            # (name, platform) -> (handler, keep-alive object)
_targets_lock = threading.Lock()


def add_target(name, platform, address, keep):
  """Register the C function at ``address`` as target ``name`` for ``platform``
  (``keep`` is held so the library or capsule providing it stays alive)."""
  with _targets_lock:
    _targets[(name, platform)] = (HANDLER(address), keep)


def registered_targets(platform="cpu"):
  """The target names registered for ``platform``."""
  return sorted(n for n, p in _targets if p == platform)


def dtype_code(dt):
  """The ABI's code for dtype ``dt`` (TypeError for dtypes it has none for)."""
  code = DTYPE_CODES.get(np.dtype(dt).name)
  if code is None:
    raise TypeError(f"ffi_call: dtype {np.dtype(dt).name} has no pyjax FFI dtype code")
  return code


def _int64s(values):
  arr = (ctypes.c_int64 * max(len(values), 1))(*values)
  return arr


def _attr(name, value, keep):
  bname = name.encode()
  keep.append(bname)
  if isinstance(value, (bool, np.bool_)):
    return Attr(bname, ATTR_INT, DTYPE_CODES["bool"], int(value), 0.0, None, 1)
  if isinstance(value, (int, np.integer)):
    dt = np.dtype(type(value)) if isinstance(value, np.integer) else np.dtype(np.int64)
    return Attr(bname, ATTR_INT, dtype_code(dt), int(value), 0.0, None, 1)
  if isinstance(value, (float, np.floating)):
    dt = np.dtype(type(value)) if isinstance(value, np.floating) else np.dtype(np.float64)
    return Attr(bname, ATTR_FLOAT, dtype_code(dt), 0, float(value), None, 1)
  if isinstance(value, str):
    b = value.encode()
    keep.append(b)
    return Attr(bname, ATTR_STRING, 0, 0, 0.0, ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p),
                len(b))
  if isinstance(value, np.ndarray):
    a = np.ascontiguousarray(value)
    keep.append(a)
    return Attr(bname, ATTR_ARRAY, dtype_code(a.dtype), 0, 0.0, a.ctypes.data, a.size)
  raise TypeError(f"ffi_call: attribute {name!r} of type {type(value).__name__} is not "
                  "supported (pyjax passes int, float, bool, str and NumPy arrays)")


def _c_order(a):
  """``a`` C-contiguous (0-d arrays stay 0-d, unlike ``np.ascontiguousarray``)."""
  return a if a.flags.c_contiguous else np.array(a, order="C")


def _physical(x, minor_to_major):
  """``x`` laid out in memory in the given (XLA minor-to-major) dimension order, and the
  major-to-minor order the frame reports."""
  m2m = tuple(minor_to_major)
  major = tuple(reversed(m2m))
  if major == tuple(range(x.ndim)):
    return _c_order(x), major
  # memory order ``major``: a C-contiguous transpose viewed back with logical axes
  return _c_order(np.transpose(x, major)).transpose(np.argsort(major)), major


def _dims_ptr(shape):
  return _int64s(list(shape))


def call_target(args, *, result_avals, target_name, input_layouts, output_layouts,
                input_output_aliases, attributes, platform="cpu"):
  """Run the registered C target on NumPy ``args``; returns the list of results."""
  entry = _targets.get((target_name, platform))
  if entry is None:
    raise errors.JaxRuntimeError(
        f"UNIMPLEMENTED: No registered implementation for FFI custom call to {target_name} "
        "for Host")
  handler = entry[0]
  keep = []
  in_bufs, phys_in = [], []
  for i, x in enumerate(args):
    x = np.asarray(x)
    m2m = input_layouts[i] if input_layouts is not None and input_layouts[i] is not None \
        else tuple(range(x.ndim - 1, -1, -1))
    p, major = _physical(x, m2m)
    phys_in.append(p)
    keep.append(p)
    dims, layout = _dims_ptr(x.shape), _int64s(major)
    keep.append((dims, layout))
    in_bufs.append(Buffer(p.ctypes.data, dtype_code(p.dtype), x.ndim, dims, layout))
  aliases = dict(input_output_aliases)     # output -> input
  aliases = {o: i for i, o in aliases.items()}
  outs, out_majors, out_bufs = [], [], []
  for j, aval in enumerate(result_avals):
    shape, dt = tuple(aval.shape), np.dtype(aval.dtype)
    m2m = output_layouts[j] if output_layouts is not None and output_layouts[j] is not None \
        else tuple(range(len(shape) - 1, -1, -1))
    major = tuple(reversed(tuple(m2m)))
    if j in aliases:   # the output starts as (a copy of) its aliased input, same buffer
      i = aliases[j]
      o = phys_in[i] = np.array(phys_in[i], copy=True, order="K")
      in_bufs[i].data = o.ctypes.data
      phys = np.transpose(o, major) if major != tuple(range(len(shape))) else o
    else:
      phys = np.empty([shape[a] for a in major], dt)
      o = phys.transpose(np.argsort(major)) if major != tuple(range(len(shape))) else phys
    outs.append(o)
    dims, layout = _dims_ptr(shape), _int64s(major)
    keep.append((dims, layout, phys))
    out_bufs.append(Buffer(phys.ctypes.data, dtype_code(dt), len(shape), dims, layout))
  attrs = [_attr(k, v, keep) for k, v in attributes]
  err = ctypes.create_string_buffer(_ERROR_SIZE)
  frame = CallFrame(API_VERSION, len(in_bufs), len(out_bufs), len(attrs),
                    (Buffer * max(len(in_bufs), 1))(*in_bufs),
                    (Buffer * max(len(out_bufs), 1))(*out_bufs),
                    (Attr * max(len(attrs), 1))(*attrs),
                    ctypes.cast(err, ctypes.c_char_p), _ERROR_SIZE)
  prof = _profiler.session
  t = prof.now() if prof is not None else 0
  status = handler(ctypes.byref(frame))
  if prof is not None:
    prof.add(f"ffi {target_name}", "ffi", t, None, {"status": int(status)})
  if status != 0:
    msg = err.value.decode("utf-8", "replace")
    code = STATUS_NAMES.get(int(status), "INTERNAL")
    raise errors.JaxRuntimeError(f"{code}: {msg or f'FFI handler {target_name} failed'}")
  return [_c_order(o) for o in outs]


@register("ffi_call")
def _ffi_call_impl(*args, result_avals, target_name, input_layouts, output_layouts,
                   input_output_aliases, attributes, **params):
  del params   # vmap_method, has_side_effect, custom_call_api_version, legacy_backend_config
  return call_target(args, result_avals=result_avals, target_name=target_name,
                     input_layouts=input_layouts, output_layouts=output_layouts,
                     input_output_aliases=input_output_aliases,
                     attributes=[(k, getattr(v, "val", v)) for k, v in attributes])
