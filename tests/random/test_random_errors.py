"""Invalid sample sizes to the random samplers raise JAX 0.10's exception class and message
(issue 16): the samplers JAX broadcasts its parameters to the shape raise TypeError there;
the others (and ``split``) reach lowering in JAX and fail with jaxlib's MLIRError."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.errors import MLIRError

_LOWERED = "Invalid type:\nerror: unknown: invalid tensor dimension size"
_BROADCAST = ("Only non-negative indices are allowed when broadcasting static shapes, but got "
              "shape {}.")

# name -> (call(jax module, key), expected class name, expected message)
CASES = {
    "normal": (lambda j, k: j.random.normal(k, (2, -1)), "MLIRError", _LOWERED),
    "normal_int_shape": (lambda j, k: j.random.normal(k, -1), "MLIRError", _LOWERED),
    "uniform": (lambda j, k: j.random.uniform(k, (-1,)), "MLIRError", _LOWERED),
    "bits": (lambda j, k: j.random.bits(k, (-3,)), "MLIRError", _LOWERED),
    "exponential": (lambda j, k: j.random.exponential(k, (-1,)), "MLIRError", _LOWERED),
    "split": (lambda j, k: j.random.split(k, -1), "MLIRError", _LOWERED),
    "split_shape": (lambda j, k: j.random.split(k, (2, -1)), "MLIRError", _LOWERED),
    "split_raw_key": (lambda j, k: j.random.split(j.random.PRNGKey(0), -2), "MLIRError",
                      _LOWERED),
    "normal_jit": (lambda j, k: j.jit(lambda k: j.random.normal(k, (-1,)))(k), "MLIRError",
                   _LOWERED),
    "randint": (lambda j, k: j.random.randint(k, (2, -1), 0, 3), "TypeError",
                _BROADCAST.format((2, -1))),
    "bernoulli": (lambda j, k: j.random.bernoulli(k, 0.5, (-1,)), "TypeError",
                  _BROADCAST.format((-1,))),
    "gamma": (lambda j, k: j.random.gamma(k, 1.0, (-1,)), "TypeError", _BROADCAST.format((-1,))),
    "double_sided_maxwell": (lambda j, k: j.random.double_sided_maxwell(k, 0., 1., (-1,)),
                             "TypeError", _BROADCAST.format((-1,))),
    "ball": (lambda j, k: j.random.ball(k, 2, shape=(-1,)), "TypeError",
             _BROADCAST.format((-1, 2))),
    "poisson": (lambda j, k: j.random.poisson(k, 2., (-1,)), "TypeError",
                "broadcast_in_dim shape must have every element be nonnegative, got (-1,)."),
}


def _error(mod, call):
  with pytest.raises(Exception) as info:
    call(mod, mod.random.key(0))
  return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_negative_sample_size_error(name):
  call, cls, msg = CASES[name]
  assert _error(pyjax, call) == (cls, msg)


def test_negative_sample_size_errors_match_jax():
  jax = pytest.importorskip("jax")
  for name, (call, _, _) in CASES.items():
    assert _error(pyjax, call) == _error(jax, call), name


def test_mlir_error_class_and_zero_sizes():
  with pytest.raises(MLIRError):
    pyjax.random.normal(pyjax.random.key(0), (-1,))
  assert issubclass(MLIRError, Exception) and not issubclass(MLIRError, (TypeError, ValueError))
  k = pyjax.random.key(0)
  assert pyjax.random.normal(k, (0, 3)).shape == (0, 3)
  assert pyjax.random.split(k, 0).shape == (0,)


@pytest.mark.parametrize("x,shape,cls", [
    (1., (-1,), TypeError), (np.ones(1, np.float32), (-2,), TypeError),
    (np.ones(3, np.float32), (-1, 3), TypeError), (np.ones(3, np.float32), (-3,), ValueError)])
def test_broadcast_to_negative_size(x, shape, cls):
  """A negative size that the broadcasting check accepts is broadcast_in_dim's TypeError (as
  JAX), one it rejects the check's ValueError."""
  with pytest.raises(cls):
    jnp.broadcast_to(x, shape)
