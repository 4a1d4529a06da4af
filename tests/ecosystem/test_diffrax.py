"""diffrax's quick start on pyjax (`python -m pyjax run`) matches real JAX."""
import pytest

pytest.importorskip("diffrax")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_diffrax_quickstart_matches_jax():
  want = run_jax("diffrax_quickstart.py")
  got = run_pyjax("diffrax_quickstart.py")
  assert_close(got, want, rtol=2e-5, atol=1e-5)


def test_diffrax_solution_is_exact_on_pyjax():
  got = run_pyjax("diffrax_quickstart.py")
  assert_close(got["ys"][-1], got["exact"], rtol=1e-4)
  # d/dk sum(y0 * exp(-k)) = -exp(-k) * sum(y0)
  import math
  assert_close(got["grad"], -math.exp(-0.7) * 3.0, rtol=1e-4)
