"""lax tokens (lax/tokens.py): create_token / after_all, eagerly and in jaxprs."""
import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, jaxpr_text


# --- tokens -------------------------------------------------------------------------------
def test_tokens(jax):
  f = lambda lax: (lambda: lax.after_all(lax.create_token(), lax.create_token()))
  assert jaxpr_text(pyjax, f(lax)) == jaxpr_text(jax, f(jax.lax))
  g = lambda lax: (lambda: lax.create_token())
  assert jaxpr_text(pyjax, g(lax)) == jaxpr_text(jax, g(jax.lax))
  tok = lax.create_token()
  assert lax.after_all(tok, lax.create_token(tok)) is not None
  assert_raises_same(lambda: lax.after_all(jnp.ones(2)),
                     lambda: jax.lax.after_all(jax.numpy.ones(2)))
  # a token passed into and created inside jit
  out = pyjax.jit(lambda t, x: (lax.after_all(t), x + 1))(tok, 1.)
  assert float(out[1]) == 2.0
  assert pyjax.vmap(lambda x: (lax.create_token(), x)[1])(jnp.ones(3)).shape == (3,)
