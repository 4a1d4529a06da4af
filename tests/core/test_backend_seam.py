"""The backend seam (issue 17): the runtime reaches platforms only through
``runtime.backend.Backend``.

The CPU implementation registered a second time, as platform "testcpu", is a second
backend: data moves between the platforms with ``device_put``, computations follow
committed data onto it (eager and jitted), inputs committed to devices of both raise
JAX's error, and its jit programs are compiled by its own ``compile_jaxpr``.  The import
graph test checks that ``runtime/`` never imports ``backends/`` (function-level imports
included), so the two packages have no import cycle."""
import ast
import pathlib

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import compiler
from pyjax._src.backends.cpu.backend import CpuBackend
from pyjax._src.runtime import backend as backend_mod
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.stream import Stream

SRC = pathlib.Path(pyjax.__file__).parent / "_src"


def _imports(path, package):
  """Every module ``path`` imports, at any depth of the file (function bodies too)."""
  mods = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      mods.update(a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:   # relative: resolved against the file's package
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
      mods.add(base)
      mods.update(f"{base}.{a.name}" for a in node.names)
    elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__"
          and node.args and isinstance(node.args[0], ast.Constant)):
      mods.add(node.args[0].value)
  return mods


def _package_edges(pkg):
  """{(importing module, imported module)} for the modules of ``_src/<pkg>``, restricted
  to imports of ``pyjax._src.runtime`` and ``pyjax._src.backends``."""
  edges = set()
  for f in sorted((SRC / pkg).rglob("*.py")):
    mod = "pyjax._src." + ".".join(f.relative_to(SRC).with_suffix("").parts)
    package = mod.rsplit(".", 1)[0] if f.name != "__init__.py" else mod
    for m in _imports(f, package):
      if m.startswith(("pyjax._src.runtime", "pyjax._src.backends")):
        edges.add((mod, m))
  return edges


def test_runtime_never_imports_backends():
  runtime_to_backends = {(a, b) for a, b in _package_edges("runtime")
                         if b.startswith("pyjax._src.backends")}
  assert runtime_to_backends == set()
  # the other direction exists (backends use streams, Arrays and the interface): with
  # none from runtime to backends the two packages cannot form an import cycle
  backends_to_runtime = {b for _, b in _package_edges("backends")
                         if b.startswith("pyjax._src.runtime")}
  assert "pyjax._src.runtime.backend" in backends_to_runtime


def test_import_scan_sees_function_level_imports(tmp_path):
  f = tmp_path / "m.py"
  f.write_text("def g():\n  from pyjax._src.backends.cpu import eager\n  import pyjax._src.x\n")
  assert {"pyjax._src.backends.cpu", "pyjax._src.backends.cpu.eager",
          "pyjax._src.x"} <= _imports(f, "pyjax._src.runtime")


def test_cpu_backend_is_registered_and_implements_the_interface():
  be = _devices.get_backend("cpu")
  assert isinstance(be, backend_mod.Backend) and be.platform == "cpu"
  assert _devices.get_backend("host") is be
  assert backend_mod.platforms()["cpu"].default
  assert be.stream_type is Stream and be.supports("jit") and not be.supports("teleport")
  assert be.eager_impls["add"](np.int32(2), np.int32(3)) == 5
  assert all(d._backend is be for d in be.devices)


@pytest.fixture
def testcpu(monkeypatch):
  """Platform "testcpu" (two devices) beside "cpu" for one test."""
  CpuBackend.register("testcpu")
  be = backend_mod.platforms()["testcpu"].factory()
  be.devices = [type(be.devices[0])(i, be) for i in range(2)]
  monkeypatch.setitem(_devices.backends(), "testcpu", be)
  yield be
  backend_mod.unregister_platform("testcpu")


def test_second_platform_devices(testcpu):
  ds = pyjax.devices("testcpu")
  assert [str(d) for d in ds] == ["testcpu:0", "testcpu:1"]
  assert all(d.platform == "testcpu" for d in ds) and ds[0] is not pyjax.devices("cpu")[0]
  assert type(ds[0].stream) is Stream
  assert pyjax.devices() == pyjax.devices("cpu")   # the default backend is unchanged


def test_device_put_across_platforms(testcpu):
  cpu0, t0, t1 = pyjax.devices("cpu")[0], *pyjax.devices("testcpu")
  x = jnp.arange(3.0)
  y = pyjax.device_put(x, t1)
  assert y.devices() == {t1} and y.committed
  np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])
  z = pyjax.device_put(y, cpu0)
  assert z.devices() == {cpu0} and z.committed and z.dtype == np.float32
  c = pyjax.device_put(y, t0, may_alias=False)
  assert not np.shares_memory(np.asarray(c), np.asarray(y))
  h = pyjax.device_put(np.int32(7), t0)
  assert h.devices() == {t0} and h.dtype == np.int32 and int(h) == 7


def test_eager_ops_follow_committed_data(testcpu):
  t1 = pyjax.devices("testcpu")[1]
  y = pyjax.device_put(jnp.arange(3.0), t1)
  out = jnp.sin(y) * 2 + 1.0
  assert out.devices() == {t1} and out.committed
  np.testing.assert_allclose(out, np.sin(np.arange(3.0, dtype=np.float32)) * 2 + 1,
                             rtol=1e-6)
  x = pyjax.device_put(jnp.arange(3.0), pyjax.devices("cpu")[0])
  with pytest.raises(ValueError) as e:
    x + y
  assert str(e.value) == (
      "Received incompatible devices for jitted computation. Got argument x of add with "
      "shape float32[3] and with device ids [0] on platform CPU and argument y of add with "
      "shape float32[3] and with device ids [1] on platform TESTCPU")


def test_jit_placement_and_compilation_on_second_platform(testcpu, monkeypatch):
  compiled = []
  orig = testcpu.compile_jaxpr

  def spy(closed, device, name="jaxpr", donate=()):
    compiled.append((str(device), name))
    return orig(closed, device, name, donate)
  monkeypatch.setattr(testcpu, "compile_jaxpr", spy)
  t0 = pyjax.devices("testcpu")[0]
  f = pyjax.jit(lambda x, y: jnp.sin(x) * y)
  x = pyjax.device_put(jnp.arange(3.0), t0)
  out = f(x, 2.0)
  assert out.devices() == {t0} and out.committed
  np.testing.assert_allclose(out, np.sin(np.arange(3.0, dtype=np.float32)) * 2, rtol=1e-6)
  assert compiled == [("testcpu:0", "<lambda>")]
  with pyjax.default_device(t0):   # uncommitted: the default device, not committed
    u = f(jnp.arange(3.0), 2.0)
  assert u.devices() == {t0} and not u.committed
  with pytest.warns(DeprecationWarning, match="backend and device argument on jit"):
    g = pyjax.jit(lambda x: x + 1, device=pyjax.devices("testcpu")[1])
  assert g(jnp.arange(3.0)).devices() == {pyjax.devices("testcpu")[1]}
  assert len(compiled) == 2   # f's executable for testcpu:0 was reused
  c = pyjax.device_put(jnp.arange(3.0), pyjax.devices("cpu")[0])
  with pytest.raises(ValueError, match=r"^Received incompatible devices for jitted "
                     r"computation. Got argument x of <lambda> with shape float32\[3\] and "
                     r"with device ids \[0\] on platform CPU and argument y of <lambda> with "
                     r"shape float32\[3\] and with device ids \[0\] on platform TESTCPU$"):
    f(c, x)


def test_compile_goes_through_the_backend(testcpu):
  class NoJit(CpuBackend):
    def supports(self, feature):
      return feature != "jit"
  with pytest.raises(RuntimeError, match="cannot compile for the 'nojit' backend"):
    compiler.backend_compile_and_load(NoJit("nojit", 1), None, None, "f")


def test_eager_jit_equation_on_second_platform(testcpu):
  from pyjax._src import core
  t0 = pyjax.devices("testcpu")[0]
  closed = pyjax.make_jaxpr(lambda x, y: pyjax.jit(lambda a, b: a * b)(x, y))(1.0, 2.0)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["jit"]
  x = pyjax.device_put(jnp.float32(3.0), t0)
  out, = core.eval_jaxpr(closed.jaxpr, closed.consts, x, 2.0)   # jit_p's impl
  assert out.devices() == {t0} and out.committed and float(out) == 6.0
  c = pyjax.device_put(jnp.float32(1.0), pyjax.devices("cpu")[0])
  with pytest.raises(ValueError, match=r"^Received incompatible devices for jitted "
                     r"computation. Got argument .* on platform CPU and argument .* on "
                     r"platform TESTCPU$"):
    core.eval_jaxpr(closed.jaxpr, closed.consts, c, x)
