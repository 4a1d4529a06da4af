"""lax/lax_api.py, the one lax facade: jax.lax's primitives under JAX's names; and every public name of
jax.lax exists in pyjax.lax."""
import pyjax.numpy as jnp
from pyjax import lax


# --- the primitives under JAX's names ------------------------------------------------------
def test_primitive_names_are_the_primitives():
  from pyjax._src.lax import elementwise, shapes
  assert lax.add_p is elementwise.add_p and lax.reshape_p is shapes.reshape_p
  assert lax.add_p.bind(jnp.float32(1), jnp.float32(2)) == 3
  assert lax.linear_solve_p.name == "custom_linear_solve"
  for name in ["scan_p", "while_p", "cond_p", "stop_gradient_p", "igamma_p", "polygamma_p",
               "regularized_incomplete_beta_p", "bessel_i0e_p", "eq_to_p", "split_p", "tile_p",
               "stack_p", "unstack_p", "copy_p", "device_put_p", "sharding_constraint_p",
               "approx_top_k_p", "rng_bit_generator_p", "rng_uniform_p", "create_token_p",
               "after_all_p", "dce_sink_p", "stage_p", "optimization_barrier_p", "mulhi_p",
               "ragged_all_to_all_p", "select_and_scatter_p"]:
    p = getattr(lax, name)
    assert p.name == name[:-2] or name == "linear_solve_p", name


def test_primitive_names_match_jax(jax):
  for name in dir(jax.lax):
    if name.endswith("_p"):
      assert getattr(lax, name).name == getattr(jax.lax, name).name, name


def test_every_jax_lax_name_exists(jax):
  ours = set(lax.__all__)
  theirs = {n for n in dir(jax.lax) if not n.startswith("_")}
  assert theirs <= ours | {"linalg"}, sorted(theirs - ours)
  for name in lax.__all__:
    assert getattr(lax, name) is not None, name
