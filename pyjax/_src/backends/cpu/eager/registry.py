"""The CPU backend's eager implementations, keyed by primitive name.

Each function takes NumPy arrays (already of the operands' canonical dtypes) and the
primitive's params, and returns NumPy arrays; the dispatcher casts the result to the
output aval's dtype, so an implementation may compute half types in float32.
"""
from pyjax._src.runtime import dispatch as _dispatch

impls = {}

# NumPy warns on overflow, division by zero and invalid values; XLA silently produces
# inf/nan.  Silence those warnings for every module of the CPU backend (also once a
# warnings.catch_warnings block that was open at this import has closed).
_dispatch.quiet_warnings(RuntimeWarning, r"pyjax\._src\.backends\..*")


def register(name):
  def deco(fn):
    impls[name] = fn
    return fn
  return deco
