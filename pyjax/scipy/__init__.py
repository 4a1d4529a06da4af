"""pyjax.scipy: SciPy's API on pyjax arrays (thin re-exports of pyjax._src.scipy).

Submodules (``pyjax.scipy.signal``, ...) are imported on first attribute access."""
import importlib as _importlib


def __getattr__(name):
  if name.startswith("_"):
    raise AttributeError(name)
  try:
    mod = _importlib.import_module(f"pyjax.scipy.{name}")
  except ModuleNotFoundError as e:
    if e.name != f"pyjax.scipy.{name}":
      raise
    raise AttributeError(f"module 'pyjax.scipy' has no attribute {name!r}") from None
  globals()[name] = mod
  return mod
