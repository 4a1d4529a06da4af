"""jnp.ufunc objects: the named ufuncs of jax.numpy (jnp.add, jnp.maximum, ...) against real
JAX: which names are ufuncs, their attributes and repr, calls, and the reduce, accumulate,
outer, at and reduceat methods (values, dtypes, errors), also under jit, grad and vmap."""
import math

import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax._src.numpy import ufuncs as _raw

jax = pytest.importorskip("jax")
jnp = jax.numpy

# jax.numpy's ufunc objects (JAX 0.10.2), recorded so that the no-JAX checks need no JAX.
UFUNC_NAMES = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
               "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
               "negative", "subtract"]
BINARY = [n for n in UFUNC_NAMES if n != "negative"]
ARITH = ["add", "multiply", "maximum", "minimum", "subtract", "logaddexp", "logaddexp2"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]

X = {"f32": np.arange(1, 7, dtype=np.float32).reshape(2, 3) / 3,
     "i8": np.array([[1, 2, 3], [4, 5, 6]], np.int8),
     "i32": np.array([[1, 2, 3], [4, 5, 6]], np.int32),
     "u8": np.array([[1, 2, 3], [4, 5, 6]], np.uint8),
     "bool": np.array([[True, False, True], [True, True, False]])}
ROWS = (np.array([0, 0, 1]), np.array([1, 1, 2]))


def _supported(name, key):
  """Whether JAX defines ``name`` on inputs ``key`` (the others raise in both)."""
  if name in BITWISE:
    return key != "f32"
  if name == "subtract":
    return key != "bool"
  return True


def _check(got, want, rtol=2e-6):
  want = np.asarray(want)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  assert got.shape == want.shape
  if want.dtype.kind == "f":
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-6)
  else:
    np.testing.assert_array_equal(np.asarray(got), want)


# --- which names, attributes -----------------------------------------------------------
def test_ufunc_names_match_jax():
  want = sorted(n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc))
  assert want == UFUNC_NAMES
  got = sorted(n for n in dir(pjnp) if isinstance(getattr(pjnp, n), pjnp.ufunc))
  assert got == UFUNC_NAMES


@pytest.mark.parametrize("name", UFUNC_NAMES)
def test_attributes_and_repr(name):
  u, ju = getattr(pjnp, name), getattr(jnp, name)
  assert type(u) is pjnp.ufunc
  assert repr(u) == repr(ju) == f"<jnp.ufunc '{name}'>"
  assert u.__name__ == ju.__name__ == name
  assert (u.nin, u.nout, u.nargs) == (ju.nin, ju.nout, ju.nargs)
  if ju.identity is None:
    assert u.identity is None
  else:
    assert type(u.identity) is type(ju.identity) or isinstance(u.identity, float)
    assert u.identity == ju.identity and (u.identity != u.identity) == (ju.identity != ju.identity)
  assert u.__doc__
  assert hash(u) == hash(getattr(pjnp, name)) and u == getattr(pjnp, name)
  assert u != pjnp.ufunc(u._func, u.nin, u.nout, name=name + "_other")


@pytest.mark.parametrize("name", UFUNC_NAMES)
def test_call_dispatches_straight_to_the_function(name):
  u = getattr(pjnp, name)
  raw = getattr(_raw, name)
  assert u._call is raw  # the fast path: no wrapper between jnp.add(...) and ufuncs.add
  args = (X["i32"],) * u.nin
  _check(u(*args), getattr(jnp, name)(*args))
  assert pyjax.jit(u)(*args).dtype == u(*args).dtype


def test_call_scalars_weak_type_and_errors():
  r = pjnp.add(2, 3)
  assert r.weak_type and r.dtype == jnp.add(2, 3).dtype
  with pytest.raises(TypeError, match="add requires ndarray or scalar arguments"):
    pjnp.add([1], np.ones(1))
  with pytest.raises(TypeError):
    pjnp.add(np.ones(1))
  with pytest.raises(TypeError):
    pjnp.add(np.ones(1), np.ones(1), np.ones(1))


@pytest.mark.parametrize("name", UFUNC_NAMES)
def test_out_and_where_none_accepted_others_raise_like_jax(name):
  u = getattr(pjnp, name)
  args = (np.ones(2, np.float32 if name.startswith("logaddexp") else np.int32),) * u.nin
  np.testing.assert_array_equal(u(*args, out=None, where=None), u(*args))
  for kw, what in [({"out": np.ones(2)}, "out"), ({"where": True}, "where"),
                   ({"out": 1, "where": 2}, "out")]:
    with pytest.raises(NotImplementedError) as e:
      u(*args, **kw)
    assert str(e.value) == f"{what} argument of <jnp.ufunc '{name}'>"
    with pytest.raises(NotImplementedError) as ej:
      getattr(jnp, name)(*args, **kw)
    assert str(ej.value) == str(e.value)


def test_frompyfunc_generic_call_keeps_out_where_checks():
  f = pjnp.frompyfunc(lambda a, b: a * b + 1, 2, 1)
  np.testing.assert_allclose(f(np.arange(3.), 2.), np.arange(3.) * 2 + 1)
  with pytest.raises(NotImplementedError, match="out argument of"):
    f(np.ones(2), np.ones(2), out=np.ones(2))
  with pytest.raises(NotImplementedError, match="where argument of"):
    f(np.ones(2), np.ones(2), where=np.ones(2, bool))


# --- methods against JAX -----------------------------------------------------------------
METHODS = {
    "reduce0": lambda u, x: u.reduce(x),
    "reduce_none": lambda u, x: u.reduce(x, axis=None),
    "reduce_keepdims": lambda u, x: u.reduce(x, axis=1, keepdims=True),
    "accumulate": lambda u, x: u.accumulate(x, axis=1),
    "outer": lambda u, x: u.outer(x[0], x[1]),
    "reduceat": lambda u, x: u.reduceat(x, np.array([0, 2]), axis=1),
    "at": lambda u, x: u.at(x, ROWS, x[0, 0], inplace=False),
}


def _method_cases():
  for name in BINARY:
    for key in X:
      if not _supported(name, key):
        continue
      for m in METHODS:
        # JAX's generic reduceat fails for logaddexp on non-float input (a scan carry type
        # mismatch); pyjax returns the input dtype.
        if m == "reduceat" and name.startswith("logaddexp") and key != "f32":
          continue
        marks = [pytest.mark.slow] if key in ("i8", "u8") else []
        yield pytest.param(name, key, m, marks=marks)


@pytest.mark.parametrize("name,key,method", list(_method_cases()))
def test_methods_match_jax(name, key, method):
  f = METHODS[method]
  _check(f(getattr(pjnp, name), X[key]), f(getattr(jnp, name), X[key]))


@pytest.mark.parametrize("name", BINARY)
def test_reduce_options_match_jax(name):
  x, w = X["i32"], X["bool"]
  calls = [lambda u: u.reduce(x, axis=-1), lambda u: u.reduce(x, axis=None, keepdims=True)]
  if name not in BITWISE:
    calls.append(lambda u: u.accumulate(x, dtype=np.float32))
  if name not in BITWISE + LOGICAL + ["maximum"]:  # JAX rejects dtype= for these reduces
    calls.append(lambda u: u.reduce(x, dtype=np.float32))
  if name != "logaddexp":  # JAX's logaddexp.reduce fails with initial= (AssertionError)
    calls.append(lambda u: u.reduce(x, initial=3))
    calls.append(lambda u: u.reduce(x, where=w, initial=3))
  if name not in BITWISE:
    calls.append(lambda u: u.accumulate(np.zeros((0, 2), np.float32)))
  for call in calls:
    _check(call(getattr(pjnp, name)), call(getattr(jnp, name)))


@pytest.mark.parametrize("name", ["add", "multiply", "logaddexp2", "logical_and",
                                  "logical_or", "logical_xor"])
def test_reduce_empty_and_where_without_initial(name):
  for call in [lambda u: u.reduce(np.zeros((0,), np.float32)),
               lambda u: u.reduce(X["f32"], where=X["bool"])]:
    _check(call(getattr(pjnp, name)), call(getattr(jnp, name)))


@pytest.mark.parametrize("name", ["maximum", "minimum", "subtract"])
def test_reduce_without_identity_errors(name):
  u = getattr(pjnp, name)
  with pytest.raises(ValueError, match=f"reduction operation '{name}' does not have an "
                     "identity, so to use a where mask one has to specify 'initial'"):
    u.reduce(X["f32"], where=X["bool"])
  with pytest.raises(ValueError, match="zero-size array to reduction operation"):
    u.reduce(np.zeros((0,), np.float32))


@pytest.mark.parametrize("name", BITWISE)
def test_bitwise_reduce_requires_integers(name):
  with pytest.raises(ValueError, match="integer argument required; got dtype=float32"):
    getattr(pjnp, name).reduce(X["f32"])
  with pytest.raises(ValueError, match="integer argument required; got dtype=float32"):
    getattr(jnp, name).reduce(X["f32"])


def test_unary_ufunc_methods():
  neg, jneg = pjnp.negative, jnp.negative
  for key in ["f32", "i8", "i32", "u8"]:
    _check(neg.at(X[key], ROWS, inplace=False), jneg.at(X[key], ROWS, inplace=False))
  for m in ["reduce", "accumulate", "reduceat", "outer"]:
    with pytest.raises(ValueError, match=f"{m} only supported for binary ufuncs"):
      args = (X["f32"], np.array([0])) if m in ("reduceat", "outer") else (X["f32"],)
      getattr(neg, m)(*args)


def test_at_requires_inplace_false_and_scalar_index():
  with pytest.raises(NotImplementedError, match="immutable"):
    pjnp.add.at(np.zeros(3), np.array([0]), 1.0)
  for name in ARITH:
    u, ju = getattr(pjnp, name), getattr(jnp, name)
    _check(u.at(np.arange(4.0, dtype=np.float32), 1, 2.5, inplace=False),
           ju.at(np.arange(4.0, dtype=np.float32), 1, 2.5, inplace=False))


def test_accumulate_rejects_axis_none():
  for name in ["add", "maximum", "subtract"]:
    with pytest.raises(ValueError, match="accumulate does not allow multiple axes"):
      getattr(pjnp, name).accumulate(X["f32"], axis=None)


# --- under transformations ---------------------------------------------------------------
# b = 2.5 * x[0, 0] keeps every at() update away from ties (see the xfail below).
TRANSFORMED = {
    "reduce": lambda u, x: u.reduce(x, axis=1),
    "accumulate": lambda u, x: u.accumulate(x, axis=1),
    "outer": lambda u, x: u.outer(x[0], x[1]),
    "at": lambda u, x: u.at(x, ROWS, x[0, 0] * 2.5, inplace=False),
    "reduceat": lambda u, x: u.reduceat(x, np.array([0, 2]), axis=1),
}


def _transform_cases():
  for name in ARITH:
    for m in TRANSFORMED:
      yield name, m


@pytest.mark.parametrize("name,method", list(_transform_cases()))
def test_methods_under_jit_grad_vmap(name, method):
  f = TRANSFORMED[method]
  x = X["f32"]
  pf = lambda x: f(getattr(pjnp, name), x)
  jf = lambda x: f(getattr(jnp, name), x)
  _check(pyjax.jit(pf)(x), jax.jit(jf)(x), rtol=1e-5)
  xs = np.stack([x, x + 1.5])
  _check(pyjax.vmap(pf)(xs), jax.vmap(jf)(xs), rtol=1e-5)
  if name == "multiply" and method == "at":
    # JAX: "scatter_mul gradients are only implemented if `unique_indices=True`".
    with pytest.raises(NotImplementedError):
      jax.grad(lambda x: jf(x).sum())(x)
    return
  _check(pyjax.grad(lambda x: pf(x).sum())(x), jax.grad(lambda x: jf(x).sum())(x), rtol=1e-5)


def test_vmap_over_reduce_axis_and_grad_of_bool_free_paths():
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
  for name in ["add", "maximum", "logaddexp"]:
    pf = lambda x, n=name: getattr(pjnp, n).reduce(x, axis=0)
    jf = lambda x, n=name: getattr(jnp, n).reduce(x, axis=0)
    _check(pyjax.vmap(pf, in_axes=2)(x), jax.vmap(jf, in_axes=2)(x), rtol=1e-5)
    _check(pyjax.jit(pyjax.grad(lambda x: pf(x).sum()))(x),
           jax.jit(jax.grad(lambda x: jf(x).sum()))(x), rtol=1e-5)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_grad_at_ties(name):
  g = pyjax.grad(getattr(pjnp, name), (0, 1))(np.float32(0.5), np.float32(0.5))
  want = jax.grad(getattr(jnp, name), (0, 1))(np.float32(0.5), np.float32(0.5))
  for a, b in zip(g, want):
    _check(a, b)


def test_identity_values_are_usable():
  for name in BINARY:
    ident = getattr(pjnp, name).identity
    if ident is None:
      continue
    x = np.array([3], np.int32) if name.startswith("bitwise") else np.array([0.75], np.float32)
    if name.startswith("logical"):
      x = np.array([True, False])
    r = getattr(pjnp, name)(x, ident)
    if name.startswith("logaddexp"):
      assert math.isinf(ident)
    np.testing.assert_array_equal(np.asarray(r), np.asarray(getattr(jnp, name)(x, ident)))
