"""pyjax's serialized form of an ``Exported``: a versioned binary encoding of its jaxpr.

Layout of a blob::

    b"PYJAXEXP"  magic (8 bytes)
    u16          format version (FORMAT_VERSION)
    u16          reserved (0)
    u64          payload length
    payload      one encoded value (below)
    u32          CRC-32 of the payload

Every value is a one-byte tag followed by its body; integers are LEB128 varints (signed
ones zigzag-encoded), strings UTF-8 with a length.  Arrays (constants, literals, array
params) are dtype name + shape + raw little-endian bytes.  A jaxpr is its variables (each
defined once, with its aval, and referred to by index), its equations (primitive *name*,
params, input atoms, output variables) and its outputs; jaxprs that occur more than once
(the same object) are written once and referred to.  Enums, named tuples and the few
singleton param objects are written by class path + member name / fields, and are only
resolved inside ``pyjax``.  Python callables cannot be serialized (``ValueError``).

Reading rebuilds the jaxpr with the primitives found by name, recomputes every equation's
effects with its abstract-evaluation rule and checks that the avals it computes are the
recorded ones, so a blob that does not describe a valid program is rejected.  A wrong
magic, an unsupported version, a truncated or corrupted blob raise ``ValueError``.
"""
from __future__ import annotations

import enum
import importlib
import math
import struct
import sys
import zlib

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray

MAGIC = b"PYJAXEXP"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHHQ")

# tags
(T_NONE, T_TRUE, T_FALSE, T_INT, T_FLOAT, T_COMPLEX, T_STR, T_BYTES, T_TUPLE, T_LIST,
 T_DICT, T_DTYPE, T_AVAL, T_ARRAY, T_NPSCALAR, T_ENUM, T_NAMEDTUPLE, T_CLOSED, T_JAXPR,
 T_REF, T_SINGLETON, T_TREEDEF, T_EFFECT, T_FROZENSET, T_HASHARRAY, T_SHARDING,
 T_SLICE) = range(27)


class _Writer:
  def __init__(self):
    self.out = bytearray()
    self.memo = {}        # id(jaxpr) -> index
    self.keep = []        # keep memoized objects alive (ids stay unique)

  def byte(self, b):
    self.out.append(b)

  def uvar(self, n):
    if n < 0:
      raise ValueError("negative length")
    while True:
      b = n & 0x7F
      n >>= 7
      if n:
        self.out.append(b | 0x80)
      else:
        self.out.append(b)
        return

  def svar(self, n):
    self.uvar((n << 1) if n >= 0 else ((-n << 1) - 1))

  def raw(self, b):
    self.uvar(len(b))
    self.out += b

  def text(self, s):
    self.raw(s.encode("utf-8"))


class _Reader:
  def __init__(self, data):
    self.data = memoryview(data)
    self.pos = 0
    self.memo = []

  def _need(self, n):
    if self.pos + n > len(self.data):
      raise ValueError("Cannot deserialize pyjax Exported: the serialized data is truncated")

  def byte(self):
    self._need(1)
    b = self.data[self.pos]
    self.pos += 1
    return b

  def uvar(self):
    n, shift = 0, 0
    while True:
      b = self.byte()
      n |= (b & 0x7F) << shift
      shift += 7
      if not b & 0x80:
        return n
      if shift > 1 << 12:
        raise ValueError("Cannot deserialize pyjax Exported: malformed integer")

  def svar(self):
    z = self.uvar()
    return (z >> 1) if not z & 1 else -((z + 1) >> 1)

  def raw(self):
    n = self.uvar()
    self._need(n)
    b = bytes(self.data[self.pos:self.pos + n])
    self.pos += n
    return b

  def text(self):
    return self.raw().decode("utf-8")


def _class_path(cls):
  return f"{cls.__module__}:{cls.__qualname__}"


def _resolve_class(path):
  mod, _, qual = path.partition(":")
  if not (mod == "pyjax" or mod.startswith("pyjax.")):
    raise ValueError(f"Cannot deserialize pyjax Exported: class {path} is not part of pyjax")
  obj = importlib.import_module(mod)
  for part in qual.split("."):
    obj = getattr(obj, part)
  return obj


def _dtype_name(dt):
  dt = np.dtype(dt)
  if dt == dtypes.float0:
    return "float0"
  return dt.name


def _dtype(name):
  if name == "float0":
    return dtypes.float0
  try:
    return np.dtype(name)
  except TypeError:
    import ml_dtypes   # bfloat16, float8_*, int4, ...: NumPy does not know their names
    t = getattr(ml_dtypes, name, None)
    if t is None:
      raise ValueError(f"Cannot deserialize pyjax Exported: unknown dtype {name!r}") from None
    return np.dtype(t)


# --- values ---------------------------------------------------------------------------------
def _is_namedtuple(x):
  return isinstance(x, tuple) and hasattr(type(x), "_fields")


def encode(w, v, where="value"):
  """Append the encoding of ``v``; ``where`` names it in error messages."""
  if v is None:
    w.byte(T_NONE)
  elif v is True:
    w.byte(T_TRUE)
  elif v is False:
    w.byte(T_FALSE)
  elif isinstance(v, enum.Enum):
    w.byte(T_ENUM)
    w.text(_class_path(type(v)))
    w.text(v.name)
  elif type(v) is int:
    w.byte(T_INT)
    w.svar(v)
  elif type(v) is float:
    w.byte(T_FLOAT)
    w.out += struct.pack("<d", v)
  elif type(v) is complex:
    w.byte(T_COMPLEX)
    w.out += struct.pack("<dd", v.real, v.imag)
  elif type(v) is str:
    w.byte(T_STR)
    w.text(v)
  elif type(v) is bytes:
    w.byte(T_BYTES)
    w.raw(v)
  elif _is_namedtuple(v):
    w.byte(T_NAMEDTUPLE)
    w.text(_class_path(type(v)))
    w.uvar(len(v))
    for i, x in enumerate(v):
      encode(w, x, f"{where}.{v._fields[i]}")
  elif type(v) is tuple:
    w.byte(T_TUPLE)
    w.uvar(len(v))
    for i, x in enumerate(v):
      encode(w, x, f"{where}[{i}]")
  elif type(v) is list:
    w.byte(T_LIST)
    w.uvar(len(v))
    for i, x in enumerate(v):
      encode(w, x, f"{where}[{i}]")
  elif type(v) is dict:
    w.byte(T_DICT)
    w.uvar(len(v))
    for k, x in v.items():
      encode(w, k, where)
      encode(w, x, f"{where}[{k!r}]")
  elif type(v) is frozenset:
    w.byte(T_FROZENSET)
    items = list(v)
    w.uvar(len(items))
    for x in items:
      encode(w, x, where)
  elif type(v) is slice:
    w.byte(T_SLICE)
    for x in (v.start, v.stop, v.step):
      encode(w, x, where)
  elif isinstance(v, np.dtype):
    w.byte(T_DTYPE)
    w.text(_dtype_name(v))
  elif isinstance(v, type) and issubclass(v, np.generic):
    w.byte(T_DTYPE)
    w.text(_dtype_name(v))
  elif isinstance(v, ShapedArray):
    w.byte(T_AVAL)
    _encode_aval(w, v)
  elif isinstance(v, np.generic):
    w.byte(T_NPSCALAR)
    w.text(_dtype_name(v.dtype))
    w.raw(np.asarray(v).tobytes())
  elif isinstance(v, np.ndarray) or type(v).__name__ == "ArrayImpl":
    w.byte(T_ARRAY)
    _encode_array(w, np.asarray(v))
  elif type(v).__name__ == "ClosedJaxpr" and isinstance(v, core.ClosedJaxpr):
    _encode_jaxpr_ref(w, v, closed=True)
  elif isinstance(v, core.Jaxpr):
    _encode_jaxpr_ref(w, v, closed=False)
  elif isinstance(v, core.Effect):
    w.byte(T_EFFECT)
    w.text(_class_path(type(v)))
    w.text(v.name)
    encode(w, bool(v.ordered))
  elif _is_treedef(v):
    w.byte(T_TREEDEF)
    _encode_treedef(w, v, where)
  elif type(v).__name__ == "HashableArray" and hasattr(v, "val"):
    w.byte(T_HASHARRAY)
    w.text(_class_path(type(v)))
    _encode_array(w, np.asarray(v.val))
  elif type(v).__name__ == "SingleDeviceSharding":
    w.byte(T_SHARDING)
    d = v._device
    w.text(d.platform)
    w.uvar(d.id)
  elif type(v).__name__ in _SINGLETONS:
    w.byte(T_SINGLETON)
    w.text(_class_path(type(v)))
  elif callable(v):
    raise ValueError(f"Cannot serialize {where}: it is a Python callable ({v!r}); "
                     "pyjax's export format holds only data (callbacks and custom rules "
                     "cannot be exported)")
  else:
    raise ValueError(f"Cannot serialize {where}: values of type {type(v).__module__}."
                     f"{type(v).__qualname__} are not supported by pyjax's export format")


# singleton param objects, by class name -> attribute holding the instance
_SINGLETONS = {"UnspecifiedValue": "UNSPECIFIED", "_EmptyMesh": "EMPTY_MESH",
               "_LikePrimal": "LIKE_PRIMAL"}


def decode(r):
  """Read one value written by ``encode``."""
  tag = r.byte()
  if tag == T_NONE:
    return None
  if tag == T_TRUE:
    return True
  if tag == T_FALSE:
    return False
  if tag == T_INT:
    return r.svar()
  if tag == T_FLOAT:
    r._need(8)
    v = struct.unpack_from("<d", r.data, r.pos)[0]
    r.pos += 8
    return v
  if tag == T_COMPLEX:
    r._need(16)
    a, b = struct.unpack_from("<dd", r.data, r.pos)
    r.pos += 16
    return complex(a, b)
  if tag == T_STR:
    return r.text()
  if tag == T_BYTES:
    return r.raw()
  if tag in (T_TUPLE, T_LIST):
    n = r.uvar()
    items = [decode(r) for _ in range(n)]
    return tuple(items) if tag == T_TUPLE else items
  if tag == T_DICT:
    n = r.uvar()
    out = {}
    for _ in range(n):
      k = decode(r)
      out[k] = decode(r)
    return out
  if tag == T_FROZENSET:
    return frozenset(decode(r) for _ in range(r.uvar()))
  if tag == T_SLICE:
    return slice(decode(r), decode(r), decode(r))
  if tag == T_DTYPE:
    return _dtype(r.text())
  if tag == T_AVAL:
    return _decode_aval(r)
  if tag == T_NPSCALAR:
    dt = _dtype(r.text())
    return np.frombuffer(r.raw(), dtype=dt)[0]
  if tag == T_ARRAY:
    return _decode_array(r)
  if tag == T_ENUM:
    cls = _resolve_class(r.text())
    name = r.text()
    if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
      raise ValueError(f"Cannot deserialize pyjax Exported: {cls} is not an enum")
    return cls[name]
  if tag == T_NAMEDTUPLE:
    cls = _resolve_class(r.text())
    n = r.uvar()
    fields = [decode(r) for _ in range(n)]
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
      raise ValueError(f"Cannot deserialize pyjax Exported: {cls} is not a named tuple")
    return cls(*fields)
  if tag in (T_CLOSED, T_JAXPR):
    return _decode_jaxpr(r, closed=tag == T_CLOSED)
  if tag == T_REF:
    i = r.uvar()
    if i >= len(r.memo):
      raise ValueError("Cannot deserialize pyjax Exported: dangling jaxpr reference")
    return r.memo[i]
  if tag == T_EFFECT:
    path, name, ordered = r.text(), r.text(), decode(r)
    return _find_effect(path, name, ordered)
  if tag == T_TREEDEF:
    return _decode_treedef(r)
  if tag == T_HASHARRAY:
    cls = _resolve_class(r.text())
    return cls(_decode_array(r))
  if tag == T_SHARDING:
    platform, i = r.text(), r.uvar()
    from pyjax._src.runtime import devices
    from pyjax._src.runtime.array import SingleDeviceSharding
    devs = devices.get_backend(platform).devices
    if i >= len(devs):
      raise ValueError(f"Cannot deserialize pyjax Exported: no device {platform}:{i}")
    return SingleDeviceSharding(devs[i])
  if tag == T_SINGLETON:
    path = r.text()
    cls = _resolve_class(path)
    attr = _SINGLETONS.get(cls.__name__)
    if attr is None:
      raise ValueError(f"Cannot deserialize pyjax Exported: unknown singleton {path}")
    return getattr(sys.modules[cls.__module__], attr)
  raise ValueError(f"Cannot deserialize pyjax Exported: unknown value tag {tag}")


def _encode_aval(w, a):
  w.text(_dtype_name(a.dtype))
  w.uvar(len(a.shape))
  for d in a.shape:
    if not isinstance(d, (int, np.integer)):
      raise ValueError(f"Cannot serialize the aval {a}: symbolic dimensions are not "
                       "supported by pyjax's export")
    w.uvar(int(d))
  w.byte(1 if a.weak_type else 0)


def _decode_aval(r):
  dt = _dtype(r.text())
  shape = tuple(r.uvar() for _ in range(r.uvar()))
  return ShapedArray(shape, dt, bool(r.byte()))


def _encode_array(w, a):
  a = np.ascontiguousarray(a)
  w.text(_dtype_name(a.dtype))
  w.uvar(a.ndim)
  for d in a.shape:
    w.uvar(d)
  w.raw(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())


def _decode_array(r):
  dt = _dtype(r.text())
  shape = tuple(r.uvar() for _ in range(r.uvar()))
  data = r.raw()
  if len(data) != math.prod(shape) * dt.itemsize:
    raise ValueError("Cannot deserialize pyjax Exported: array data of the wrong size")
  return np.frombuffer(data, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)


def _is_treedef(v):
  return type(v).__name__ == "PyTreeDef" and hasattr(v, "node_data")


# --- pytree structures ----------------------------------------------------------------------
_custom_nodes = {}      # type -> (serialized_name, serialize_auxdata, deserialize_auxdata)
_custom_by_name = {}    # serialized_name -> (type, deserialize_auxdata)


def _encode_treedef(w, td, where):
  import collections
  nd = td.node_data()
  children = td.children()
  if nd is None:
    w.byte(0)
    return
  typ, aux = nd
  if typ is tuple:
    w.byte(1)
  elif typ is list:
    w.byte(2)
  elif typ is dict:
    w.byte(3)
    encode(w, tuple(aux), where)
  elif typ is type(None):
    w.byte(4)
  elif typ is collections.OrderedDict:
    w.byte(5)
    encode(w, tuple(aux), where)
  elif typ in _custom_nodes:
    name, ser, _ = _custom_nodes[typ]
    w.byte(6)
    w.text(name)
    w.raw(ser(aux))
  else:
    raise ValueError(
        f"Cannot serialize {where}: the pytree node type {typ.__module__}.{typ.__qualname__} "
        "is not registered for serialization (use "
        "pyjax.export.register_pytree_node_serialization or "
        "register_namedtuple_serialization)")
  w.uvar(len(children))
  for c in children:
    _encode_treedef(w, c, where)


def _decode_treedef(r):
  import collections
  from pyjax._src import tree_util
  from pyjax._src.tree_util.treedef import PyTreeDef
  kind = r.byte()
  registry = tree_util.default_registry
  if kind == 0:
    return tree_util.tree_structure(0)
  if kind == 1:
    nd = (tuple, None)
  elif kind == 2:
    nd = (list, None)
  elif kind == 3:
    nd = (dict, list(decode(r)))
  elif kind == 4:
    nd = (type(None), None)
  elif kind == 5:
    nd = (collections.OrderedDict, tuple(decode(r)))
  elif kind == 6:
    name = r.text()
    blob = r.raw()
    if name not in _custom_by_name:
      raise ValueError(f"Cannot deserialize pyjax Exported: the pytree node '{name}' is not "
                       "registered for serialization in this process")
    typ, deser = _custom_by_name[name]
    nd = (typ, deser(blob))
  else:
    raise ValueError(f"Cannot deserialize pyjax Exported: unknown pytree node kind {kind}")
  children = [_decode_treedef(r) for _ in range(r.uvar())]
  return PyTreeDef.from_node_data_and_children(registry, nd, children)


# --- effects and primitives, found by name --------------------------------------------------
def _scan_modules(kind):
  out = {}
  for name, mod in list(sys.modules.items()):
    if mod is None or not (name == "pyjax" or name.startswith("pyjax.")):
      continue
    for v in list(vars(mod).values()):
      if isinstance(v, kind):
        out.setdefault(v.name if kind is core.Primitive else (type(v), v.name), set()).add(v)
  return out


_prims = {}
_prim_modules = {}


def primitive_module(prim):
  """The name of a pyjax module defining ``prim`` (written next to its name, so that
  reading can import a module the reading process has not loaded yet)."""
  m = _prim_modules.get(prim)
  if m is None:
    for name, mod in list(sys.modules.items()):
      if mod is not None and (name == "pyjax" or name.startswith("pyjax.")) and any(
          v is prim for v in list(vars(mod).values())):
        m = name
        break
    m = _prim_modules[prim] = m or ""
  return m


def find_primitive(name, module=""):
  """The primitive called ``name`` (defined in ``module``, a pyjax module imported first
  when given)."""
  p = _prims.get(name)
  if p is None:
    if module:
      if not (module == "pyjax" or module.startswith("pyjax.")):
        raise ValueError(f"Cannot deserialize pyjax Exported: module {module} is not part "
                         "of pyjax")
      try:
        importlib.import_module(module)
      except ImportError as e:
        raise ValueError(f"Cannot deserialize pyjax Exported: primitive '{name}' needs "
                         f"module {module}, which cannot be imported ({e})") from None
    _prims.clear()
    for k, vs in _scan_modules(core.Primitive).items():
      if len(vs) == 1:
        _prims[k] = next(iter(vs))
    p = _prims.get(name)
    if p is None:
      raise ValueError(f"Cannot deserialize pyjax Exported: unknown primitive '{name}'")
  return p


def _find_effect(path, name, ordered):
  cls = _resolve_class(path)
  for (typ, n), vs in _scan_modules(core.Effect).items():
    if typ is cls and n == name:
      for v in vs:
        if bool(v.ordered) == bool(ordered):
          return v
  raise ValueError(f"Cannot deserialize pyjax Exported: unknown effect {name} ({path})")


# --- jaxprs ---------------------------------------------------------------------------------
_CUSTOM_RULE_PRIMS = ("custom_jvp_call", "custom_vjp_call")


def _encode_jaxpr_ref(w, j, closed):
  key = id(j)
  if key in w.memo:
    w.byte(T_REF)
    w.uvar(w.memo[key])
    return
  w.byte(T_CLOSED if closed else T_JAXPR)
  w.memo[key] = len(w.memo)   # (the index is assigned before the body, as the reader does)
  w.keep.append(j)
  if closed:
    _encode_jaxpr_body(w, j.jaxpr, j.consts)
  else:
    _encode_jaxpr_body(w, j, None)


def _encode_jaxpr_body(w, jaxpr, consts):
  ids = {}

  def define(v):
    ids[v] = len(ids)
    _encode_aval(w, v.aval)

  w.uvar(len(jaxpr.constvars))
  for v in jaxpr.constvars:
    define(v)
  if consts is not None:
    if len(consts) != len(jaxpr.constvars):
      raise ValueError("Cannot serialize a ClosedJaxpr whose consts do not match its "
                       "constvars")
    for c, v in zip(consts, jaxpr.constvars):
      _encode_array(w, np.asarray(c._data() if hasattr(c, "_data") else c, dtype=v.aval.dtype))
  w.uvar(len(jaxpr.invars))
  for v in jaxpr.invars:
    define(v)

  def atom(x, where):
    if isinstance(x, core.Literal):
      w.byte(1)
      _encode_aval(w, x.aval)
      encode(w, x.val, where)
    else:
      w.byte(0)
      try:
        w.uvar(ids[x])
      except KeyError:
        raise ValueError(f"Cannot serialize {where}: variable {x} is not defined") from None

  w.uvar(len(jaxpr.eqns))
  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    name = prim.name
    params = eqn.params
    if name in _CUSTOM_RULE_PRIMS:
      # custom differentiation rules are Python callables: keep the primal computation,
      # as a call of its jaxpr (JAX's export also serializes only the primal)
      from pyjax._src.interpreters import staging
      body = params["call_jaxpr"]
      if not isinstance(body, core.ClosedJaxpr):
        body = core.ClosedJaxpr(body, [])
      params = staging.jit_params(body, params.get("name") or name,
                                  (False,) * len(eqn.invars), inline=True)
      prim = staging.jit_p
      name = prim.name
    w.text(name)
    w.text(primitive_module(prim))
    w.uvar(len(params))
    for k in sorted(params):
      w.text(k)
      encode(w, params[k], f"parameter '{k}' of primitive '{name}'")
    w.uvar(len(eqn.invars))
    for x in eqn.invars:
      atom(x, f"an input of primitive '{name}'")
    w.uvar(len(eqn.outvars))
    for v in eqn.outvars:
      if isinstance(v, core.DropVar):
        w.byte(1)
        _encode_aval(w, v.aval)
      else:
        w.byte(0)
        define(v)
  w.uvar(len(jaxpr.outvars))
  for x in jaxpr.outvars:
    atom(x, "an output of the jaxpr")


def _same_aval(a, b):
  return (tuple(a.shape) == tuple(b.shape) and np.dtype(a.dtype) == np.dtype(b.dtype)
          and bool(a.weak_type) == bool(b.weak_type))


def _decode_jaxpr(r, closed):
  slot = len(r.memo)
  r.memo.append(None)
  vars_ = []

  def define():
    v = core.Var(_decode_aval(r))
    vars_.append(v)
    return v

  constvars = [define() for _ in range(r.uvar())]
  consts = None
  if closed:
    from pyjax._src.runtime.array import ArrayImpl
    consts = []
    for v in constvars:
      arr = _decode_array(r)
      if arr.shape != tuple(v.aval.shape) or arr.dtype != v.aval.dtype:
        raise ValueError("Cannot deserialize pyjax Exported: a constant does not match its "
                         "aval")
      consts.append(ArrayImpl(arr, ShapedArray(arr.shape, arr.dtype)))
  invars = [define() for _ in range(r.uvar())]

  def atom():
    kind = r.byte()
    if kind == 1:
      aval = _decode_aval(r)
      return core.Literal(decode(r), aval)
    i = r.uvar()
    if i >= len(vars_):
      raise ValueError("Cannot deserialize pyjax Exported: reference to an undefined variable")
    return vars_[i]

  eqns = []
  for _ in range(r.uvar()):
    prim_name = r.text()
    prim = find_primitive(prim_name, r.text())
    params = {}
    for _ in range(r.uvar()):
      k = r.text()
      params[k] = decode(r)
    ins = [atom() for _ in range(r.uvar())]
    outs = []
    for _ in range(r.uvar()):
      if r.byte() == 1:
        outs.append(core.DropVar(_decode_aval(r)))
      else:
        outs.append(define())
    try:
      out_avals, effects = prim.abstract_eval_effects(*[x.aval for x in ins], **params)
    except Exception as e:  # noqa: BLE001  -- the blob describes an invalid equation
      raise ValueError(f"Cannot deserialize pyjax Exported: invalid '{prim.name}' equation "
                       f"({type(e).__name__}: {e})") from e
    out_avals = list(out_avals) if prim.multiple_results else [out_avals]
    if len(out_avals) != len(outs) or not all(
        _same_aval(a, v.aval) for a, v in zip(out_avals, outs)):
      raise ValueError(f"Cannot deserialize pyjax Exported: the '{prim.name}' equation's "
                       "recorded output types are not what it computes")
    eqns.append(core.JaxprEqn(ins, outs, prim, params, frozenset(effects)))
  outvars = [atom() for _ in range(r.uvar())]
  effs = frozenset().union(*[e.effects for e in eqns]) if eqns else frozenset()
  jaxpr = core.Jaxpr(constvars, invars, outvars, eqns, effs)
  result = core.ClosedJaxpr(jaxpr, consts) if closed else jaxpr
  r.memo[slot] = result
  return result


# --- blobs ----------------------------------------------------------------------------------
def to_bytes(value):
  """A blob (header, payload, checksum) holding ``value``."""
  w = _Writer()
  encode(w, value)
  payload = bytes(w.out)
  return bytearray(_HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(payload)) + payload
                   + struct.pack("<I", zlib.crc32(payload)))


def from_bytes(blob):
  """The value held by a blob written by ``to_bytes`` (``ValueError`` when the blob is not
  one, is of another format version, truncated or corrupted)."""
  try:
    data = memoryview(bytes(blob))
  except TypeError:
    raise ValueError(f"Cannot deserialize pyjax Exported from a {type(blob).__name__}: "
                     "expected bytes or a bytearray") from None
  if bytes(data[:8]) != MAGIC[:len(data)] or not len(data):
    raise ValueError("Cannot deserialize pyjax Exported: not a pyjax export blob (bad magic "
                     "header)")
  if len(data) < _HEADER.size:
    raise ValueError("Cannot deserialize pyjax Exported: the serialized data is truncated "
                     f"({len(data)} bytes)")
  magic, version, _, length = _HEADER.unpack_from(data, 0)
  if version != FORMAT_VERSION:
    raise ValueError(f"Cannot deserialize pyjax Exported: serialization format version "
                     f"{version} is not supported (this pyjax reads version {FORMAT_VERSION})")
  end = _HEADER.size + length
  if len(data) < end + 4:
    raise ValueError("Cannot deserialize pyjax Exported: the serialized data is truncated "
                     f"({len(data)} bytes, expected {end + 4})")
  if len(data) > end + 4:
    raise ValueError("Cannot deserialize pyjax Exported: trailing bytes after the payload")
  payload = data[_HEADER.size:end]
  (crc,) = struct.unpack_from("<I", data, end)
  if zlib.crc32(payload) != crc:
    raise ValueError("Cannot deserialize pyjax Exported: checksum mismatch (corrupted data)")
  r = _Reader(payload)
  value = decode(r)
  if r.pos != len(payload):
    raise ValueError("Cannot deserialize pyjax Exported: malformed payload")
  return value
