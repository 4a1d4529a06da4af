"""``jax.debug.visualize_array_sharding`` / ``visualize_sharding`` /
``inspect_array_sharding``: which device holds which part of an array.

The picture is JAX's table (as drawn by ``rich`` without colour): one cell per distinct
shard of a 1-d or 2-d array, labelled with the platform and the ids of the devices holding
it, sized in proportion to the shard.  pyjax draws it itself as plain text (no ``rich``
needed); ``use_color`` and ``color_map`` are accepted and ignored.
"""
from __future__ import annotations

from pyjax._src import core


def _chunk_index(n, s):
  if not isinstance(s, slice):
    return int(s)
  start, stop, _ = s.indices(n)
  size = stop - start
  return start // size if size else 0


def _layout(shape, sharding):
  """{(row, col): (device ids, width fraction, height fraction or None)}."""
  cells = {}
  for dev, idx in sharding.devices_indices_map(tuple(shape)).items():
    idx = tuple(idx) + (slice(None),) * (len(shape) - len(idx))
    if len(shape) == 2:
      (r0, r1, _), (c0, c1, _) = idx[0].indices(shape[0]), idx[1].indices(shape[1])
      key = (_chunk_index(shape[0], idx[0]), _chunk_index(shape[1], idx[1]))
      h, w = (r1 - r0) / shape[0], (c1 - c0) / shape[1]
    else:
      c0, c1, _ = idx[0].indices(shape[0])
      key = (0, _chunk_index(shape[0], idx[0]))
      h, w = None, (c1 - c0) / shape[0]
    ids, _, _ = cells.get(key, (set(), w, h))
    ids.add(dev.id)
    cells[key] = (ids, w, h)
  return cells


def sharding_table(shape, sharding, *, scale=1.0, min_width=9, max_width=80):
  """The text of ``visualize_sharding(shape, sharding)``."""
  shape = tuple(shape)
  if len(shape) > 2 or len(shape) < 1:
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  kind = next(iter(sharding.device_set)).platform.upper()
  base_h = int(10 * scale)
  base_w = int(base_h * ((shape[1] if len(shape) == 2 else 1) / shape[0]))
  cells = _layout(shape, sharding)
  nrows = max(r for r, _ in cells) + 1
  ncols = max(c for _, c in cells) + 1
  rendered = {}
  for (r, c), (ids, w, h) in cells.items():
    label = f"{kind} " + ",".join(str(i) for i in sorted(ids))
    width = min(max(int(w * base_w * 2.5), min_width), max_width)
    height = 1 if h is None else int(h * base_h)
    left, rem = divmod(width - len(label) - 2, 2)
    left, right = max(left, 0), max(left + rem, 0)
    top, rem = divmod(height - 2, 2)
    top, bottom = max(top, 0), max(top + rem, 0)
    text = " " * left + label + " " * right
    rendered[r, c] = [""] * top + [text] + [""] * bottom
  col_w = [max(len(rendered[r, c][top_line]) for r in range(nrows)
               for top_line in range(len(rendered[r, c]))) for c in range(ncols)]
  lines = ["┌" + "┬".join("─" * w for w in col_w) + "┐"]
  for r in range(nrows):
    height = max(len(rendered[r, c]) for c in range(ncols))
    for k in range(height):
      row = []
      for c in range(ncols):
        cell = rendered[r, c]
        text = cell[k] if k < len(cell) else ""
        pad = col_w[c] - len(text)
        row.append(text + " " * pad)
      lines.append("│" + "│".join(row) + "│")
    if r + 1 < nrows:
      lines.append("├" + "┼".join("─" * w for w in col_w) + "┤")
  lines.append("└" + "┴".join("─" * w for w in col_w) + "┘")
  return "\n".join(lines)


def visualize_sharding(shape, sharding, *, use_color=True, scale=1.0, min_width=9,
                       max_width=80, color_map=None):
  """Print the table of how ``sharding`` lays out an array of ``shape`` (1-d or 2-d).
  Differs from JAX: plain text, no colours."""
  del use_color, color_map
  print(sharding_table(shape, sharding, scale=scale, min_width=min_width,
                       max_width=max_width))


def visualize_array_sharding(arr, **kwargs):
  """Print the table of how ``arr`` is laid out over devices (see
  ``visualize_sharding``)."""
  if isinstance(arr, core.Tracer):
    raise ValueError("visualize_array_sharding of a traced value: call it on a concrete "
                     "Array (pyjax's jit computes the global program, so a traced value "
                     "has no layout)")
  visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value, *, callback):
  """Call ``callback(sharding)`` for every Array leaf of ``value``.  Differs from JAX:
  under a trace (``jit``) the callback is called at trace time with the sharding of
  the traced value's aval (pyjax does not propagate shardings through programs)."""
  from pyjax._src import tree_util
  for leaf in tree_util.tree_leaves(value):
    if isinstance(leaf, core.Tracer):
      callback(leaf.aval.sharding)
    else:
      callback(leaf.sharding)
