"""The CPU compiler's primitive table (compiler/primitive_table.py): every primitive is
classified there, the table agrees with the lowering rules and native kernels that exist,
and every primitive has an eager implementation."""
from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest

import pyjax
from pyjax._src import core
from pyjax._src.backends.cpu import eager
from pyjax._src.backends.cpu.compiler import opaque, primitive_table as table
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c


def _registered():
  """name -> Primitive of every primitive a pyjax module defines (every public module
  imported first; hijax primitives are lowered to ordinary ones when staged)."""
  from pyjax._src.hijax import HiPrimitive
  for mi in pkgutil.walk_packages(pyjax.__path__, "pyjax."):
    if "._src" not in mi.name:
      importlib.import_module(mi.name)
  prims = {}
  for name, mod in list(sys.modules.items()):
    if name == "pyjax" or name.startswith("pyjax."):
      for v in list(vars(mod).values()):
        if isinstance(v, core.Primitive) and not isinstance(v, HiPrimitive):
          prims[v.name] = v
  return prims


@pytest.fixture(scope="module")
def registered():
  return _registered()


def test_every_primitive_is_classified_for_the_compiler(registered):
  missing = sorted(n for n in registered if n not in table.ROWS)
  assert not missing, f"primitives with no row in compiler/primitive_table.py: {missing}"
  stale = sorted(n for n, r in table.ROWS.items()
                 if n not in registered and "internal" not in r.attributes)
  assert not stale, f"rows naming no registered primitive (mark them internal?): {stale}"
  internal = sorted(n for n in table.names(attribute="internal") if n in registered)
  assert not internal, f"registered primitives marked internal: {internal}"


def test_every_primitive_has_an_eager_implementation(registered):
  # a backend implementation (keyed by name) or a Python-level one (higher-order
  # primitives, collectives interpreted by shard_map)
  missing = sorted(n for n, p in registered.items() if n not in eager.impls and p.impl is None)
  assert not missing, missing


def test_table_agrees_with_lowering_rules_and_kernels():
  assert set(elementwise_c.RULES) == table.C_EXPRESSIONS
  opaque._load()
  kernels = set(opaque._REGISTRY)
  assert kernels <= table.names("kernel") | table.names("dot")
  assert table.names("kernel") <= kernels
  # attributes only where they mean something
  ew_only = table.LIBM | table.FLOAT_ONLY | table.INT_ONLY | table.NO_HALF | table.ROUND_HALF
  assert ew_only <= table.C_EXPRESSIONS
  assert table.INEXACT <= table.ROUND_HALF
  assert table.ORDERED_REDUCTIONS <= table.REDUCE
  assert set(table.INLINE_CALLS) == table.names("inline")
  assert all(table.INLINE_CALLS.values())


def test_stage_sets_are_the_tables():
  from pyjax._src.backends.cpu.numpy_tier import native as tier_native
  from pyjax._src.backends.cpu.compiler import fusion, ir, simplify
  from pyjax._src.backends.cpu.compiler.kernels import control_flow
  assert simplify.ELEMENTWISE is table.SCALAR_OPERANDS
  assert fusion.LAYOUT_PRIMS is table.LAYOUT and fusion.REDUCE_PRIMS is table.REDUCE
  assert control_flow.CONTROL_PRIMS is table.CONTROL and ir._INLINE_CALLS is table.INLINE_CALLS
  assert tier_native.PRIMS is table.INEXACT
  # what the rows say: sin is a libm call, never recomputed per consumer, inexact
  r = table.row("sin")
  assert r.kind == "ew" and {"libm", "expensive", "inexact", "float"} <= r.attributes
  assert table.row("reduce_sum").kind == "reduce" and table.row("made_up") is None


def test_malformed_rows_are_rejected():
  with pytest.raises(ValueError, match="unknown kind 'elementwise' of foo"):
    table._parse("foo elementwise")
  with pytest.raises(ValueError, match="unknown attribute 'fast' of foo"):
    table._parse("foo ew fast")
  with pytest.raises(ValueError, match="foo has two rows"):
    table._parse("foo ew\nfoo host")
