"""flax.nnx quick start on pyjax (``python -m pyjax run``) matches real JAX: an MLP (adam)
and a CNN with Conv-BatchNorm-Dropout (sgd+momentum) trained with ``nnx.Optimizer``,
``nnx.jit`` and ``nnx.value_and_grad``; and Variables backed by refs or hijax types."""
import pytest

pytest.importorskip("flax.nnx")
pytest.importorskip("optax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_flax_nnx_quickstart_matches_jax():
  want = run_jax("flax_nnx_quickstart.py")
  got = run_pyjax("flax_nnx_quickstart.py")
  assert_close(got, want, rtol=1e-4, atol=1e-5)
  assert got["mlp_losses"][-1] < got["mlp_losses"][0]
  assert got["opt_step"] == 4


def test_flax_nnx_ref_and_hijax_variables_match_jax():
  want = run_jax("flax_nnx_variables.py")
  got = run_pyjax("flax_nnx_variables.py")
  assert got["hijax_type"] == "HijaxVariable"
  assert_close(got, want, rtol=1e-5, atol=1e-6)
