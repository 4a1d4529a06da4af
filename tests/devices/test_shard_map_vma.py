"""shard_map's check_vma (issue 18): an output that may vary along a mesh axis its out_spec
leaves out raises JAX's ValueError at trace time; programs whose outputs are replicated
where the out_specs say (psum'd, constants, pcast to 'varying' then named, loop carries)
run and give JAX's values.  The same case code runs under real JAX (the oracle, 8 CPU
devices) and pyjax."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax.sharding import Mesh, PartitionSpec as P

pytestmark = needs8

_CASES = r'''
def vma_cases(jax, jnp, lax, P, mesh):
  x = np.arange(16., dtype=np.float32).reshape(8, 2)
  sm = lambda f, i, o, **kw: jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)
  vary = lambda v, a: lax.pcast(v, a, to='varying')

  def swap_scan(a, b):   # carry (a, b) -> (b, a): b must vary as a does
    (a, b), _ = lax.scan(lambda c, _: ((c[1], c[0]), ()), (a, b), (), length=2)
    return a + b

  def acc_scan(a):       # an invariant start made varying, then summed over 'i'
    c, _ = lax.scan(lambda c, r: (c + r, ()), vary(jnp.zeros(2), 'i'), a)
    return lax.psum(c, 'i')

  def loss(w):
    return sm(lambda w, a: lax.psum((vary(w, ('i', 'j')) * a).sum(), ('i', 'j')),
              (P(), P('i', 'j')), P())(w, x)

  return {
      # errors
      'ident': lambda: sm(lambda a: a, P('i'), P())(x),
      'one_axis_left_out': lambda: sm(lambda a: a, P('i', 'j'), P('i'))(x),
      'all_gather_varies': lambda: sm(lambda a: lax.all_gather(a, 'i', tiled=True), P('i'),
                                      P())(x),
      'axis_index': lambda: sm(lambda a: a * lax.axis_index('j'), P(), P())(x),
      'pcast': lambda: sm(lambda a: vary(a, 'i'), P(), P())(x),
      'first_of_many': lambda: sm(lambda a: (lax.psum(a, ('i', 'j')), a * 2, a), P('i', 'j'),
                                  (P(), P('j'), P()))(x),
      'subset_axes': lambda: sm(lambda a: a, P('i'), P(), axis_names={'i'})(x),
      'under_jit': lambda: jax.jit(sm(lambda a: a + 1, P('i'), P()))(x),
      'swap_scan': lambda: sm(swap_scan, (P('i'), P()), P('i'))(x, x[:2]),
      # valid programs
      'psum': lambda: sm(lambda a: lax.psum(a, 'i'), P('i'), P())(x),
      'pmean_j': lambda: sm(lambda a: lax.pmean(a, 'j'), P('i', 'j'), P('i'))(x),
      'const': lambda: sm(lambda a: jnp.ones(3) * 2, P('i'), P())(x),
      'pcast_index': lambda: sm(lambda a: vary(a, 'i') + lax.axis_index('j'), P(),
                                P('i', 'j'))(x),
      'swap_scan_pcast': lambda: sm(lambda a, b: swap_scan(a, vary(b, 'i')), (P('i'), P()),
                                    P('i'))(x, x[:2]),
      'acc_scan': lambda: sm(acc_scan, P('i'), P())(x),
      'while_cond_jit': lambda: sm(lambda a: lax.while_loop(
          lambda c: c[0] < 3, lambda c: (c[0] + 1, lax.cond(
              c[0] > 0, lambda: c[1] + jax.jit(lambda v: lax.pmax(v, 'i'))(a), lambda: c[1])),
          (0, jnp.zeros((2, 2))))[1], P('i'), P())(x),
      'unchecked': lambda: sm(lambda a: a, P('i'), P(), check_vma=False)(x),
      'grad_pcast': lambda: jax.grad(loss)(np.ones(2, np.float32)),
  }
'''

_ORACLE = _CASES + r'''
for k, fn in vma_cases(jax, jnp, lax, P, Mesh(np.array(jax.devices()).reshape(4, 2), ('i', 'j'))).items():
  try:
    out[k] = ('ok', np.asarray(fn()))
  except Exception as e:
    out[k] = ('error', type(e).__name__, str(e))
out['pmap_out_axes_none'] = np.asarray(jax.pmap(lambda v: v * 2, out_axes=None)(np.arange(8., dtype=np.float32)))
'''

_ERRORS = ["ident", "one_axis_left_out", "all_gather_varies", "axis_index", "pcast",
           "first_of_many", "subset_axes", "under_jit"]
_VALID = ["psum", "pmean_j", "const", "pcast_index", "swap_scan_pcast", "acc_scan",
          "while_cond_jit", "unchecked", "grad_pcast"]


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_ORACLE)


@pytest.fixture(scope="module")
def cases():
  ns = {"np": np}
  exec(_CASES, ns)
  return ns["vma_cases"](pyjax, jnp, lax, P,
                         Mesh(np.array(pyjax.devices()).reshape(4, 2), ("i", "j")))


@pytest.mark.parametrize("name", _ERRORS)
def test_check_vma_error_matches_jax(oracle, cases, name):
  want = oracle[name]
  assert want[0] == "error", want
  with pytest.raises(ValueError) as e:
    cases[name]()
  assert (type(e.value).__name__, str(e.value)) == want[1:]


def test_scan_carry_vma_change_is_accepted(oracle, cases):
  # JAX types the carry and rejects it (TypeError); pyjax infers the carry's vma as a
  # fixpoint, so the output (varying along 'i', named in out_specs) is accepted
  assert oracle["swap_scan"][:2] == ("error", "TypeError")
  np.testing.assert_array_equal(np.asarray(cases["swap_scan"]()),
                                np.asarray(cases["swap_scan_pcast"]()))


def test_valid_programs_match_jax(oracle, cases):
  for name in _VALID:
    want = oracle[name]
    assert want[0] == "ok", (name, want)
    got = np.asarray(cases[name]())
    assert got.dtype == want[1].dtype, name
    np.testing.assert_allclose(got, want[1], rtol=1e-6, err_msg=name)


def test_pmap_unchecked(oracle):
  # pmap is a shard_map with check_vma=False (as in JAX): out_axes=None takes device 0's
  out = pyjax.pmap(lambda v: v * 2, out_axes=None)(np.arange(8., dtype=np.float32))
  np.testing.assert_array_equal(np.asarray(out), oracle["pmap_out_axes_none"])
