"""lineax's quick start on pyjax (`python -m pyjax run`) matches real JAX."""
import pytest

pytest.importorskip("lineax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_lineax_quickstart_matches_jax():
  want = run_jax("lineax_quickstart.py")
  got = run_pyjax("lineax_quickstart.py")
  assert_close(got, want, rtol=1e-4, atol=1e-5)
