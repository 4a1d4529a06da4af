"""pyjax.experimental.pallas.triton (as jax.experimental.pallas.triton): Triton-style
kernel operations, run on CPU with JAX's interpret-mode semantics."""
import dataclasses as _dataclasses

from pyjax._src.pallas import primitives as _p
from pyjax._src.pallas.primitives import atomic_cas, dot, max_contiguous  # noqa: F401


@_dataclasses.dataclass(frozen=True)
class CompilerParams:
  """Triton compiler parameters (accepted; unused by the CPU backend)."""
  num_warps: int | None = None
  num_stages: int | None = None
  BACKEND = "triton"


def load(ref, *, mask=None, other=None, cache_modifier=None, eviction_policy=None,
         volatile=False):
  """Read the whole ``ref`` (index it with ``ref.at[...]``); ``other`` where ``mask`` is
  False; reads past the end give uninitialized values."""
  return _p.load(ref, None, mask=mask, other=other)


def store(ref, val, *, mask=None, eviction_policy=None):
  """Write ``val`` into the whole ``ref`` (``ref.at[...]`` to index) where ``mask``
  holds."""
  _p.store(ref, None, val, mask=mask)


def _atomic(kind):
  def op(x_ref_or_view, idx, val, *, mask=None):
    return _p.atomic_rmw(x_ref_or_view, idx, val, mask=mask, atomic_type=kind)
  op.__name__ = f"atomic_{kind.value}"
  op.__doc__ = (f"Atomically combine ``val`` into ``x_ref_or_view[idx]`` ({kind.value}); "
                "returns the previous values.")
  return op


atomic_xchg = _atomic(_p.AtomicOpType.XCHG)
atomic_add = _atomic(_p.AtomicOpType.ADD)
atomic_max = _atomic(_p.AtomicOpType.MAX)
atomic_min = _atomic(_p.AtomicOpType.MIN)
atomic_and = _atomic(_p.AtomicOpType.AND)
atomic_or = _atomic(_p.AtomicOpType.OR)
atomic_xor = _atomic(_p.AtomicOpType.XOR)
