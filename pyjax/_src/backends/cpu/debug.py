"""``PYJAX_DEBUG``: what the CPU backend tells on stderr while it compiles (as tinygrad's
``DEBUG=``; each level includes the ones below it):

1. every compilation: kernel and segment counts, NumPy steps, lowering and build times
   (and eager native kernels that fail to build);
2. the jaxpr of every jitted program, when its executable is made;
3. the simplified program (the compiler's IR) and its fusion groups;
4. the program's own C (its kernels, segment runners and entry table), without the
   shared prelude every translation unit starts with.

The variable is read at each compilation, so it can be set while a process runs.
"""
from __future__ import annotations

import os
import sys


def level():
  """The current ``PYJAX_DEBUG`` level (0 when unset; a non-numeric true value is 1)."""
  v = os.environ.get("PYJAX_DEBUG", "").strip()
  if not v:
    return 0
  try:
    return int(v)
  except ValueError:
    return 0 if v.lower() in ("false", "no", "off") else 1


def log(min_level, text):
  """Print ``text`` on stderr when the level is at least ``min_level``."""
  if level() >= min_level:
    print(text, file=sys.stderr, flush=True)
