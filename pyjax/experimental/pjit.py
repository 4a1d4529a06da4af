"""``jax.experimental.pjit``: ``pjit`` is deprecated (since JAX 0.8) in favour of
``jax.jit``, which it calls; using it warns with JAX's ``DeprecationWarning``."""
from pyjax._src.api import jit as _jit
from pyjax._src.deprecations import deprecation_getattr as _deprecation_getattr


def _pjit(fun, in_shardings=None, out_shardings=None, static_argnums=None,
          static_argnames=None, donate_argnums=None, donate_argnames=None,
          keep_unused=False, device=None, backend=None, inline=False,
          compiler_options=None):
  """`jax.experimental.pjit.pjit` has been deprecated. Please use `jax.jit`."""
  return _jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
              static_argnums=static_argnums, static_argnames=static_argnames,
              donate_argnums=donate_argnums, donate_argnames=donate_argnames,
              keep_unused=keep_unused, device=device, backend=backend, inline=inline,
              compiler_options=compiler_options)


_pjit.__name__ = "pjit"
_deprecations = {
    "pjit": ("jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` "
             "instead.", _pjit),
}
__getattr__ = _deprecation_getattr(__name__, _deprecations)
