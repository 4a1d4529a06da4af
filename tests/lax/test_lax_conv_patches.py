"""conv_general_dilated_patches / conv_general_dilated_local (lax/conv_patches.py)."""
import numpy as np

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- conv_general_dilated_patches / local ------------------------------------------------------
def _patches_prog(jax, jnp, lax):
  rng = np.random.RandomState(0)
  x = jnp.array(rng.randn(2, 3, 5, 4).astype(np.float32))
  xh = jnp.transpose(x, (0, 2, 3, 1))
  w = jnp.array(rng.randn(4, 3, 12, 5).astype(np.float32))
  return [lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"),
          lax.conv_general_dilated_patches(x, (3, 2), (2, 1), "SAME", rhs_dilation=(1, 2)),
          lax.conv_general_dilated_patches(xh, (2, 3), (1, 1), [(1, 0), (0, 1)],
                                           dimension_numbers=("NHWC", "HWIO", "NHWC")),
          lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2),
                                         dimension_numbers=("NCHW", "HWIO", "NCHW")),
          jax.grad(lambda x: (lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID") ** 2)
                   .sum())(x),
          jax.vmap(lambda x: lax.conv_general_dilated_patches(x[None], (2, 2), (1, 1), "VALID"))(x)]


def test_conv_patches_match_jax(jax):
  assert_same_tree(_patches_prog(*PY), _patches_prog(*libraries(jax)), rtol=1e-5, atol=1e-5)
  f = lambda lax: (lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"))
  x = np.ones((2, 3, 5, 4), np.float32)
  assert jaxpr_text(pyjax, f(lax), x) == jaxpr_text(jax, f(jax.lax), x)
  assert_raises_same(
      lambda: lax.conv_general_dilated_local(x, x, (1, 1), "VALID", (2, 2),
                                             precision=lax.DotAlgorithmPreset.DEFAULT),
      lambda: jax.lax.conv_general_dilated_local(
          x, x, (1, 1), "VALID", (2, 2), precision=jax.lax.DotAlgorithmPreset.DEFAULT))


def test_conv_patches_against_numpy():
  rng = np.random.RandomState(5)
  x = rng.randn(1, 2, 4, 3).astype(np.float32)
  p = np.asarray(lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"))
  assert p.shape == (1, 8, 3, 2)
  for i in range(3):
    for j in range(2):
      np.testing.assert_array_equal(p[0, :, i, j], x[0, :, i:i + 2, j:j + 2].reshape(-1))
