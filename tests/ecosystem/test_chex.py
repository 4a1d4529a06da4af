"""chex on pyjax (``python -m pyjax run``) behaves as on real JAX: static asserts and
their messages, chex.dataclass through jit/grad, assert_max_traces, chexify
(scripts/chex_basics.py)."""
import pytest

pytest.importorskip("chex")

from _harness import assert_close, run_jax, run_pyjax  # noqa: E402


def test_chex_basics_match_jax():
  want = run_jax("chex_basics.py", timeout=300)
  got = run_pyjax("chex_basics.py", timeout=300)
  assert_close(got, want)
  assert got["assert_shape_ok"] == "ok"
  assert got["max_traces_bad"].startswith("AssertionError")
  assert got["chexify_bad"] == "AssertionError"
