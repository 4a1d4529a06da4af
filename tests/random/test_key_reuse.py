"""jax_debug_key_reuse: KeyReuseError for reused typed PRNG keys (compared with JAX 0.10)."""
import pytest

import pyjax
from pyjax._src import key_reuse


def _jax():
  return pytest.importorskip("jax")


def _outcome(fn):
  try:
    fn()
    return "ok"
  except Exception as e:  # noqa: BLE001
    return type(e).__name__, str(e)


def _uniform_twice(m):
  k = m.random.key(0)
  m.random.uniform(k)
  m.random.uniform(k)


def _split_then_normal(m):
  k = m.random.key(1)
  m.random.split(k)
  m.random.normal(k)


def _split_twice(m):
  k = m.random.key(1)
  m.random.split(k)
  m.random.split(k)


def _bits_twice(m):
  k = m.random.key(8)
  m.random.bits(k)
  m.random.bits(k)


def _jit_reuse(m):
  m.jit(lambda k: m.random.uniform(k) + m.random.uniform(k))(m.random.key(2))


def _jit_bits_reuse(m):
  def f(k):
    m.random.bits(k)
    return m.random.bits(k)
  m.jit(f)(m.random.key(2))


def _jit_split_then_use(m):
  def g(k):
    m.random.split(k)
    return m.random.uniform(k)
  m.jit(g)(m.random.key(1))


def _jit_call_twice(m):
  g = m.jit(lambda k: m.random.uniform(k))
  k = m.random.key(3)
  g(k)
  g(k)


def _proper_split(m):
  @m.jit
  def h(k):
    k1, k2 = m.random.split(k)
    return m.random.normal(k1) + m.random.normal(k2)
  h(m.random.key(11))


def _fold_in_does_not_consume(m):
  k = m.random.key(4)
  m.random.fold_in(k, 1)
  m.random.fold_in(k, 2)
  m.random.uniform(k)


def _key_data_does_not_consume(m):
  k = m.random.key(6)
  m.random.key_data(k)
  m.random.uniform(k)
  m.random.uniform(k)


def _clone(m):
  k = m.random.key(7)
  m.random.uniform(m.random.clone(k))
  m.random.uniform(k)


def _raw_keys_unchecked(m):
  k = m.random.PRNGKey(5)
  m.random.uniform(k)
  m.random.uniform(k)


def _vmap(m):
  m.vmap(lambda k: m.random.uniform(k))(m.random.split(m.random.key(0), 3))


CASES = {f.__name__[1:]: f for f in [
    _uniform_twice, _split_then_normal, _split_twice, _bits_twice, _jit_reuse,
    _jit_bits_reuse, _jit_split_then_use, _jit_call_twice, _proper_split,
    _fold_in_does_not_consume, _key_data_does_not_consume, _clone, _raw_keys_unchecked,
    _vmap]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
  jax = _jax()
  outs = []
  for m in (pyjax, jax):
    with m.debug_key_reuse(True):
      outs.append(_outcome(lambda: CASES[name](m)))
  assert outs[0] == outs[1]


def test_error_class_and_off_by_default():
  assert pyjax.config.jax_debug_key_reuse is False
  k = pyjax.random.key(0)
  pyjax.random.uniform(k)
  pyjax.random.uniform(k)   # no checking when off
  pyjax.config.update("jax_debug_key_reuse", True)
  try:
    k = pyjax.random.key(0)
    pyjax.random.uniform(k)
    with pytest.raises(pyjax.errors.KeyReuseError, match="Previously-consumed key"):
      pyjax.random.uniform(k)
  finally:
    pyjax.config.update("jax_debug_key_reuse", False)
  from pyjax.experimental import key_reuse as public
  assert public.KeyReuseError is pyjax.errors.KeyReuseError
  assert issubclass(key_reuse.errors.KeyReuseError, RuntimeError)
