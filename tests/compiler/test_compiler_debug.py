"""Seeing the CPU compiler's pipeline: ``PYJAX_DEBUG`` levels 1-4 on stderr and the order
of ``lower(...).compile().as_text()`` (the program's own kernels first, the shared prelude
last)."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")

_X = np.arange(4, dtype=np.float32)


def _compile_at(level, monkeypatch, capsys):
  """stderr of one synchronous compilation of a fresh ``sin(x) * 2`` at ``level``."""
  monkeypatch.setenv("PYJAX_DEBUG", str(level))

  def sin_times_two(x):
    return jnp.sin(x) * 2

  capsys.readouterr()
  with executable.compile_mode_override("sync"):
    out = pyjax.jit(sin_times_two)(_X)
  np.testing.assert_allclose(np.asarray(out), np.sin(_X) * 2, rtol=1e-6)
  return capsys.readouterr().err


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_debug_levels(level, monkeypatch, capsys):
  err = _compile_at(level, monkeypatch, capsys)
  # 1: the compilation, its kernel count and times
  assert ("pyjax: compiled jit(sin_times_two): 1 kernel(s)" in err) == (level >= 1)
  assert ("lowering" in err and "build" in err) == (level >= 1)
  # 2: the jaxpr, as make_jaxpr prints it
  assert ("jaxpr of jit(sin_times_two)" in err) == (level >= 2)
  assert ("b:f32[4] = sin a" in err) == (level >= 2)
  # 3: the simplified program and its fusion groups (sin and mul in one loop kernel)
  assert ("simplified program of jit(sin_times_two)" in err) == (level >= 3)
  assert ("Group0(loop full=(4,) axes=None: ['sin', 'mul'])" in err) == (level >= 3)
  # 4: the program's own C, without the shared prelude or the Python entry points
  assert ("C of jit(sin_times_two)" in err) == (level >= 4)
  assert ("static void pj_k0(" in err) == (level >= 4)
  assert "#include <math.h>" not in err and "pyjax_make" not in err


def test_as_text_puts_the_program_first(monkeypatch):
  monkeypatch.delenv("PYJAX_DEBUG", raising=False)
  f = pyjax.jit(lambda x: jnp.exp(x) + 1)
  with executable.compile_mode_override("sync"):
    lines = f.lower(_X).compile().as_text().splitlines()
  kernel = next(i for i, ln in enumerate(lines) if ln.startswith("static void pj_k0"))
  entries = lines.index("/* Python entry points */")
  prelude = next(i for i, ln in enumerate(lines) if ln.startswith("/* the shared prelude"))
  assert kernel < 20 < entries < prelude
  assert lines.index("#include <math.h>") > prelude
  assert any("exp" in ln for ln in lines[kernel:entries])
