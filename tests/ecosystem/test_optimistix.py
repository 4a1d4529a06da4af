"""optimistix's quick start on pyjax (`python -m pyjax run`) matches real JAX."""
import pytest

pytest.importorskip("optimistix")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_optimistix_quickstart_matches_jax():
  want = run_jax("optimistix_quickstart.py")
  got = run_pyjax("optimistix_quickstart.py")
  assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_optimistix_root_is_a_root():
  got = run_pyjax("optimistix_quickstart.py")
  assert_close(got["residual"], [0.0, 0.0], atol=1e-6)
  assert_close(got["min"], [1.0, 1.0], atol=1e-3)
