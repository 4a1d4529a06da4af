"""jaxtyping on pyjax (``python -m pyjax run``) behaves as on real JAX: array
annotations with shared dimensions inside @jaxtyped, on arrays and tracers
(scripts/jaxtyping_basics.py)."""
import pytest

pytest.importorskip("jaxtyping")

from _harness import run_jax, run_pyjax  # noqa: E402


def test_jaxtyping_basics_match_jax():
  want = run_jax("jaxtyping_basics.py", timeout=300)
  got = run_pyjax("jaxtyping_basics.py", timeout=300)
  assert got == want
  assert got["matmul_ok"] and got["k_match"] and not got["k_mismatch"]
