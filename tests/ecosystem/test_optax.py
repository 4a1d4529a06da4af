"""optax on pyjax (``python -m pyjax run``) matches real JAX: sgd/adam/adamw/rmsprop/
lion/adafactor, a chained transformation with a schedule, L-BFGS with its line search,
losses and schedules (scripts/optax_optimizers.py)."""
import pytest

pytest.importorskip("optax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_optax_optimizers_match_jax():
  want = run_jax("optax_optimizers.py", timeout=300)
  got = run_pyjax("optax_optimizers.py", timeout=300)
  assert_close(got, want, rtol=2e-4, atol=2e-5)
  for name in ("sgd_momentum", "adam", "adamw", "rmsprop", "chain_clip_adam_schedule"):
    assert got[name]["loss_last"] < 0.2 * got[name]["loss_first"], name
