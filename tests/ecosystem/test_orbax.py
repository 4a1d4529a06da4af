"""orbax-checkpoint on pyjax (``python -m pyjax run``) matches real JAX: a train state
(params with a bfloat16 leaf, adam state, step) saved with StandardCheckpointer and a
CheckpointManager (max_to_keep=1), restored bit-identically, training continued."""
import pytest

pytest.importorskip("orbax.checkpoint")
pytest.importorskip("optax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_orbax_save_restore_matches_jax():
  want = run_jax("orbax_quickstart.py")
  got = run_pyjax("orbax_quickstart.py")
  assert got["all_equal"] is True
  assert got["restored_step"] == 3 and got["latest"] == 4 and got["all_steps"] == [4]
  assert got["emb_dtype"] == "bfloat16"
  assert_close(got, want, rtol=1e-5, atol=1e-6)
