"""Run unmodified JAX code on pyjax: make ``import jax`` (and ``jax.*``) resolve to pyjax.

``install_as_jax()`` puts a finder at the front of ``sys.meta_path`` that answers every
import of ``jax`` or ``jax.<path>`` with the module ``pyjax`` or ``pyjax.<path>`` -- the
same module object, so ``jax.numpy is pyjax.numpy``. A ``jax.<path>`` that has no
``pyjax.<path>`` fails as a missing module does (``ModuleNotFoundError`` naming
``jax.<path>``), so libraries that probe optional JAX modules with ``try: import`` see it
as absent.

Three ways in, for code that can and cannot be edited:

* ``pyjax.install_as_jax()`` in the program, before anything imports ``jax``;
* ``python -m pyjax run script.py args...`` or ``python -m pyjax run -m module args...``
  (e.g. ``-m pytest``), which installs the alias and then runs the script or module as
  ``__main__``;
* the environment variable ``PYJAX_AS_JAX=1`` once ``python -m pyjax install-pth`` has put
  the small ``pyjax_as_jax.pth`` start-up hook into site-packages (``uninstall-pth``
  removes it); the hook imports nothing unless the variable is set.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_ALIASES = {"jax": "pyjax"}
_PTH_NAME = "pyjax_as_jax.pth"
_PTH_LINE = ("import os, sys; os.environ.get('PYJAX_AS_JAX', '').strip().lower() in "
             "('1', 'true', 'yes', 'on') and __import__('pyjax._src.jax_alias', "
             "fromlist=['_']).install_from_env()\n")


def _target(fullname):
  """The pyjax module name answering the import of ``fullname``, or None."""
  head, sep, rest = fullname.partition(".")
  real = _ALIASES.get(head)
  if real is None:
    return None
  return real + sep + rest


class _AliasLoader(importlib.abc.Loader):
  """Loads ``jax.<path>`` by importing ``pyjax.<path>`` and binding it under both names."""

  def __init__(self, target):
    self.target = target

  def create_module(self, spec):
    return None  # a throwaway module; exec_module replaces it in sys.modules

  def exec_module(self, module):
    real = importlib.import_module(self.target)
    # The import system returns whatever sys.modules holds under the name after
    # exec_module, so the alias and the pyjax module are one object.
    sys.modules[module.__spec__.name] = real


class JaxAliasFinder(importlib.abc.MetaPathFinder):
  """Meta-path finder answering ``jax`` / ``jax.*`` with ``pyjax`` / ``pyjax.*``."""

  def find_spec(self, fullname, path=None, target=None):
    real = _target(fullname)
    if real is None:
      return None
    if real in sys.modules:
      found = True
    else:
      try:
        found = importlib.util.find_spec(real) is not None
      except ModuleNotFoundError:
        found = False
    if not found:
      # No pyjax counterpart: the import fails as for a missing module, rather than
      # falling through to a real jax installation (which would mix the two).
      raise ModuleNotFoundError(
          f"No module named '{fullname}' (pyjax has no '{real}'; `jax` is aliased to "
          "pyjax by pyjax.install_as_jax())", name=fullname)
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))


_FINDER = None
_ALIASED_LOGGERS = []   # (JAX name, pyjax name) of the loggers install_as_jax bound


def is_installed():
  """Whether ``install_as_jax()`` is in effect in this process."""
  return _FINDER is not None and _FINDER in sys.meta_path


def install_as_jax():
  """Make ``import jax`` and ``import jax.<path>`` resolve to pyjax's modules.

  Like PyMySQL's ``install_as_MySQLdb()``. Raises ``ImportError`` if a real ``jax`` is
  already imported in this process (the two cannot be mixed). Calling it again is a no-op.
  """
  global _FINDER
  loaded = sys.modules.get("jax")
  import pyjax  # noqa: F401  (the package the alias names must be importable)
  if loaded is not None and loaded is not sys.modules["pyjax"]:
    raise ImportError(
        "pyjax.install_as_jax() must run before `jax` is imported: the real jax "
        f"({getattr(loaded, '__file__', loaded)!r}) is already loaded in this process")
  if is_installed():
    return
  _FINDER = JaxAliasFinder()
  sys.meta_path.insert(0, _FINDER)
  # Libraries choose code paths by `jax.__version_info__` (flax, equinox: "JAX >= 0.5.1
  # has the new signature"); aliased, the package reports the JAX release whose API pyjax
  # implements (pyjax's own number stays in `pyjax.version`).
  from pyjax._src import version as _version
  pkg = sys.modules["pyjax"]
  pkg.__version__ = _version._jax_version
  pkg.__version_info__ = _version._jax_version_info
  # Modules pyjax has already imported are bound under their jax names at once, so a
  # later `import jax.numpy` finds them without going through the finder.
  for name, mod in list(sys.modules.items()):
    if name == "pyjax" or name.startswith("pyjax."):
      sys.modules.setdefault("jax" + name[len("pyjax"):], mod)
  _alias_loggers()


def _alias_loggers():
  """Bind pyjax's loggers under their JAX names, as the modules are, and let their records
  carry those names, so that ``logging.getLogger("jax._src.callback")`` is pyjax's callback
  logger and its records say ``jax._src.callback``: libraries filter JAX's loggers by name
  (equinox's ``filter_jit`` drops the "jax.pure_callback failed" record of its own runtime
  errors by its logger and record name).  Only names nobody has taken yet."""
  import logging
  manager = logging.Logger.manager
  with _logging_lock():
    for name, lg in list(manager.loggerDict.items()):
      if isinstance(lg, logging.Logger) and name.startswith("pyjax._src."):
        alias = "jax" + name[len("pyjax"):]
        if alias not in manager.loggerDict:
          manager.loggerDict[alias] = lg
          lg.name = alias
          _ALIASED_LOGGERS.append((alias, name))


def _logging_lock():
  import logging
  lock = getattr(logging, "_lock", None)
  return lock if lock is not None else contextlib.nullcontext()


def uninstall_as_jax():
  """Undo ``install_as_jax()``: remove the finder and the ``jax`` names it bound."""
  global _FINDER
  if _FINDER is not None and _FINDER in sys.meta_path:
    sys.meta_path.remove(_FINDER)
  _FINDER = None
  pkg = sys.modules.get("pyjax")
  if pkg is not None:
    from pyjax._src import version as _version
    pkg.__version__ = _version.__version__
    pkg.__version_info__ = _version.__version_info__
  for name in [n for n in sys.modules if n == "jax" or n.startswith("jax.")]:
    mod = sys.modules[name]
    if getattr(mod, "__name__", "").split(".")[0] == "pyjax":
      del sys.modules[name]
  import logging
  with _logging_lock():
    for alias, name in _ALIASED_LOGGERS:
      lg = logging.Logger.manager.loggerDict.get(name)
      if isinstance(lg, logging.Logger) and logging.Logger.manager.loggerDict.get(alias) is lg:
        del logging.Logger.manager.loggerDict[alias]
        lg.name = name
    _ALIASED_LOGGERS.clear()


def install_from_env():
  """Start-up hook of ``pyjax_as_jax.pth``: alias ``jax`` when ``PYJAX_AS_JAX`` is set."""
  try:
    install_as_jax()
  except ImportError as e:  # a start-up hook must never stop the interpreter
    print(f"pyjax: PYJAX_AS_JAX is set but {e}", file=sys.stderr)


def _site_packages():
  import sysconfig
  return sysconfig.get_paths()["purelib"]


def install_pth(directory=None):
  """Write the ``PYJAX_AS_JAX`` start-up hook into site-packages; returns its path."""
  path = os.path.join(directory or _site_packages(), _PTH_NAME)
  tmp = path + f".tmp{os.getpid()}"
  with open(tmp, "w") as f:
    f.write(_PTH_LINE)
  os.replace(tmp, path)
  return path


def uninstall_pth(directory=None):
  """Remove the start-up hook; returns its path, or None if it was not there."""
  path = os.path.join(directory or _site_packages(), _PTH_NAME)
  try:
    os.remove(path)
  except FileNotFoundError:
    return None
  return path


def run(argv):
  """``python -m pyjax run script.py args...`` / ``run -m module args...``."""
  import runpy
  if not argv:
    raise SystemExit("usage: python -m pyjax run (script.py | -m module) [args...]")
  install_as_jax()
  if argv[0] == "-m":
    if len(argv) < 2:
      raise SystemExit("usage: python -m pyjax run -m module [args...]")
    sys.argv = [argv[1]] + list(argv[2:])
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  else:
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
