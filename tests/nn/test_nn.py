"""pyjax.nn and pyjax.nn.initializers against real JAX: activations (values, dtypes, weak
types, gradients), softmax family with ``where``, one_hot, standardize, attention, and
initializers drawing bit-for-bit the same values for the same key."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.nn as pnn
import pyjax.numpy as pjnp
from jax_compare import bf16, check, rand

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))

ACTIVATIONS = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
               "hard_tanh", "identity", "leaky_relu", "log_sigmoid", "log1mexp", "mish", "relu",
               "relu6", "selu", "sigmoid", "silu", "soft_sign", "softplus", "sparse_plus",
               "sparse_sigmoid", "squareplus", "swish", "tanh"]
X = rand((3, 4), np.float32, 0, -7, 7)
X[0, :3] = [0.0, 6.0, -3.0]      # kinks of relu / relu6 / hard_sigmoid


def _arg(name, x):
  return np.abs(x) + 0.1 if name == "log1mexp" else x


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values(name):
  x = _arg(name, X)
  check(lambda m: getattr(m.nn, name)(x))


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_grads(name):
  x = _arg(name, X)
  check(lambda m: m.top.grad(lambda v: getattr(m.nn, name)(v).sum())(x), tol=1e-5)


@SETTINGS
@given(name=st.sampled_from(ACTIVATIONS),
       dtype=st.sampled_from([np.float16, bf16, np.int32, np.float32, "pyfloat"]),
       shape=st.sampled_from([(), (0,), (1,), (2, 2), (1, 0, 2)]))
def test_activation_dtypes_and_shapes(name, dtype, shape):
  if name == "glu" and (len(shape) == 0 or shape[-1] % 2):
    shape = shape[:-1] + (2,) if shape else (2,)
  if dtype == "pyfloat":
    if name == "glu":
      return
    x = 0.75
  else:
    x = _arg(name, rand(shape, dtype, 2, -3, 3))
  tol = 2e-2 if dtype in (np.float16, bf16) else 2e-5
  check(lambda m: getattr(m.nn, name)(x), tol=tol)


def test_activation_parameters():
  check(lambda m: m.nn.elu(X, alpha=0.5))
  check(lambda m: m.nn.celu(X, alpha=2.0))
  check(lambda m: m.nn.leaky_relu(X, negative_slope=0.2))
  check(lambda m: m.nn.squareplus(X, b=1.0))
  check(lambda m: m.nn.gelu(X, approximate=False))
  check(lambda m: m.nn.glu(X, axis=0) if False else m.nn.glu(X[:2], axis=0))
  check(lambda m: m.nn.glu(X[:, :3]), message=False)


def test_special_values():
  v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30], np.float32)
  for name in ("relu", "softplus", "sigmoid", "log_sigmoid", "gelu", "silu", "elu", "mish",
               "selu", "celu", "hard_tanh", "sparse_plus"):
    check(lambda m: getattr(m.nn, name)(v))


# --- softmax family -----------------------------------------------------------------------
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, (0, 1), None])
def test_softmax(fn, axis):
  check(lambda m: getattr(m.nn, fn)(X, axis=axis))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_where(fn):
  where = X > -2
  where[2] = False           # a fully masked row
  check(lambda m: getattr(m.nn, fn)(X, where=where))
  check(lambda m: getattr(m.nn, fn)(X, axis=0, where=where))
  check(lambda m: m.top.grad(lambda v: (getattr(m.nn, fn)(v, where=where) ** 2)
                             .sum(where=where))(X), tol=1e-5)


def test_softmax_grads_and_infs():
  check(lambda m: m.top.grad(lambda v: (m.nn.softmax(v) * np.arange(4.)).sum())(X))
  check(lambda m: m.top.grad(lambda v: m.nn.log_softmax(v)[:, 1].sum())(X))
  xi = X.copy()
  xi[1, 1] = -np.inf
  check(lambda m: m.nn.softmax(xi))
  check(lambda m: m.nn.log_softmax(xi))
  check(lambda m: m.top.jacfwd(m.nn.softmax)(X[0]), tol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": 0, "keepdims": True},
                                {"where": "mask"}, {"axis": (0, 1)}])
def test_logsumexp_logmeanexp(kw):
  kw = dict(kw)
  if kw.get("where") == "mask":
    kw["where"] = X > 0
  check(lambda m: m.nn.logsumexp(X, **kw))
  check(lambda m: m.nn.logmeanexp(X, **kw))


def test_standardize():
  check(lambda m: m.nn.standardize(X))
  check(lambda m: m.nn.standardize(X, axis=0, algorithm="stable"))
  check(lambda m: m.nn.standardize(X, mean=0.5, variance=2.0, epsilon=1e-3))
  check(lambda m: m.nn.standardize(X, where=X > 0))
  check(lambda m: m.nn.standardize(X, algorithm="bogus"))
  check(lambda m: m.top.grad(lambda v: m.nn.standardize(v).sum())(X), tol=1e-4)


# --- one_hot ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": -2}, {"dtype": np.int32},
                                {"dtype": bool}, {"dtype": np.float16}])
def test_one_hot(kw):
  idx = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
  check(lambda m: m.nn.one_hot(idx, 4, **kw))


def test_one_hot_errors_and_scalars():
  check(lambda m: m.nn.one_hot(2, 3))
  check(lambda m: m.nn.one_hot(np.array([1, 2]), 3, axis=3), message=False)
  check(lambda m: m.nn.one_hot(np.array([0, 1]), 0))
  check(lambda m: m.top.jit(lambda i: m.nn.one_hot(i, 3))(np.array([0, 2])))


# --- attention ----------------------------------------------------------------------------
R = np.random.RandomState(0)
Q = R.randn(2, 5, 4, 8).astype(np.float32)
K = R.randn(2, 6, 2, 8).astype(np.float32)
V = R.randn(2, 6, 2, 8).astype(np.float32)


@pytest.mark.parametrize("kw", [
    {}, {"is_causal": True}, {"local_window_size": (1, 2)}, {"local_window_size": 1},
    {"mask": "mask"}, {"bias": "bias"}, {"bias": "bias_full"}, {"scale": 0.3},
    {"query_seq_lengths": np.int32([3, 5]), "key_value_seq_lengths": np.int32([6, 2])},
])
def test_dot_product_attention(kw):
  kw = dict(kw)
  if kw.get("mask") == "mask":
    kw["mask"] = R.rand(2, 4, 5, 6) > 0.3
  if kw.get("bias") == "bias":
    kw["bias"] = R.randn(1, 1, 5, 6).astype(np.float32)
  elif kw.get("bias") == "bias_full":
    kw["bias"] = R.randn(2, 4, 5, 6).astype(np.float32)
  check(lambda m: m.nn.dot_product_attention(Q, K, V, **kw), tol=1e-5)
  check(lambda m: m.nn.dot_product_attention(Q, K, V, return_residual=True, **kw), tol=1e-5)


def test_dot_product_attention_shapes_dtypes_grads():
  check(lambda m: m.nn.dot_product_attention(Q[0], K[0], V[0]), tol=1e-5)   # 3-D inputs
  q16, k16, v16 = (a.astype(bf16) for a in (Q, K, V))
  check(lambda m: m.nn.dot_product_attention(q16, k16, v16), tol=3e-2)
  check(lambda m: m.top.grad(lambda q: m.nn.dot_product_attention(q, K, V).sum())(Q),
        tol=1e-4)
  check(lambda m: m.top.grad(lambda k: m.nn.dot_product_attention(Q, k, V, is_causal=True)
                             .sum())(K), tol=1e-4)


@pytest.mark.parametrize("fn", [
    lambda m: m.nn.dot_product_attention(Q, K, V[:, :5]),
    lambda m: m.nn.dot_product_attention(Q, K, V.astype(np.float16)),
    lambda m: m.nn.dot_product_attention(Q[:, :, :3], K, V),
    lambda m: m.nn.dot_product_attention(Q, K, V, mask=np.ones((2, 4, 5, 6), np.int32)),
    lambda m: m.nn.dot_product_attention(Q, K, V, implementation="bogus"),
    lambda m: m.nn.dot_product_attention(Q, K, V, query_seq_lengths=np.int64([1, 2])),
])
def test_dot_product_attention_errors(fn):
  check(fn)


def test_scaled_matmul_and_dot_general():
  a = R.randn(1, 4, 64).astype(np.float32)
  b = R.randn(1, 3, 64).astype(np.float32)
  sa = R.rand(1, 4, 2).astype(np.float32) + 0.5
  sb = R.rand(1, 3, 2).astype(np.float32) + 0.5
  got = np.asarray(pnn.scaled_matmul(a, b, sa, sb))
  ref = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 32, axis=2), b * np.repeat(sb, 32, axis=2))
  np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="3-dimensional"):
    pnn.scaled_matmul(a[0], b, sa, sb)
  lhs = R.randn(2, 64).astype(np.float32)
  rhs = R.randn(64, 3).astype(np.float32)
  check(lambda m: m.nn.scaled_dot_general(lhs, rhs, (((1,), (0,)), ((), ()))))
  cfg = pnn.get_scaled_dot_general_config("mxfp8")
  q = np.asarray(pnn.scaled_dot_general(lhs, rhs, (((1,), (0,)), ((), ())),
                                        configs=[cfg, cfg, cfg]))
  def quant(x):              # OCP MX: blocks of 32 share a power-of-two scale, e4m3 values
    import ml_dtypes
    blocks = x.reshape(x.shape[0], -1, 32)
    amax = np.abs(blocks).max(-1, keepdims=True)
    scale = np.exp2(np.ceil(np.log2(np.where(amax > 0, amax / 448, 1)))).astype(np.float32)
    v = np.clip(blocks / scale, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return (v * scale).reshape(x.shape)
  np.testing.assert_allclose(q, quant(lhs) @ quant(rhs.T).T, rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError):
    pnn.get_scaled_dot_general_config("bogus")


def test_jaxpr_matches_jax():
  jax = pytest.importorskip("jax")
  for name in ("relu", "sigmoid", "silu", "softplus", "gelu", "relu6"):
    ours = str(pyjax.make_jaxpr(getattr(pnn, name))(np.float32(1.0)))
    theirs = str(jax.make_jaxpr(getattr(jax.nn, name))(np.float32(1.0)))
    assert ours == theirs, (name, ours, theirs)


def test_vmap_and_jit():
  np.testing.assert_allclose(pyjax.vmap(pnn.softmax)(X), pnn.softmax(X), rtol=1e-6)
  # (jit may run native code whose tanh differs by an ulp: gelu cancels near -3)
  np.testing.assert_allclose(pyjax.jit(pnn.gelu)(X), pnn.gelu(X), rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(pyjax.vmap(lambda q: pnn.dot_product_attention(q, K[0], V[0]))(
      Q[0][None]), pnn.dot_product_attention(Q[0], K[0], V[0])[None], rtol=1e-5)


# --- initializers -------------------------------------------------------------------------
INITS = [
    ("zeros", None, (3, 4)), ("ones", None, (3, 4)), ("constant", (3.5,), (2, 2)),
    ("uniform", (), (3, 4)), ("uniform", (2.0,), (5,)), ("normal", (), (3, 4)),
    ("normal", (0.5,), (2, 3, 4)), ("truncated_normal", (), (3, 4)),
    ("truncated_normal", (1.0, None, -1.0, 0.5), (6,)), ("glorot_uniform", (), (3, 4)),
    ("glorot_normal", (), (3, 4, 5)), ("xavier_uniform", (), (4, 4)),
    ("xavier_normal", (), (2, 5)), ("lecun_uniform", (), (3, 4)),
    ("lecun_normal", (), (3, 4)), ("he_uniform", (), (3, 4)), ("he_normal", (), (3, 4)),
    ("kaiming_uniform", (), (3, 4)), ("kaiming_normal", (), (3, 3, 2, 4)),
    ("variance_scaling", (2.0, "fan_out", "normal"), (3, 4)),
    ("variance_scaling", (1.0, "fan_geo_avg", "uniform"), (3, 4)),
    ("variance_scaling", (1.0, "fan_avg", "truncated_normal", 0, 1, ()), (3, 4)),
    ("variance_scaling", (1.0, "fan_in", "normal", (0, 1), 2), (2, 3, 4)),
    ("variance_scaling", (1.0, "fan_in", "uniform", -2, -1, 0), (2, 3, 4)),
    ("orthogonal", (), (3, 4)), ("orthogonal", (2.0, 0), (4, 3)),
    ("delta_orthogonal", (), (3, 3, 4)), ("delta_orthogonal", (), (3, 3, 4, 5)),
]


@pytest.mark.parametrize("name,args,shape", INITS,
                         ids=[f"{n}{i}" for i, (n, _, _) in enumerate(INITS)])
def test_initializers_match_jax(name, args, shape):
  def run(m):
    key = m.random.key(7)
    f = getattr(m.init, name)
    init = f if args is None else f(*args)
    return init(key, shape)
  check(run, tol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, bf16, np.complex64])
def test_initializers_dtypes(dtype):
  for name in ("normal", "uniform", "glorot_normal", "lecun_uniform", "truncated_normal"):
    if np.dtype(dtype).kind == "c" and name in ("normal", "uniform", "truncated_normal"):
      continue
    check(lambda m: getattr(m.init, name)()(m.random.key(1), (3, 4), dtype), tol=1e-2)


def test_initializer_errors():
  check(lambda m: m.init.glorot_uniform()(m.random.key(0), (5,)))
  check(lambda m: m.init.variance_scaling(1.0, "bogus", "normal")(m.random.key(0), (2, 2)))
  check(lambda m: m.init.variance_scaling(1.0, "fan_in", "bogus")(m.random.key(0), (2, 2)))
  check(lambda m: m.init.orthogonal()(m.random.key(0), (4,)))
  check(lambda m: m.init.delta_orthogonal()(m.random.key(0), (3, 4)))
  check(lambda m: m.init.delta_orthogonal()(m.random.key(0), (3, 5, 4)))


def test_initializer_protocol_and_statistics():
  assert isinstance(pnn.initializers.normal(), pnn.initializers.Initializer)
  w = pnn.initializers.he_normal()(pyjax.random.key(3), (200, 300))
  assert abs(float(pjnp.std(w)) - np.sqrt(2 / 200)) < 0.01
  q = pnn.initializers.orthogonal()(pyjax.random.key(4), (5, 3))
  np.testing.assert_allclose(np.asarray(q).T @ np.asarray(q), np.eye(3), atol=1e-5)
