"""distrax on pyjax (``python -m pyjax run``) matches real JAX: distributions, a bijector
chain (forward, log-det, inverse), a Lambda-transformed distribution (distrax inspects
its jaxpr) and fitting a Normal with optax under jit."""
import pytest

pytest.importorskip("distrax")
pytest.importorskip("optax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_distrax_quickstart_matches_jax():
  want = run_jax("distrax_quickstart.py")
  got = run_pyjax("distrax_quickstart.py")
  assert_close(got, want, rtol=1e-5, atol=1e-5)
  assert got["fit_losses"][-1] < got["fit_losses"][0]
