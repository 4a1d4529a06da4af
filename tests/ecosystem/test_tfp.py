"""tfp.substrates.jax (tfp-nightly; tensorflow-probability 0.25 does not import on JAX
0.10) on pyjax (``python -m pyjax run``) matches real JAX: log_prob / sample / entropy /
KL of common distributions, a mixture, a bijector, grad+jit and vmap of log_prob."""
import pytest

pytest.importorskip("tensorflow_probability.substrates.jax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_tfp_quickstart_matches_jax():
  want = run_jax("tfp_quickstart.py")
  got = run_pyjax("tfp_quickstart.py")
  assert_close(got, want, rtol=1e-5, atol=1e-5)
  assert got["mvn_sample_shape"] == [1000, 3]
