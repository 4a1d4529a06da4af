"""IFRT program descriptions (``jax.extend.ifrt_programs``).

In JAX these build programs for an IFRT runtime (the XLA client's ``compile_ifrt_program``
-- Pathways / IFRT proxy backends).  pyjax builds the same descriptions as plain,
comparable objects; pyjax's own backends compile jaxprs, not IFRT programs, so nothing in
pyjax executes them: a device's client has no ``compile_ifrt_program`` (AttributeError),
as on a JAX backend without IFRT program support.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any


@dataclasses.dataclass(frozen=True)
class Program:
  """An IFRT program: its kind and contents."""
  kind: str
  contents: Any


@dataclasses.dataclass(frozen=True)
class CompileOptions:
  """Options for compiling an IFRT program of a kind."""
  kind: str
  options: Any = None


def make_hlo_program(mlir_module):
  """A program running an HLO/StableHLO module (text or bytes)."""
  return Program("hlo", mlir_module)


def make_plugin_program(data):
  """A program handled by a runtime plugin; ``data`` is the plugin's program text."""
  if not isinstance(data, (str, bytes)):
    raise TypeError(f"make_plugin_program expects str or bytes, got {type(data).__name__}")
  return Program("plugin", data)


def make_colocated_python_program(name, picked_function, devices, input_avals,
                                  output_avals):
  """A program running a pickled Python function on ``devices``."""
  return Program("colocated_python", (name, picked_function, tuple(devices),
                                      tuple(input_avals), tuple(output_avals)))


def make_xla_compile_options(compile_options=None, executable_devices=None,
                             host_callbacks=()):
  """Compile options for an HLO program."""
  return CompileOptions("xla", (compile_options, executable_devices, tuple(host_callbacks)))


def make_plugin_compile_options():
  """Compile options for a plugin program."""
  return CompileOptions("plugin")


def make_colocated_python_compile_options():
  """Compile options for a colocated Python program."""
  return CompileOptions("colocated_python")


ifrt_programs = types.SimpleNamespace(
    Program=Program, CompileOptions=CompileOptions, make_hlo_program=make_hlo_program,
    make_plugin_program=make_plugin_program,
    make_colocated_python_program=make_colocated_python_program,
    make_xla_compile_options=make_xla_compile_options,
    make_plugin_compile_options=make_plugin_compile_options,
    make_colocated_python_compile_options=make_colocated_python_compile_options)
