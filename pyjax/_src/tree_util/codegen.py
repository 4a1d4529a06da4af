"""Rebuilding trees from specs: generic and generated ``unflatten`` and
``flatten_up_to`` functions.

For a structure used more than once and small enough, ``PyTreeDef`` compiles a
specialised Python function (``def f(l, s): return (l[0], {'a': l[1]})``); the generic
recursive versions handle first sightings, very large or deep trees, and (for
``flatten_up_to``) produce JAX's exact mismatch messages.
"""

from __future__ import annotations

import keyword
from typing import Any

from pyjax._src.tree_util.spec import (
    _HDR, _K_DATACLASS, _K_DICT, _K_LIST, _K_NAMEDTUPLE, _K_NONE, _K_TUPLE,
    _aux_equal, _call_flatten,
)


# -- unflatten ---------------------------------------------------------------------

def _unflatten_generic(spec, it, entries):
  if spec is None:
    return next(it)
  k = spec[0]
  if k == _K_NONE:
    return None
  children = [_unflatten_generic(c, it, entries) for c in spec[_HDR:]]
  if k == _K_TUPLE:
    return tuple(children)
  if k == _K_LIST:
    return children
  if k == _K_DICT:
    return dict(zip(spec[2], children))
  if k == _K_NAMEDTUPLE:
    return spec[1](*children)
  return entries[spec[1]].unflatten(spec[2], tuple(children))


def _unflatten_leaf(leaves, spec):
  return leaves[0]


def _make_generic_unflatten(entries):
  def unflatten(leaves, spec):
    return _unflatten_generic(spec, iter(leaves), entries)
  return unflatten


# Structures beyond these sizes use the generic recursive functions.
_COMPILE_MAX_NODES = 256
_COMPILE_MAX_DEPTH = 40
_COMPILE_CACHE_LIMIT = 4096  # a registry's compiled-function cache is cleared when full


def _compile_unflatten(spec, entries):
  """Generates ``f(l, s)`` rebuilding the tree for `spec` from the leaf list `l`.

  Static data (dict keys other than plain strings, custom aux data) is read from the
  spec `s` passed at call time, so equal-but-not-identical specs (``{1: *}`` vs
  ``{True: *}``) sharing a compiled function still rebuild their own keys.
  """
  consts: dict[str, Any] = {}
  counter = [0]

  def const(obj):
    name = f"_c{len(consts)}"
    consts[name] = obj
    return name

  def expr(sp, access):
    if sp is None:
      i = counter[0]
      counter[0] = i + 1
      return f"l[{i}]"
    k = sp[0]
    if k == _K_NONE:
      return "None"
    ch = [expr(c, f"{access}[{j + _HDR}]") for j, c in enumerate(sp[_HDR:])]
    if k == _K_TUPLE:
      return "(" + ", ".join(ch) + ("," if len(ch) == 1 else "") + ")"
    if k == _K_LIST:
      return "[" + ", ".join(ch) + "]"
    if k == _K_DICT:
      keys = sp[2]
      if all(type(key) is str for key in keys):
        return "{" + ", ".join(f"{key!r}: {c}" for key, c in zip(keys, ch)) + "}"
      return (f"dict(zip({access}[2], (" + ", ".join(ch)
              + ("," if len(ch) == 1 else "") + ")))")
    typ = sp[1]
    if k == _K_NAMEDTUPLE:
      return f"{const(typ)}(" + ", ".join(ch) + ")"
    e = entries[typ]
    if k == _K_DATACLASS:
      names = e.data_fields + e.meta_fields
      if all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        args = [f"{n}={c}" for n, c in zip(e.data_fields, ch)]
        args += [f"{n}={access}[2][{i}]" for i, n in enumerate(e.meta_fields)]
        return f"{const(typ)}(" + ", ".join(args) + ")"
    return (f"{const(e.unflatten)}({access}[2], ("
            + ", ".join(ch) + ("," if len(ch) == 1 else "") + "))")

  body = expr(spec, "s")
  src = f"def _unflatten(l, s):\n  return {body}\n"
  namespace = dict(consts)
  exec(compile(src, "<pyjax.tree_util unflatten>", "exec"), namespace)
  fn = namespace["_unflatten"]
  fn.__source__ = src
  return fn


# -- flatten_up_to -----------------------------------------------------------------

_NONE_PREFIX_HINT = (
    "\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a "
    "tree-prefix of non-None values. To obtain the previous behavior, you can usually "
    "write:\n  jax.tree.map(lambda x, y: None if x is None else f(x, y), a, b, "
    "is_leaf=lambda x: x is None)")


def _flatten_up_to(spec, x, append, entries):
  if spec is None:
    append(x)
    return
  k = spec[0]
  n = len(spec) - _HDR
  if k == _K_TUPLE:
    if type(x) is not tuple:
      raise ValueError(f"Expected tuple, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"Tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
    children = x
  elif k == _K_LIST:
    if type(x) is not list:
      raise ValueError(f"Expected list, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"List arity mismatch: {len(x)} != {n}; list: {x!r}.")
    children = x
  elif k == _K_DICT:
    if type(x) is not dict:
      raise ValueError(f"Expected dict, got {x!r}.")
    keys = spec[2]
    if len(x) != n or not all(key in x for key in keys):
      try:
        present = sorted(x)
      except Exception:
        present = list(x)
      raise ValueError(f"Dict key mismatch; expected keys: {list(keys)!r}; "
                       f"present keys: {present!r}.")
    children = [x[key] for key in keys]
  elif k == _K_NONE:
    if x is not None:
      raise ValueError(f"Expected None, got {x!r}." + _NONE_PREFIX_HINT)
    return
  elif k == _K_NAMEDTUPLE:
    if not (isinstance(x, tuple) and hasattr(type(x), "_fields")):
      raise ValueError(f"Expected named tuple, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"Named tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
    if type(x) is not spec[1]:
      raise ValueError(f"Named tuple type mismatch: expected type: {spec[1]}, "
                       f"tuple: {x!r}.")
    children = x
  elif k == _K_DATACLASS:
    typ = spec[1]
    if type(x) is not typ:
      raise ValueError(f"Custom dataclass node type mismatch: expected type: {typ}, "
                       f"value: {x!r}.")
    e = entries[typ]
    aux = tuple([getattr(x, name) for name in e.meta_fields])
    if not _aux_equal(aux, spec[2]):
      raise ValueError(f"Mismatch custom dataclass node data: {spec[2]!r} != "
                       f"{aux!r}; value: {x!r}.")
    children = [getattr(x, name) for name in e.data_fields]
  else:
    typ = spec[1]
    if type(x) is not typ:
      raise ValueError(f"Custom node type mismatch: expected type: {typ}, "
                       f"value: {x!r}.")
    children, aux = _call_flatten(entries[typ].flatten, x)
    if not _aux_equal(aux, spec[2]):
      raise ValueError(f"Mismatch custom node data: {spec[2]!r} != {aux!r}; "
                       f"value: {x!r}.")
    children = list(children)
    if len(children) != n:
      raise ValueError(f"Custom type arity mismatch: {len(children)} != {n}; "
                       f"value: {x!r}.")
  i = _HDR
  for c in children:
    cs = spec[i]
    i += 1
    if cs is None:
      append(c)
    else:
      _flatten_up_to(cs, c, append, entries)


class _Mismatch(Exception):
  """Raised by compiled flatten_up_to; the generic path then explains the error."""


def _generic_marker(x, s):
  """Stands for "no compiled flatten_up_to": callers take the generic path."""
  raise _Mismatch


def _compile_flatten_up_to(spec, entries):
  """Generates ``f(x, s)`` returning the leaves of `x` cut at `spec`'s leaves, or
  raising `_Mismatch` (the caller re-runs the generic path for JAX's message)."""
  consts: dict[str, Any] = {"_Mismatch": _Mismatch, "_tuple": tuple}
  lines: list[str] = []
  out: list[str] = []
  counter = [0]

  def const(obj):
    name = f"_c{len(consts)}"
    consts[name] = obj
    return name

  def tmp():
    counter[0] += 1
    return f"v{counter[0]}"

  def emit(sp, var, access):
    if sp is None:
      out.append(var)
      return
    k = sp[0]
    n = len(sp) - _HDR
    if k == _K_NONE:
      lines.append(f"if {var} is not None: raise _Mismatch")
      return
    if k == _K_TUPLE or k == _K_LIST:
      tn = "tuple" if k == _K_TUPLE else "list"
      lines.append(f"if type({var}) is not {tn} or len({var}) != {n}: raise _Mismatch")
      child_vars = [f"{var}[{i}]" for i in range(n)]
    elif k == _K_DICT:
      keys = sp[2]
      if all(type(key) is str for key in keys):
        lits = [repr(key) for key in keys]
      else:
        lits = [f"{access}[2][{i}]" for i in range(n)]
      cond = " or ".join([f"type({var}) is not dict", f"len({var}) != {n}"]
                         + [f"{lit} not in {var}" for lit in lits])
      lines.append(f"if {cond}: raise _Mismatch")
      child_vars = [f"{var}[{lit}]" for lit in lits]
    elif k == _K_NAMEDTUPLE:
      lines.append(f"if type({var}) is not {const(sp[1])}: raise _Mismatch")
      child_vars = [f"{var}[{i}]" for i in range(n)]
    elif k == _K_DATACLASS:
      e = entries[sp[1]]
      lines.append(f"if type({var}) is not {const(sp[1])}: raise _Mismatch")
      aux = "(" + "".join(f"{var}.{m}, " for m in e.meta_fields) + ")"
      if e.meta_fields:
        if not all(m.isidentifier() for m in e.meta_fields + e.data_fields):
          raise _Mismatch
        a = tmp()
        lines.append(f"{a} = {aux}")
        lines.append(f"if not ({a} is {access}[2] or {a} == {access}[2]): "
                     "raise _Mismatch")
      elif not all(m.isidentifier() for m in e.data_fields):
        raise _Mismatch
      child_vars = [f"{var}.{d}" for d in e.data_fields]
    else:
      e = entries[sp[1]]
      r, c, a = tmp(), tmp(), tmp()
      lines.append(f"if type({var}) is not {const(sp[1])}: raise _Mismatch")
      lines.append(f"{r} = {const(e.flatten)}({var})")
      lines.append(f"if type({r}) is not _tuple or len({r}) != 2: raise _Mismatch")
      lines.append(f"{c}, {a} = {r}")
      lines.append(f"if not ({a} is {access}[2] or {a} == {access}[2]): "
                   "raise _Mismatch")
      lines.append(f"{c} = _tuple({c})")
      lines.append(f"if len({c}) != {n}: raise _Mismatch")
      child_vars = [f"{c}[{i}]" for i in range(n)]
    for i, (cs, cv) in enumerate(zip(sp[_HDR:], child_vars)):
      if cs is None:
        out.append(cv)
      else:
        v = tmp()
        lines.append(f"{v} = {cv}")
        emit(cs, v, f"{access}[{i + _HDR}]")

  emit(spec, "x", "s")
  body = "".join(f"  {line}\n" for line in lines)
  src = f"def _flatten_up_to(x, s):\n{body}  return [{', '.join(out)}]\n"
  namespace = dict(consts)
  exec(compile(src, "<pyjax.tree_util flatten_up_to>", "exec"), namespace)
  fn = namespace["_flatten_up_to"]
  fn.__source__ = src
  return fn


# -- from_iterable_tree ------------------------------------------------------------

def _from_iterable(spec, xs, entries):
  if spec is None:
    return xs
  k = spec[0]
  if k == _K_NONE:
    return None
  xs = list(xs)
  n = len(spec) - _HDR
  if len(xs) != n:
    raise ValueError(f"Arity mismatch between trees: expected {n} children, "
                     f"got {len(xs)}.")
  children = [_from_iterable(c, x, entries) for c, x in zip(spec[_HDR:], xs)]
  if k == _K_TUPLE:
    return tuple(children)
  if k == _K_LIST:
    return children
  if k == _K_DICT:
    return dict(zip(spec[2], children))
  if k == _K_NAMEDTUPLE:
    return spec[1](*children)
  return entries[spec[1]].unflatten(spec[2], tuple(children))
