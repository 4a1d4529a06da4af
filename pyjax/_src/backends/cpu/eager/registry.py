"""The CPU backend's eager implementations, keyed by primitive name.

Each function takes NumPy arrays (already of the operands' canonical dtypes) and the
primitive's params, and returns NumPy arrays; the dispatcher casts the result to the
output aval's dtype, so an implementation may compute half types in float32.
"""
import warnings

impls = {}

# NumPy warns on overflow, division by zero and invalid values; XLA silently produces
# inf/nan.  Silence those warnings for every module of the CPU backend.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"pyjax\._src\.backends\..*")


def is_fp_warning(w):
  """Whether ``w`` (a RuntimeWarning raised as an error) is NumPy's floating-point warning
  ("divide by zero encountered in divide").  A program whose warnings filter turns
  warnings into errors (pytest's ``filterwarnings = error``, ``python -W error``) outranks
  the filter above; callers then run the computation again under ``np.errstate`` (the
  implementations are pure), so the caller never sees a warning XLA would not give."""
  return "encountered in" in str(w)


def run_quietly(fn, *args, **kwargs):
  """``fn(*args, **kwargs)`` with NumPy's floating-point warnings off (see is_fp_warning)."""
  import numpy as np
  with np.errstate(all="ignore"):
    return fn(*args, **kwargs)


def register(name):
  def deco(fn):
    impls[name] = fn
    return fn
  return deco
