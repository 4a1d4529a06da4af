"""flax.linen quick start on pyjax (``python -m pyjax run``) matches real JAX: an MLP
(adam) and a CNN with Conv-BatchNorm-Dropout (sgd+momentum, batch stats, dropout rngs)."""
import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_flax_linen_quickstart_matches_jax():
  want = run_jax("flax_linen_quickstart.py")
  got = run_pyjax("flax_linen_quickstart.py")
  assert_close(got, want, rtol=1e-4, atol=1e-5)
  assert got["mlp_losses"][-1] < got["mlp_losses"][0]
