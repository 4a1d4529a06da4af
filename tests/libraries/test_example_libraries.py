"""pyjax.example_libraries.stax and .optimizers against real JAX: the same key gives the
same parameters, layers compute the same outputs, optimizers take the same steps."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax.example_libraries import optimizers as popt
from pyjax.example_libraries import stax as pstax


def _jax():
  return pytest.importorskip("jax")


def _init_apply(api, layer, key, x):
  """``init`` then ``apply`` of a stax layer, each as one jitted program (real JAX compiles
  every eager op separately, which is slow on a small machine)."""
  init, apply = layer
  shape, params = api.jit(init, static_argnums=1)(api.random.PRNGKey(key), x.shape)
  out = api.jit(apply)(params, x)
  return tuple(int(d) for d in shape), params, out


def _close(p, j, rtol=1e-5, atol=1e-6):
  pl, pt = pyjax.tree_util.tree_flatten(p)
  jax = _jax()
  jl, jt = jax.tree_util.tree_flatten(j)
  assert len(pl) == len(jl), (pt, jt)
  for a, b in zip(pl, jl):
    assert np.shape(a) == np.shape(b)
    assert np.asarray(a).dtype == np.asarray(b).dtype
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def test_public_names_match_jax():
  _jax()
  from jax.example_libraries import optimizers as jopt, stax as jstax
  helpers = {"functools", "jnp", "lax", "math", "random", "jax", "partial", "namedtuple",
             "map", "zip", "safe_map", "safe_zip", "unzip2", "annotations", "Any",
             "Callable", "NamedTuple"}
  for p, j in [(pstax, jstax), (popt, jopt)]:
    want = {n for n in dir(j) if not n.startswith("_")} - helpers
    assert want <= set(dir(p)), want - set(dir(p))


def _model(S):
  return S.serial(
      S.Conv(4, (3, 3), padding="SAME"), S.BatchNorm(), S.Relu,
      S.MaxPool((2, 2), strides=(2, 2)), S.AvgPool((2, 2), padding="SAME"),
      S.SumPool((1, 2)), S.Flatten, S.Dense(7), S.Tanh,
      S.FanOut(2), S.parallel(S.Dense(3), S.serial(S.Dense(3), S.Gelu)), S.FanInSum,
      S.LogSoftmax)


def test_default_initializers_match_jax():
  jax = _jax()
  from jax.example_libraries import stax as jstax
  x = np.ones((2, 5, 5, 3), np.float32)
  make = lambda S: S.serial(S.Conv(2, (2, 2)), S.Dense(3))
  pshape, pparams, pout = _init_apply(pyjax, make(pstax), 7, x)
  jshape, jparams, jout = _init_apply(jax, make(jstax), 7, x)
  assert pshape == jshape == (2, 4, 4, 3)
  _close(pparams, jparams)
  _close(pout, jout, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_serial_model_matches_jax():
  jax = _jax()
  from jax.example_libraries import stax as jstax
  x = np.random.RandomState(0).randn(2, 8, 8, 3).astype(np.float32)
  pshape, pparams, pout = _init_apply(pyjax, _model(pstax), 3, x)
  jshape, jparams, jout = _init_apply(jax, _model(jstax), 3, x)
  assert pshape == jshape == (2, 3)
  _close(pparams, jparams)
  _close(pout, jout, rtol=1e-4, atol=1e-5)
  # eager pyjax gives the same as jitted pyjax
  init, apply = _model(pstax)
  shape, params = init(pyjax.random.PRNGKey(3), x.shape)
  assert tuple(shape) == (2, 3)
  _close(params, pparams)
  _close(apply(params, pjnp.asarray(x)), pout, rtol=1e-5, atol=1e-6)


# Real JAX takes seconds to compile each default (truncated-normal) initializer, so the
# per-layer tests use plain normal initializers; the default ones are checked by
# test_default_initializers_match_jax and the whole-model test.
_N = lambda S: S.normal(0.5)


@pytest.mark.parametrize("make", [
    lambda S: S.Dense(5, W_init=_N(S)),
    lambda S: S.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2), strides=(2, 1),
                            W_init=_N(S)),
    lambda S: S.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME", W_init=_N(S)),
    lambda S: S.BatchNorm(axis=(0, 2), center=False),
    lambda S: S.BatchNorm(axis=(0, 1), scale=False),
    lambda S: S.MaxPool((2, 2), spec="NCHW"),
    lambda S: S.AvgPool((3, 1), strides=(1, 1), padding="SAME", spec="NCHW"),
    lambda S: S.serial(S.Flatten, S.Dense(4, W_init=_N(S)), S.Elu, S.Dense(4, _N(S)),
                       S.LeakyRelu, S.Selu, S.Softplus, S.Sigmoid, S.Softmax, S.Exp),
    lambda S: S.serial(S.FanOut(3), S.parallel(S.Identity, S.Relu, S.Tanh),
                       S.FanInConcat(axis=1)),
    lambda S: S.shape_dependent(lambda shape: S.Dense(shape[-1] * 2, _N(S))),
], ids=["dense", "general_conv", "conv_transpose", "bn_noshift", "bn_noscale", "maxpool_nchw",
        "avgpool_same", "activations", "fan", "shape_dependent"])
def test_layers_match_jax(make):
  jax = _jax()
  from jax.example_libraries import stax as jstax
  x = np.random.RandomState(1).randn(2, 3, 6, 4).astype(np.float32)
  pshape, pparams, pout = _init_apply(pyjax, make(pstax), 0, x)
  jshape, jparams, jout = _init_apply(jax, make(jstax), 0, x)
  assert pshape == jshape
  _close(pparams, jparams)
  _close(pout, jout, rtol=1e-4, atol=1e-5)


def test_conv1d_transpose_shape():
  init, apply = pstax.Conv1DTranspose(2, (3,), strides=(2,))
  shape, params = init(pyjax.random.PRNGKey(0), (1, 5, 3))
  assert shape == (1, 11, 2)
  assert apply(params, pjnp.ones((1, 5, 3))).shape == (1, 11, 2)


def test_dropout():
  jax = _jax()
  from jax.example_libraries import stax as jstax
  x = np.arange(1.0, 41.0, dtype=np.float32).reshape(4, 10)
  _, apply = pstax.Dropout(0.7)
  with pytest.raises(ValueError, match="Dropout layer requires apply_fun to be called with "
                                       "a PRNG key argument"):
    apply((), pjnp.asarray(x))
  out = apply((), pjnp.asarray(x), rng=pyjax.random.PRNGKey(5))
  jout = jstax.Dropout(0.7)[1]((), jax.numpy.asarray(x), rng=jax.random.PRNGKey(5))
  _close(out, jout)
  kept = np.asarray(out) != 0
  np.testing.assert_allclose(np.asarray(out)[kept], x[kept] / 0.7, rtol=1e-6)
  _, apply_eval = pstax.Dropout(0.7, mode="test")
  np.testing.assert_array_equal(apply_eval((), pjnp.asarray(x), rng=pyjax.random.PRNGKey(0)),
                                x)
  # serial splits the rng once per layer
  _, sapply = pstax.serial(pstax.Dropout(0.5), pstax.Dropout(0.5))
  _, japply = jstax.serial(jstax.Dropout(0.5), jstax.Dropout(0.5))
  _close(sapply([(), ()], pjnp.asarray(x), rng=pyjax.random.PRNGKey(9)),
         japply([(), ()], jax.numpy.asarray(x), rng=jax.random.PRNGKey(9)))


def _optimizers(O):
  return {
      "sgd": O.sgd(0.1),
      "sgd_schedule": O.sgd(O.exponential_decay(0.1, 2, 0.5)),
      "momentum": O.momentum(0.05, 0.9),
      "nesterov": O.nesterov(0.05, 0.8),
      "adagrad": O.adagrad(0.1),
      "rmsprop": O.rmsprop(0.01),
      "rmsprop_momentum": O.rmsprop_momentum(0.01),
      "adam": O.adam(0.01),
      "adamax": O.adamax(O.inverse_time_decay(0.02, 2, 0.5, staircase=True)),
      "sm3": O.sm3(0.1),
  }


@pytest.mark.parametrize("name", list(_optimizers(popt)))
def test_optimizers_match_jax(name):
  jax = _jax()
  from jax.example_libraries import optimizers as jopt
  params = {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
            "b": np.array([0.5, -0.25], np.float32), "s": np.float32(2.0)}

  def loss(m, p):
    return (m.sum(m.sin(p["w"]) ** 2) + m.sum(p["b"] ** 4) + p["s"] ** 2
            + m.sum(p["w"] @ m.ones(3)) * p["s"])

  def run(O, api, m):
    init, update, get_params = _optimizers(O)[name]

    def steps(params):
      state = init(params)
      for i in range(4):
        g = api.grad(lambda p: loss(m, p))(get_params(state))
        state = update(i, g, state)
      return get_params(state), state
    return api.jit(steps)(params)

  pp, pstate = run(popt, pyjax, pjnp)
  jp, jstate = run(jopt, jax, jax.numpy)
  _close(pp, jp, rtol=2e-6, atol=1e-7)
  assert isinstance(pstate, popt.OptimizerState)
  _close(pstate.packed_state, jstate.packed_state, rtol=2e-6, atol=1e-7)


def test_optimizer_state_is_a_pytree_and_jits():
  init, update, get_params = popt.adam(0.1)
  state = init({"a": pjnp.ones(3), "b": pjnp.zeros(2)})
  leaves = pyjax.tree_util.tree_leaves(state)
  assert len(leaves) == 6
  step = pyjax.jit(update)
  g = {"a": pjnp.ones(3), "b": pjnp.ones(2)}
  s1 = step(0, g, state)
  s2 = update(0, g, state)
  _close_tree = lambda a, b: [np.testing.assert_allclose(x, y, rtol=1e-6) for x, y in
                              zip(pyjax.tree_util.tree_leaves(a),
                                  pyjax.tree_util.tree_leaves(b))]
  _close_tree(get_params(s1), get_params(s2))
  with pytest.raises(TypeError, match="optimizer update function was passed a gradient "
                                      "tree that did not match"):
    update(0, {"a": pjnp.ones(3)}, state)


def test_pack_unpack_roundtrip():
  init, update, get_params = popt.momentum(0.1, 0.9)
  state = init({"a": pjnp.ones(3), "b": [pjnp.zeros(2), pjnp.ones(())]})
  marked = popt.unpack_optimizer_state(state)
  assert isinstance(marked["a"], popt.JoinPoint)
  assert len(marked["a"].subtree) == 2
  back = popt.pack_optimizer_state(marked)
  assert back.tree_def == state.tree_def and back.subtree_defs == state.subtree_defs
  for x, y in zip(pyjax.tree_util.tree_leaves(back), pyjax.tree_util.tree_leaves(state)):
    np.testing.assert_array_equal(x, y)


def test_schedules_match_jax():
  jax = _jax()
  from jax.example_libraries import optimizers as jopt
  makers = [
      lambda O: O.constant(0.3),
      lambda O: O.exponential_decay(0.1, 10, 0.5),
      lambda O: O.inverse_time_decay(0.1, 3, 0.5),
      lambda O: O.inverse_time_decay(0.1, 3, 0.5, staircase=True),
      lambda O: O.polynomial_decay(1.0, 5, 0.1, power=2.0),
      lambda O: O.piecewise_constant([2, 5], [1.0, 0.5, 0.1]),
      lambda O: O.make_schedule(0.25),
  ]
  for make in makers:
    ps, js = make(popt), make(jopt)
    for i in [0, 1, 2, 3, 5, 7, 12]:
      np.testing.assert_allclose(np.asarray(ps(i)), np.asarray(js(i)), rtol=1e-6)
      np.testing.assert_allclose(np.asarray(ps(pjnp.int32(i))),
                                 np.asarray(js(jax.numpy.int32(i))), rtol=1e-6)
  with pytest.raises(ValueError, match="boundaries length must be one shorter"):
    popt.piecewise_constant([1, 2], [1.0, 2.0])
  with pytest.raises(ValueError, match="must be sequences"):
    popt.piecewise_constant(1, [1.0, 2.0])
  with pytest.raises(TypeError):
    popt.make_schedule(pjnp.ones(2))


def test_l2_norm_and_clip_grads():
  _jax()
  from jax.example_libraries import optimizers as jopt
  tree = {"a": np.array([3.0, 4.0], np.float32), "b": np.array([[12.0]], np.float32)}
  np.testing.assert_allclose(popt.l2_norm(tree), 13.0)
  _close(popt.l2_norm(tree), jopt.l2_norm(tree))
  for max_norm in [1.0, 13.5]:
    _close(popt.clip_grads(tree, max_norm), jopt.clip_grads(tree, max_norm))
  clipped = popt.clip_grads(tree, 1.0)
  np.testing.assert_allclose(popt.l2_norm(clipped), 1.0, rtol=1e-6)
