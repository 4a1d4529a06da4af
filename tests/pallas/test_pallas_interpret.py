"""Pallas kernels from JAX's Pallas documents, run by pyjax in interpret mode and compiled
(``interpret=False``: the grid program compiled to C) and compared bit for bit with real
JAX's interpret mode.  Each kernel is written once as ``make(pl, jnp, lax)`` and built
for both libraries."""
import functools

import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax import lax as plax
from pyjax.experimental import pallas as ppl
from pyjax._src.backends.cpu import executable

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax import lax as jlax  # noqa: E402
from jax.experimental import pallas as jpl  # noqa: E402
from pallas_kernels import kblocked_kernel  # noqa: E402

PY = (ppl, pjnp, plax, pyjax)
JX = (jpl, jjnp, jlax, jax)


def _same(a, b):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype, (a.dtype, b.dtype)
  assert a.shape == b.shape, (a.shape, b.shape)
  np.testing.assert_array_equal(a.view(np.uint8) if a.dtype.kind == "f" else a,
                                b.view(np.uint8) if b.dtype.kind == "f" else b)


def _close(a, b, ulps):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape
  np.testing.assert_array_max_ulp(a, b, maxulp=ulps)


def check(make, *args, ulps=0):
  """``make(pl, jnp, lax, jax) -> f`` where ``f(*args, interpret=...)`` runs a kernel:
  pyjax interpret (the NumPy tier) == JAX interpret (bit for bit; within ``ulps`` for bodies with an
  operation pyjax does not round as XLA does: XLA turns ``x / broadcast(s)`` into a
  multiplication by ``1 / s``), and pyjax compiled (the grid program in C) == pyjax
  interpret, bit for bit."""
  f_j = make(*JX)
  f_p = make(*PY)
  ref = f_j(*[jjnp.asarray(a) for a in args], interpret=True)
  with executable.compile_mode_override("off"):   # the NumPy tier
    got = f_p(*[pjnp.asarray(a) for a in args], interpret=True)
  with executable.compile_mode_override("sync"):  # the grid program compiled to C
    comp = f_p(*[pjnp.asarray(a) for a in args], interpret=False)
  for r, g, c in zip(jax.tree_util.tree_leaves(ref), pyjax.tree_util.tree_leaves(got),
                     pyjax.tree_util.tree_leaves(comp)):
    if ulps:
      _close(g, r, ulps)
    else:
      _same(g, r)
    _same(c, g)
  return got


def _rand(shape, dtype=np.float32, seed=0):
  r = np.random.default_rng(seed).standard_normal(shape)
  return r.astype(dtype)


# --- quickstart -----------------------------------------------------------------------------
def _add_vectors(pl, jnp, lax, jx):
  def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]

  def f(x, y, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=interpret)(x, y)
  return f


def test_add_vectors():
  check(_add_vectors, _rand(8), _rand(8, seed=1))


def _iota(pl, jnp, lax, jx):
  def kernel(o_ref):
    i = pl.program_id(0)
    o_ref[i] = i

  def f(interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((8,), jnp.int32),
                          out_specs=pl.BlockSpec(memory_space=pl.ANY), grid=(8,),
                          interpret=interpret)()
  return f


def test_iota():
  out = check(_iota)
  assert out.tolist() == list(range(8))


def _matmul(pl, jnp, lax, jx, activation="relu", block=4, vmap=False):
  act = {"relu": lambda v: jnp.maximum(v, 0), "id": lambda v: v}[activation]

  def kernel(x_ref, y_ref, z_ref):
    z_ref[...] = act(x_ref[...] @ y_ref[...])

  def matmul(x, y, interpret):
    return pl.pallas_call(
        kernel, out_shape=jx.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
        grid=(x.shape[0] // block, y.shape[1] // block),
        in_specs=[pl.BlockSpec((block, x.shape[1]), lambda i, j: (i, 0)),
                  pl.BlockSpec((x.shape[1], block), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((block, block), lambda i, j: (i, j)),
        interpret=interpret)(x, y)
  if vmap:
    return lambda x, y, interpret: jx.vmap(functools.partial(matmul, interpret=interpret))(x, y)
  return matmul


def test_blockspec_matmul_fused_activation():
  check(_matmul, _rand((8, 6)), _rand((6, 8), seed=1))


def test_blockspec_matmul_vmap():
  out = check(functools.partial(_matmul, vmap=True), _rand((2, 8, 4)), _rand((2, 4, 8), seed=1))
  assert out.shape == (2, 8, 8)


def test_vmap_adds_a_grid_dimension():
  f = _matmul(*PY)
  jaxpr = pyjax.make_jaxpr(
      lambda x, y: pyjax.vmap(functools.partial(f, interpret=True))(x, y))(
          pjnp.zeros((3, 8, 4)), pjnp.zeros((3, 4, 8)))
  eqn, = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "pallas_call"]
  assert eqn.params["grid_mapping"].grid == (3, 2, 2)
  assert "grid=(3, 2, 2)" in str(jaxpr)


# --- grids and block specs ------------------------------------------------------------------
def _ragged(pl, jnp, lax, jx):
  def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0 + 1.0

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(pl.cdiv(x.shape[0], 4), pl.cdiv(x.shape[1], 3)),
                          in_specs=[pl.BlockSpec((4, 3), lambda i, j: (i, j))],
                          out_specs=pl.BlockSpec((4, 3), lambda i, j: (i, j)),
                          interpret=interpret)(x)
  return f


def test_ragged_grid():
  check(_ragged, _rand((10, 7)))


def _uninitialized(pl, jnp, lax, jx):
  # only the first block of the output is written: the rest keeps JAX's NaN / int min
  def kernel(x_ref, o_ref, i_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
      o_ref[...] = x_ref[...]
      i_ref[...] = jnp.ones(i_ref.shape, jnp.int32)

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=(jx.ShapeDtypeStruct(x.shape, x.dtype),
                                             jx.ShapeDtypeStruct(x.shape, jnp.int32)),
                          grid=(2,), in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
                          out_specs=(pl.BlockSpec((4,), lambda i: (i,)),
                                     pl.BlockSpec((4,), lambda i: (i,))),
                          interpret=interpret)(x)
  return f


def test_outputs_start_uninitialized():
  o, i = check(_uninitialized, _rand(8))
  assert np.isnan(np.asarray(o)[4:]).all()
  assert (np.asarray(i)[4:] == np.iinfo(np.int32).min).all()


def _squeezed_sum(pl, jnp, lax, jx, squeezed_dim=None):
  # sum over the rows of each (None, 8) block into a revisited output
  def kernel(x_ref, o_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
      o_ref[...] = jnp.zeros_like(o_ref)
    o_ref[...] += x_ref[...]

  def f(x, interpret):
    return pl.pallas_call(
        kernel, out_shape=jx.ShapeDtypeStruct((x.shape[1],), x.dtype),
        grid=(x.shape[1] // 8, x.shape[0]),
        in_specs=[pl.BlockSpec((squeezed_dim, 8), lambda j, i: (i, j))],
        out_specs=pl.BlockSpec((8,), lambda j, i: (j,)), interpret=interpret)(x)
  return f


def test_revisited_output_with_when_and_squeezed_dims():
  check(_squeezed_sum, _rand((5, 16)))
  check(lambda pl, *r: _squeezed_sum(pl, *r, squeezed_dim=pl.Squeezed()), _rand((3, 8)))


def _element(pl, jnp, lax, jx):
  # overlapping windows: Element block dims take element offsets (into the operand padded
  # with one uninitialized element before and two after)
  def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[pl.ds(0, 4)] + x_ref[pl.ds(2, 4)]

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((8,), x.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((pl.Element(6, (1, 2)),), lambda i: (i * 4,))],
                          out_specs=pl.BlockSpec((4,), lambda i: (i,)),
                          interpret=interpret)(x)
  return f


def test_element_block_dims_padding_and_ds():
  out = check(_element, _rand(8))
  assert np.isnan(np.asarray(out)[[0, 7]]).all()


def _kblocked(pl, jnp, lax, jx, bf16=False):
  bm = bn = bk = 4

  kernel = kblocked_kernel(pl, jnp)

  def f(x, y, interpret):
    if bf16:
      x, y = x.astype(jnp.bfloat16), y.astype(jnp.bfloat16)
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        kernel, out_shape=jx.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pl.ANY((bm, bn), jnp.float32)],
        interpret=interpret)(x, y)
  return f


def test_k_blocked_matmul_scratch_accumulator():
  check(_kblocked, _rand((8, 12)), _rand((12, 8), seed=1))


def test_bf16_inputs_f32_accumulation():
  check(functools.partial(_kblocked, bf16=True), _rand((8, 8)), _rand((8, 8), seed=1))


# --- normalisations -------------------------------------------------------------------------
def _row_kernel(pl, jnp, lax, jx, which):
  def softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)

  def layer_norm(x, w, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5) * w + b

  def rms_norm(x, w, b):
    return x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w

  def kernel(x_ref, w_ref, b_ref, o_ref):
    x = x_ref[...]
    if which == "softmax":
      o_ref[...] = softmax(x)
    else:
      fn = layer_norm if which == "layer_norm" else rms_norm
      o_ref[...] = fn(x, w_ref[...], b_ref[...])

  def f(x, w, b, interpret):
    rows, cols = x.shape
    return pl.pallas_call(
        kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype), grid=(rows // 2,),
        in_specs=[pl.BlockSpec((2, cols), lambda i: (i, 0)),
                  pl.BlockSpec((cols,), lambda i: (0,)),
                  pl.BlockSpec((cols,), lambda i: (0,))],
        out_specs=pl.BlockSpec((2, cols), lambda i: (i, 0)), interpret=interpret)(x, w, b)
  return f


@pytest.mark.parametrize("which", ["softmax", "layer_norm", "rms_norm"])
def test_row_kernels(which):
  check(functools.partial(_row_kernel, which=which), _rand((4, 16)), _rand(16, seed=1),
        _rand(16, seed=2), ulps=8)


# --- flash attention ------------------------------------------------------------------------
def _flash(pl, jnp, lax, jx, bq=4, bk=4):
  def kernel(q_ref, k_ref, v_ref, o_ref):
    q = q_ref[...]
    seq, d = k_ref.shape

    def body(i, carry):
      acc, m, l = carry
      k = k_ref[pl.ds(i * bk, bk), :]
      v = v_ref[pl.ds(i * bk, bk), :]
      s = q @ k.T
      m_new = jnp.maximum(m, jnp.max(s, axis=-1))
      p = jnp.exp(s - m_new[:, None])
      alpha = jnp.exp(m - m_new)
      l_new = alpha * l + jnp.sum(p, axis=-1)
      acc = acc * alpha[:, None] + p @ v
      return acc, m_new, l_new
    init = (jnp.zeros((bq, d), jnp.float32), jnp.full((bq,), -jnp.inf, jnp.float32),
            jnp.zeros((bq,), jnp.float32))
    acc, m, l = lax.fori_loop(0, seq // bk, body, init)
    o_ref[...] = acc / l[:, None]

  def f(q, k, v, interpret):
    seq, d = q.shape
    return pl.pallas_call(
        kernel, out_shape=jx.ShapeDtypeStruct(q.shape, q.dtype), grid=(seq // bq,),
        in_specs=[pl.BlockSpec((bq, d), lambda i: (i, 0)),
                  pl.BlockSpec((seq, d), lambda i: (0, 0)),
                  pl.BlockSpec((seq, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bq, d), lambda i: (i, 0)), interpret=interpret)(q, k, v)
  return f


def test_flash_attention_forward():
  q, k, v = _rand((8, 4)), _rand((8, 4), seed=1), _rand((8, 4), seed=2)
  out = check(_flash, q, k, v, ulps=8)
  s = q @ k.T
  p = np.exp(s - s.max(-1, keepdims=True))
  np.testing.assert_allclose(np.asarray(out), (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-5,
                             atol=1e-5)


# --- transformations, helpers ---------------------------------------------------------------
def test_jit_jvp_and_custom_vjp():
  f = functools.partial(_add_vectors(*PY), interpret=True)
  x, y = pjnp.asarray(_rand(8)), pjnp.asarray(_rand(8, seed=1))
  _same(pyjax.jit(f)(x, y), f(x, y))
  out, t = pyjax.jvp(f, (x, y), (pjnp.ones(8), pjnp.ones(8)))
  _same(t, pjnp.full((8,), 2.0))

  @pyjax.custom_vjp
  def g(x, y):
    return f(x, y)
  g.defvjp(lambda x, y: (f(x, y), None), lambda _, ct: (f(ct, pjnp.zeros_like(ct)), ct))
  gx = pyjax.grad(lambda x: g(x, y).sum())(x)
  _same(gx, pjnp.ones(8))


def _helpers(pl, jnp, lax, jx):
  def kernel(x_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)

    @pl.loop(0, 4, step=2)
    def _(i):
      o_ref[pl.ds(i, 2)] = x_ref[pl.ds(i, 2)] * 3.0

    def scoped(tmp_ref):
      tmp_ref[...] = x_ref[...] + 1.0
      o_ref[pl.ds(4, 4)] = tmp_ref[pl.ds(4, 4)]
    pl.run_scoped(scoped, pl.ANY((8,), jnp.float32))
    o_ref.at[pl.ds(4, 4)][0] = jnp.float32(pl.num_programs(0))

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype), grid=(1,),
                          interpret=interpret)(x)
  return f


def test_loop_run_scoped_ds_at():
  check(_helpers, _rand(8))


def test_debug_print_in_kernel(capfd):
  def kernel(x_ref, o_ref):
    pyjax.debug.print("block {i}", i=ppl.program_id(0))
    o_ref[...] = x_ref[...]
  f = ppl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct((4,), pjnp.float32), grid=(2,),
                      in_specs=[ppl.BlockSpec((2,), lambda i: (i,))],
                      out_specs=ppl.BlockSpec((2,), lambda i: (i,)), interpret=True)
  f(pjnp.arange(4.0))
  pyjax.effects_barrier()
  assert capfd.readouterr().out.split("\n")[:2] == ["block 0", "block 1"]


def test_triton_load_store_mask_and_atomics():
  from pyjax.experimental.pallas import triton as plt

  def kernel(x_ref, o_ref, c_ref):
    offs = pjnp.arange(8)
    mask = offs < 6
    x = plt.load(x_ref.at[ppl.ds(0, 8)], mask=mask, other=0.0)
    plt.store(o_ref.at[ppl.ds(0, 8)], x * 2.0, mask=mask)
    c_ref[...] = pjnp.zeros_like(c_ref)
    plt.atomic_add(c_ref, (0,), pjnp.sum(x))
  f = ppl.pallas_call(kernel, out_shape=(pyjax.ShapeDtypeStruct((8,), pjnp.float32),
                                         pyjax.ShapeDtypeStruct((1,), pjnp.float32)),
                      interpret=True)
  x = np.arange(8, dtype=np.float32)
  o, c = f(pjnp.asarray(x))
  o = np.asarray(o)
  np.testing.assert_array_equal(o[:6], x[:6] * 2)
  assert np.isnan(o[6:]).all()   # never stored: uninitialized
  assert float(c[0]) == x[:6].sum()


def test_scalar_prefetch():
  from pyjax.experimental.pallas import tpu as pltpu
  from jax.experimental.pallas import tpu as jpltpu

  def make(pl, jnp, lax, jx, tpu):
    def kernel(idx_ref, x_ref, o_ref):
      o_ref[...] = x_ref[...] + idx_ref[pl.program_id(0)].astype(x_ref.dtype)

    def f(idx, x, interpret):
      spec = tpu.PrefetchScalarGridSpec(
          num_scalar_prefetch=1, grid=(3,),
          in_specs=[pl.BlockSpec((2,), lambda i, idx_ref: (idx_ref[i],))],
          out_specs=pl.BlockSpec((2,), lambda i, idx_ref: (i,)))
      return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((6,), x.dtype),
                            grid_spec=spec, interpret=interpret)(idx, x)
    return f
  check(lambda *m: make(*m, tpu=pltpu if m[0] is ppl else jpltpu),
        np.array([2, 0, 1], np.int32), _rand(6))


# --- errors ---------------------------------------------------------------------------------
def _errors(pl, jnp, lax, jx, case):
  def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]
  specs = {"rank": pl.BlockSpec((2, 2), lambda i: (i, 0)),
           "arity": pl.BlockSpec((2,), lambda i: (i, 0)),
           "dtype": pl.BlockSpec((2,), lambda i: (i * 1.0,)),
           "too_big": pl.BlockSpec((8,), lambda i: (i,))}   # the block's value is (8,)
  return lambda x: pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((4,), jnp.float32),
                                  grid=(2,), in_specs=[specs[case]],
                                  out_specs=pl.BlockSpec((2,), lambda i: (i,)),
                                  interpret=True)(x)


@pytest.mark.parametrize("case", ["rank", "arity", "dtype", "too_big"])
def test_errors_match_jax(case):
  with pytest.raises(ValueError) as je:
    _errors(*JX, case)(jjnp.zeros(4))
  with pytest.raises(ValueError) as pe:
    _errors(*PY, case)(pjnp.zeros(4))
  strip = lambda s: s.split(" at ")[0] if case not in ("rank", "too_big") else s  # noqa: E731
  assert strip(str(pe.value)) == strip(str(je.value))
  if case not in ("rank", "too_big"):
    assert str(pe.value).split(" for ")[1] == str(je.value).split(" for ")[1]


def test_program_id_out_of_range_and_returning_values():
  def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] + ppl.program_id(1)
  with pytest.raises(ValueError, match=r"Axis 1 is out of bounds for grid \(2,\)"):
    ppl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct((4,), pjnp.int32), grid=(2,),
                    interpret=True)(pjnp.zeros(4, pjnp.int32))

  def kernel2(x_ref, o_ref):
    return 1
  with pytest.raises(ValueError, match="should return None"):
    ppl.pallas_call(kernel2, out_shape=pyjax.ShapeDtypeStruct((4,), pjnp.int32),
                    interpret=True)(pjnp.zeros(4, pjnp.int32))


def _general_grid(pl, jnp, lax, jx):
  # a reversed output index map and a kernel writing its input block: the general grid
  # loop (carrying every operand), and an output aliased to an input
  def kernel(x_ref, a_ref, o_ref, b_ref):
    x_ref[...] = x_ref[...] * 2.0
    o_ref[...] = x_ref[...] + 1.0
    b_ref[...] = a_ref[...] + b_ref[...]

  def f(x, a, interpret):
    return pl.pallas_call(
        kernel, out_shape=(jx.ShapeDtypeStruct(x.shape, x.dtype),
                           jx.ShapeDtypeStruct(a.shape, a.dtype)),
        grid=(2,), in_specs=[pl.BlockSpec((4,), lambda i: (i,)),
                             pl.BlockSpec((4,), lambda i: (i,))],
        out_specs=(pl.BlockSpec((4,), lambda i: (1 - i,)), pl.BlockSpec((4,), lambda i: (i,))),
        input_output_aliases={1: 1}, interpret=interpret)(x, a)
  return f


def test_reversed_index_map_written_input_and_alias():
  o, b = check(_general_grid, _rand(8), _rand(8, seed=1))
  a = _rand(8, seed=1)
  np.testing.assert_array_equal(np.asarray(b), a + a)


def test_compiled_grid_is_a_c_loop():
  f = _ragged(*PY)
  x = pjnp.asarray(_rand((8, 6)))
  with executable.compile_mode_override("sync"):
    text = pyjax.jit(functools.partial(f, interpret=False)).lower(x).compile().as_text()
  # the grid (2, 2) as two nested C loops; the blocks of x are laid out once (a transpose)
  # and reached at pointer offsets: no copy of a block per grid point
  assert "native code (C)" in text and text.count("for (int64_t t = 0; t < 2; t++)") >= 2
  assert "dynamic_slice" not in text


def _flash_with_vjp(pl, jnp, lax, jx, interpret, bq=4, bk=4):
  """Flash attention forward (also returning each row's logsumexp) and backward
  (FlashAttention-2: a dk/dv kernel over key blocks, a dq kernel over query blocks), tied
  together with custom_vjp."""
  def fwd_kernel(q_ref, k_ref, v_ref, o_ref, lse_ref):
    q = q_ref[...]
    seq, d = k_ref.shape

    def body(i, carry):
      acc, m, l = carry
      s = q @ k_ref[pl.ds(i * bk, bk), :].T
      m_new = jnp.maximum(m, jnp.max(s, axis=-1))
      p = jnp.exp(s - m_new[:, None])
      alpha = jnp.exp(m - m_new)
      return (acc * alpha[:, None] + p @ v_ref[pl.ds(i * bk, bk), :], m_new,
              alpha * l + jnp.sum(p, axis=-1))
    acc, m, l = lax.fori_loop(0, seq // bk, body, (
        jnp.zeros((bq, d), jnp.float32), jnp.full((bq,), -jnp.inf, jnp.float32),
        jnp.zeros((bq,), jnp.float32)))
    o_ref[...] = acc / l[:, None]
    lse_ref[...] = m + jnp.log(l)

  def dkdv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref):
    k, v = k_ref[...], v_ref[...]
    seq = q_ref.shape[0]

    def body(i, carry):
      dk, dv = carry
      q = q_ref[pl.ds(i * bq, bq), :]
      do = do_ref[pl.ds(i * bq, bq), :]
      p = jnp.exp(q @ k.T - lse_ref[pl.ds(i * bq, bq)][:, None])
      dp = do @ v.T
      ds = p * (dp - delta_ref[pl.ds(i * bq, bq)][:, None])
      return dk + ds.T @ q, dv + p.T @ do
    dk, dv = lax.fori_loop(0, seq // bq, body, (jnp.zeros_like(k), jnp.zeros_like(v)))
    dk_ref[...] = dk
    dv_ref[...] = dv

  def dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref):
    q, do = q_ref[...], do_ref[...]
    lse, delta = lse_ref[...], delta_ref[...]
    seq = k_ref.shape[0]

    def body(j, dq):
      k = k_ref[pl.ds(j * bk, bk), :]
      p = jnp.exp(q @ k.T - lse[:, None])
      ds = p * (do @ v_ref[pl.ds(j * bk, bk), :].T - delta[:, None])
      return dq + ds @ k
    dq_ref[...] = lax.fori_loop(0, seq // bk, body, jnp.zeros_like(q))

  def full(shape):
    return pl.BlockSpec(shape, lambda i: (0,) * len(shape))

  def fwd(q, k, v):
    seq, d = q.shape
    return pl.pallas_call(
        fwd_kernel, out_shape=(jx.ShapeDtypeStruct((seq, d), q.dtype),
                               jx.ShapeDtypeStruct((seq,), jnp.float32)),
        grid=(seq // bq,), in_specs=[pl.BlockSpec((bq, d), lambda i: (i, 0)),
                                     full((seq, d)), full((seq, d))],
        out_specs=(pl.BlockSpec((bq, d), lambda i: (i, 0)), pl.BlockSpec((bq,), lambda i: (i,))),
        interpret=interpret)(q, k, v)

  @jx.custom_vjp
  def attention(q, k, v):
    return fwd(q, k, v)[0]

  def attention_fwd(q, k, v):
    o, lse = fwd(q, k, v)
    return o, (q, k, v, o, lse)

  def attention_bwd(res, do):
    q, k, v, o, lse = res
    seq, d = q.shape
    delta = jnp.sum(o * do, axis=-1)
    args = (q, k, v, do, lse, delta)
    vec = full((seq,))
    dk, dv = pl.pallas_call(
        dkdv_kernel, out_shape=(jx.ShapeDtypeStruct(k.shape, k.dtype),) * 2, grid=(seq // bk,),
        in_specs=[full((seq, d)), pl.BlockSpec((bk, d), lambda j: (j, 0)),
                  pl.BlockSpec((bk, d), lambda j: (j, 0)), full((seq, d)), vec, vec],
        out_specs=(pl.BlockSpec((bk, d), lambda j: (j, 0)),) * 2, interpret=interpret)(*args)
    dq = pl.pallas_call(
        dq_kernel, out_shape=jx.ShapeDtypeStruct(q.shape, q.dtype), grid=(seq // bq,),
        in_specs=[pl.BlockSpec((bq, d), lambda i: (i, 0)), full((seq, d)), full((seq, d)),
                  pl.BlockSpec((bq, d), lambda i: (i, 0)), pl.BlockSpec((bq,), lambda i: (i,)),
                  pl.BlockSpec((bq,), lambda i: (i,))],
        out_specs=pl.BlockSpec((bq, d), lambda i: (i, 0)), interpret=interpret)(*args)
    return dq, dk, dv
  attention.defvjp(attention_fwd, attention_bwd)
  return attention


def test_flash_attention_backward_custom_vjp():
  q, k, v = _rand((8, 4)), _rand((8, 4), seed=1), _rand((8, 4), seed=2)

  def grads(mods, interpret, arrays):
    jnp, jx = mods[1], mods[3]
    att = _flash_with_vjp(*mods, interpret=interpret)
    return jx.grad(lambda q, k, v: jnp.sum(att(q, k, v) ** 2), argnums=(0, 1, 2))(*arrays)
  ref = grads(JX, True, (q, k, v))
  with executable.compile_mode_override("off"):
    got = grads(PY, True, [pjnp.asarray(a) for a in (q, k, v)])
  with executable.compile_mode_override("sync"):
    comp = grads(PY, False, [pjnp.asarray(a) for a in (q, k, v)])
  for r, g, c in zip(ref, got, comp):   # cancellation in the gradients: not in ulps
    np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-6)
    _same(c, g)

  def plain(q, k, v):   # the same math without Pallas
    s = q @ k.T
    p = jjnp.exp(s - s.max(-1, keepdims=True))
    return jjnp.sum(((p / p.sum(-1, keepdims=True)) @ v) ** 2)
  for g, r in zip(got, jax.grad(plain, argnums=(0, 1, 2))(q, k, v)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-4, atol=1e-5)


def test_alias_mismatch_error_matches_jax():
  def run(pl, jnp, jx):
    def kernel(x_ref, o_ref):
      o_ref[...] = x_ref[...][:2]
    with pytest.raises(ValueError) as e:
      pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((2,), jnp.float32),
                     input_output_aliases={0: 0}, interpret=True)(jnp.zeros(4))
    return str(e.value)
  assert run(ppl, pjnp, pyjax) == run(jpl, jjnp, jax)


def _jaxpr_text(make, args, lib):
  f = functools.partial(make(*lib), interpret=True)
  return str(lib[3].make_jaxpr(f)(*[lib[1].asarray(a) for a in args]))


@pytest.mark.parametrize("which", ["ragged", "matmul", "kblocked", "softmax", "flash",
                                   "helpers"])
def test_make_jaxpr_prints_kernels_as_jax(which):
  # the whole text, kernel jaxpr included: Ref<...>-typed variables, get / swap equations
  # with JAX's indexers, program_id, cond and scan bodies taking refs, memory spaces
  make, args = {
      "ragged": (_ragged, [_rand((8, 6))]),
      "matmul": (_matmul, [_rand((8, 6)), _rand((6, 8), seed=1)]),
      "kblocked": (_kblocked, [_rand((8, 12)), _rand((12, 8), seed=1)]),
      "softmax": (functools.partial(_row_kernel, which="softmax"),
                  [_rand((4, 16)), _rand(16, seed=1), _rand(16, seed=2)]),
      "flash": (_flash, [_rand((8, 4)), _rand((8, 4), seed=1), _rand((8, 4), seed=2)]),
      "helpers": (_helpers, [_rand(8)]),   # pl.loop, run_scoped, .at with a squeezed index
  }[which]
  got = _jaxpr_text(make, args, PY)
  assert got == _jaxpr_text(make, args, JX)
  assert "Ref<default>{f32[" in got and "<- " in got


def _views(pl, jnp, lax, jx):
  def kernel(x_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)
    o_ref.at[0:4][pl.ds(1, 2), :] = x_ref.at[2:6][1:3]
    o_ref.at[1][3] = 2.0
    o_ref.at[2:6].at[1][:] += jnp.ones(o_ref.shape[1], jnp.float32)
    i = pl.program_id(0)
    o_ref.at[pl.ds(i, 4)][0, pl.ds(i, 8)] = x_ref[pl.ds(i, 1), 0:8][0]
    o_ref[7, :] += x_ref[i, :]
    o_ref[pl.ds(i + 4, 2), -1] = x_ref[0:2, 0] * 3.0

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          interpret=interpret)(x)
  return f


def _scoped(pl, jnp, lax, jx):
  from jax.experimental.pallas import tpu as jtpu
  from pyjax.experimental.pallas import tpu as ptpu
  tpu = ptpu if pl is ppl else jtpu

  def kernel(x_ref, o_ref):
    def body(s_ref, t_ref):
      s_ref[...] = x_ref[...] * 2.0
      t_ref[0] = 3
      o_ref[...] = s_ref[...] + t_ref[0].astype(jnp.float32)
    pl.run_scoped(body, tpu.VMEM(x_ref.shape, jnp.float32), tpu.SMEM((2,), jnp.int32))

    def first(r):
      r[...] = o_ref[...]
      return r[0, 0] + 1.0
    o_ref[0, 0] = pl.run_scoped(first, tpu.VMEM(x_ref.shape, jnp.float32))

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=interpret)(x)
  return f


def _masked(pl, jnp, lax, jx):
  from jax.experimental.pallas import triton as jtr
  from pyjax.experimental.pallas import triton as ptr
  plt = ptr if pl is ppl else jtr

  def kernel(x_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)
    m = jnp.arange(8) < 5
    v = plt.load(x_ref.at[pl.ds(0, 8)], mask=m, other=0.0)
    u = plt.load(x_ref.at[pl.ds(4, 8)], mask=m)
    plt.store(o_ref.at[pl.ds(0, 8)], v + 1.0, mask=m)
    plt.store(o_ref.at[pl.ds(8, 8)], plt.load(x_ref)[:8] * 2.0)
    o_ref[pl.ds(12, 2)] = u[:2] * 3.0

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=interpret)(x)
  return f


def test_masked_load_store_print_and_run_as_jax():
  x = _rand(16)
  assert _jaxpr_text(_masked, [x], PY) == _jaxpr_text(_masked, [x], JX)
  check(_masked, x)


def test_run_scoped_prints_and_runs_as_jax():
  x = _rand((8, 16))
  assert _jaxpr_text(_scoped, [x], PY) == _jaxpr_text(_scoped, [x], JX)
  check(_scoped, x)


def test_ref_views_and_indexers_print_and_run_as_jax():
  x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
  assert _jaxpr_text(_views, [x], PY) == _jaxpr_text(_views, [x], JX)
  check(_views, x)


def test_grad_through_block_by_block_grid():
  # a pyjax extension: reverse mode through the scan the grid program becomes
  def kernel(x_ref, o_ref):
    o_ref[...] = pjnp.sin(x_ref[...])
  f = ppl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct((8,), pjnp.float32), grid=(2,),
                      in_specs=[ppl.BlockSpec((4,), lambda i: (i,))],
                      out_specs=ppl.BlockSpec((4,), lambda i: (i,)), interpret=True)
  x = np.arange(8, dtype=np.float32)
  g = pyjax.grad(lambda x: f(x).sum())(pjnp.asarray(x))
  np.testing.assert_allclose(np.asarray(g), np.cos(x), rtol=1e-6, atol=1e-7)


def _strided(pl, jnp, lax, jx):
  def kernel(x_ref, o_ref):
    o_ref[...] = jnp.zeros((8,), jnp.float32)
    o_ref[pl.ds(1, 3, stride=2)] = x_ref[pl.ds(pl.program_id(0), 3, stride=2)] * 2.0
    o_ref[pl.program_id(0)] += x_ref[7]

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((8,), jnp.float32), grid=(2,),
                          interpret=interpret)(x)
  return f


def test_strided_ds_and_traced_scalar_index():
  check(_strided, _rand(8))


def test_grids_in_both_modes(mode):
  # x64 (the slow run): loop indices stay int32 program ids, float64 blocks
  check(_iota)
  check(_kblocked, _rand((8, 12)), _rand((12, 8), seed=1))
  check(_ragged, _rand((10, 7)).astype(np.float64 if mode else np.float32))


def test_small_utilities_match_jax():
  for name, args in [("cdiv", (9, 2)), ("align_to", (5, 4)), ("next_power_of_2", (5,)),
                     ("strides_from_shape", ((2, 3, 4),))]:
    assert getattr(ppl, name)(*args) == getattr(jpl, name)(*args)


def _alias_accumulate(pl, jnp, lax, jx):
  # the output starts as the aliased input: blocks accumulate into it
  def kernel(x_ref, acc_ref, o_ref):
    o_ref[...] += x_ref[...]

  def f(x, acc, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct(acc.shape, acc.dtype),
                          grid=(2, 3), in_specs=[pl.BlockSpec((4,), lambda i, k: (i,)),
                                                 pl.BlockSpec((4,), lambda i, k: (i,))],
                          out_specs=pl.BlockSpec((4,), lambda i, k: (i,)),
                          input_output_aliases={1: 0}, interpret=interpret)(x, acc)
  return f


def test_aliased_output_accumulates():
  x, acc = _rand(8), _rand(8, seed=1)
  out = check(_alias_accumulate, x, acc)
  np.testing.assert_allclose(np.asarray(out), acc + 3 * x, rtol=1e-6)


def test_kernel_traced_once_per_operand_types():
  traces = []

  def kernel(x_ref, o_ref):
    traces.append(1)
    o_ref[...] = x_ref[...] + 1.0
  f = ppl.pallas_call(kernel, out_shape=pyjax.ShapeDtypeStruct((4,), pjnp.float32),
                      interpret=True)
  f(pjnp.zeros(4))
  f(pjnp.ones(4))
  pyjax.jit(f)(pjnp.ones(4))
  assert len(traces) == 1
