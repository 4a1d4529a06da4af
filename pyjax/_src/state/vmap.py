"""Ref arguments of ``vmap`` (see ``types.py``).

A Ref passed with ``in_axes=None`` goes through unchanged (every example reads and writes the
same ref; writing a batched value into it is an error).  A Ref mapped along an axis is seen
by each example as its slice: inside the mapped function it is a local ref holding the
batched value; after the function returns, the (re-batched) value is written back into the
outer ref, as in JAX.
"""
from __future__ import annotations

from pyjax._src.interpreters import batching
from pyjax._src.state import types
from pyjax._src.state.types import Ref


def size_leaves(leaves):
  """The leaves with each Ref replaced by its current value (for the mapped axis size)."""
  return [types.slot(x).value if type(x) is Ref else x for x in leaves]


def enter(interp, ins, mapped):
  """Replace each mapped Ref argument (position, ref, axis) by a local batched ref."""
  frames = types.current_frames()
  frame = frames[-1] if frames else None
  ins = list(ins)
  local = []
  for i, ref, ax in mapped:
    val = types.slot(ref).value
    nd = len(ref.shape)
    d = ax + nd if ax < 0 else ax
    r = Ref(batching.BatchTracer(interp, val, d), frame)
    r.interp = interp
    ins[i] = r
    local.append((ref, r, d))
  return ins, local


def exit(interp, local, axis_data):  # noqa: A001
  """Write each local batched ref's final value back into its outer ref."""
  for ref, r, d in local:
    v, vd = interp.to_batch_info(r.value)
    v = batching.matchaxis(axis_data.name, axis_data.size, vd, d, v)
    s = types.slot(ref)
    types.check_write(s, v)
    s.value = v
    s.written = True
