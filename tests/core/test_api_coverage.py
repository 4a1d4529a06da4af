"""tools/api_coverage.py: pyjax's public names against the committed lists of JAX's.

Gaps do not fail (they are printed); what fails is a name pyjax exports with the wrong
kind (not callable where JAX's is), a malformed list or gap file, or lists that no longer
match the installed JAX."""
import importlib.util
import os
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_tool():
  spec = importlib.util.spec_from_file_location("api_coverage",
                                                os.path.join(ROOT, "tools", "api_coverage.py"))
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod


cov = _load_tool()
MODULES = cov.available_modules()


def test_lists_exist_for_every_base_module():
  for m in cov.BASE_MODULES:
    assert m in MODULES, f"tools/api_names/{m}.txt is missing"
  assert any(m.startswith("scipy.stats.") for m in MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_list_is_well_formed(module):
  names = cov.read_names(module)
  assert names, module
  for n, kind in names.items():
    assert n.isidentifier() and not n.startswith("_"), n
    assert kind in cov.KINDS, (n, kind)


def test_known_gaps_well_formed():
  gaps = cov.read_known_gaps()
  for (module, name), reason in gaps.items():
    assert module in MODULES, f"known gap for unknown module {module}"
    assert name in cov.read_names(module), f"known gap {module}:{name} is not a JAX name"
    assert reason, f"known gap {module}:{name} needs a reason"


@pytest.mark.parametrize("module", MODULES)
def test_exported_names_have_jax_kind(module, capsys):
  """Every name pyjax exports from a listed module is callable where JAX's is and a
  namespace where JAX's is a module; the missing names are printed, not failed."""
  c = cov.coverage(module)
  assert len(c["present"]) + len(c["missing"]) + len(c["known_gaps"]) == c["total"]
  bad = cov.check_kinds(module)
  assert not bad, f"pyjax.{module}: wrong kinds (name, jax kind, pyjax kind): {bad}"
  with capsys.disabled():
    if c["missing"]:
      print(f"\n[api coverage] pyjax.{module}: {len(c['present'])}/{c['total']}; missing: "
            + " ".join(c["missing"]))


def test_report_runs():
  import io
  buf = io.StringIO()
  results = cov.report(MODULES, out=buf)
  text = buf.getvalue()
  assert text.splitlines()[0].startswith("module")
  assert "total" in text
  assert len(results) == len(MODULES)


def test_coverage_counts_present_names(tmp_path, monkeypatch):
  """The comparison itself, on a made-up list against a real pyjax module."""
  names_dir = tmp_path / "api_names"
  names_dir.mkdir()
  (names_dir / "numpy.txt").write_text("# test\nadd function\nno_such_name_xyz function\n"
                                       "pi value\n")
  (names_dir / "known_gaps.txt").write_text("numpy:no_such_name_xyz  not provided in tests\n")
  monkeypatch.setattr(cov, "NAMES_DIR", str(names_dir))
  monkeypatch.setattr(cov, "GAPS_FILE", str(names_dir / "known_gaps.txt"))
  c = cov.coverage("numpy")
  assert c["present"] == ["add", "pi"]
  assert c["missing"] == []
  assert c["known_gaps"] == {"no_such_name_xyz": "not provided in tests"}
  (names_dir / "known_gaps.txt").write_text("")
  c = cov.coverage("numpy")
  assert c["missing"] == ["no_such_name_xyz"]


def test_lists_match_installed_jax():
  """The committed lists are JAX's current public names (regenerate when JAX moves)."""
  jax = pytest.importorskip("jax")
  if jax.__version__ != "0.10.2":
    pytest.skip(f"lists were generated from JAX 0.10.2, installed {jax.__version__}")
  for module in MODULES:
    mod = importlib.import_module(f"jax.{module}")
    real = set(cov.public_names(mod))
    listed = cov.read_names(module)
    assert real == set(listed), (module, sorted(real ^ set(listed)))
    for n, kind in listed.items():
      assert cov._kind(getattr(mod, n)) == kind, (module, n)
    if module == "scipy.stats":
      subs = {n for n in real if isinstance(getattr(mod, n), types.ModuleType)}
      assert {f"scipy.stats.{s}" for s in subs} <= set(MODULES)
