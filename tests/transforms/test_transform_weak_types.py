"""Weak types (and dtypes, shapes, values) under transforms, against JAX: jacfwd/jacrev/
hessian/grad results, and vmap of select_n / jnp.where with batched selectors and unbatched
(scalar) cases (issue #5)."""
import itertools

import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax import lax as plax

jax = pytest.importorskip("jax")


def _leaves(j, x):
  return [(str(v.dtype), tuple(v.shape), bool(v.weak_type),
           np.asarray(v).round(5).tolist()) for v in j.tree_util.tree_leaves(x)]


def _cases(j, jnp, lax):
  wv = lax.broadcast(1.0, (2,))                     # a weakly typed vector
  return {
      "s->s": (lambda x: x * 2., 1.0),
      "s->v": (lambda x: x * jnp.ones(2), 1.0),
      "s->v weak": (lambda x: x * lax.broadcast(2.0, (2,)), 1.0),
      "wv->s": (lambda x: jnp.sum(x), wv),
      "wv->wv": (lambda x: x * 2., wv),
      "f32->s": (lambda x: x * 2., np.float32(1)),
      "s->s strong": (lambda x: x * np.float32(2), 1.0),
      "tuple": (lambda x: (x * 2., x * np.float32(3)), 1.0),
      "const": (lambda x: 2.0, 1.0),
      "const f32": (lambda x: 2.0, np.float32(1)),
      "jit s->s": (j.jit(lambda x: x * 2.), 1.0),
      "jit sin": (j.jit(jnp.sin), 1.0),
  }


@pytest.mark.parametrize("name", list(_cases(pyjax, pjnp, plax)))
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian", "grad"])
def test_jacobian_weak_types(name, transform):
  """jacrev rows are cotangents of the input (weak iff the input is); jacfwd pushes a
  basis that is weak iff the input is, so its weak type follows the function."""
  jf, jx = _cases(jax, jax.numpy, jax.lax)[name]
  pf, px = _cases(pyjax, pjnp, plax)[name]
  if transform == "grad" and name in ("s->v", "s->v weak", "wv->wv", "tuple"):
    pytest.skip("grad needs a scalar output")

  def run(j, f, x):
    try:
      return _leaves(j, getattr(j, transform)(f)(x))
    except Exception as e:   # noqa: BLE001  (compare the exception class)
      return type(e).__name__
  assert run(pyjax, pf, px) == run(jax, jf, jx)


def _mk(kind, per, dt, size=3):
  if kind == "u":
    return np.full(per, 1 if dt == np.bool_ else 2, dt), None
  shp = (size,) + per if kind == "b0" else per + (size,)
  return (np.arange(int(np.prod(shp))).reshape(shp) % 2).astype(dt), (0 if kind == "b0"
                                                                      else len(per))


@pytest.mark.parametrize("wk,wper,ak,bk,cper", [
    c for c in itertools.product(["b0", "b1", "u"], [(), (2,)], ["b0", "b1", "u"],
                                 ["b0", "b1", "u"], [(), (2,)])
    if not (c[1] and c[1] != c[4]) and (c[0], c[2], c[3]).count("u") < 3
    and not (c[0] == "b1" and not c[1])])
def test_vmap_select_n(wk, wper, ak, bk, cper):
  w, wa = _mk(wk, wper, np.bool_)
  a, aa = _mk(ak, cper, np.float32)
  b, ba = _mk(bk, cper, np.float32)
  fs = [lambda m: (lambda w, a, b: m[2].select_n(w, a, b)),
        lambda m: (lambda w, a, b: m[1].where(w, a, b)),
        lambda m: (lambda w, a, b: m[1].where(w, a, 2.0)),
        lambda m: (lambda w, a, b: m[2].select_n(w, 1.0, b))]
  for mk in fs[:3] if cper else fs:
    want = _leaves(jax, jax.vmap(mk((jax, jax.numpy, jax.lax)), in_axes=(wa, aa, ba))(w, a, b))
    got = _leaves(pyjax, pyjax.vmap(mk((pyjax, pjnp, plax)), in_axes=(wa, aa, ba))(w, a, b))
    assert got == want
