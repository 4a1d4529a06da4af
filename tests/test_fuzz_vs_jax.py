"""A fixed-seed slice of the differential fuzzer (``tests/fuzz_vs_jax.py``): random jitted
programs over every dtype and special values, on pyjax's two tiers against real JAX.
Any mismatch not explained in ``docs/differences.md`` fails. Longer campaigns:
``python tests/fuzz_vs_jax.py --programs 10000``."""
import os

import pytest

import fuzz_vs_jax
import sanitizers


def _run(n, seed, x64, tiers, oracle="jax"):
  tally, bad = fuzz_vs_jax.campaign(n, seed=seed, x64=x64, tiers=tiers, oracle=oracle)
  report = "\n\n".join(f"[{m.tier}] v{m.value} = {m.op}: {m.kind}: {m.detail}\n"
                       f"{m.program.describe()}" for m in bad[:5])
  assert not bad, f"{len(bad)} unexplained mismatches; tally {dict(tally)}\n{report}"
  assert tally["programs"] == n and tally["harness errors"] == 0, dict(tally)
  assert tally["ops"] >= 25 * n     # programs really are ~30 ops long
  return tally


def test_fuzz_numpy_tier_against_jax():
  pytest.importorskip("jax")
  _run(4, seed=0, x64=False, tiers=("numpy",))


@pytest.mark.slow
@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_fuzz_both_tiers_against_jax(x64):
  pytest.importorskip("jax")
  _run(30 if not x64 else 20, seed=100 if not x64 else 200, x64=x64, tiers=("numpy", "native"))


def test_fuzz_generation_is_deterministic():
  """The same seed draws the same program (CI's slice is reproducible); a program is
  valid JAX by construction, so the generator needs a working module -- pyjax will do."""
  import pyjax
  a = fuzz_vs_jax.generate(7, pyjax)
  b = fuzz_vs_jax.generate(7, pyjax)
  assert a.describe() == b.describe() and len(a.ops) == 30
  assert fuzz_vs_jax.generate(8, pyjax).describe() != a.describe()


def test_fuzz_comparison_rules():
  import numpy as np
  same = fuzz_vs_jax._same
  f32 = np.float32
  assert same(np.array([1, 2], np.int32), np.array([1, 2], np.int32))[0]
  assert not same(np.array([1, 2], np.int32), np.array([1, 3], np.int32))[0]
  assert same(np.array([1.0, np.nan], f32), np.array([1.0 + 1e-7, np.nan], f32))[0]
  assert not same(np.array([np.nan], f32), np.array([1.0], f32))[0]
  assert not same(np.array([-0.0], f32), np.array([0.0], f32))[0]     # sign of zero counts
  assert not same(np.array([np.inf], f32), np.array([-np.inf], f32))[0]
  assert not same(np.array([1.0], f32), np.array([1.001], f32))[0]
  assert same(np.array([1.0], np.float16), np.array([1.001], np.float16))[0]
  assert not same(np.zeros((2,), f32), np.zeros((1, 2), f32))[0]


@pytest.mark.slow
def test_sanitizers_fuzz_tiers(tmp_path):
  """Under AddressSanitizer and UBSan (JAX hidden): 25 random programs, the native tier
  against the NumPy tier."""
  r = sanitizers.run(tmp_path, [os.path.abspath(fuzz_vs_jax.__file__), "--oracle", "tiers",
                                "--programs", "25", "--seed", "300"], timeout=1800)
  assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
  assert "'programs': 25" in r.stdout and "harness" not in r.stdout
