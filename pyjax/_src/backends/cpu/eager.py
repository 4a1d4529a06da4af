"""All eager NumPy implementations of the CPU backend (one module per primitive family)."""
from pyjax._src.backends.cpu.registry import impls  # noqa: F401
from pyjax._src.backends.cpu import eager_elementwise  # noqa: F401

for _mod in ("eager_structural", "eager_indexing", "eager_reductions", "eager_linalg", "eager_sort", "eager_random",
             "eager_lax_linalg", "eager_fft", "eager_control_flow",
             "eager_callbacks", "eager_misc", "eager_rng", "eager_sparse"):
  try:
    __import__(f"pyjax._src.backends.cpu.{_mod}")
  except ModuleNotFoundError as e:  # families are added incrementally
    if e.name != f"pyjax._src.backends.cpu.{_mod}":
      raise
