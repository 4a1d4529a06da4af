"""`jax` aliased to pyjax: install_as_jax(), `python -m pyjax run`, the PYJAX_AS_JAX hook.

Each case runs in a fresh interpreter: the alias changes the process's import system.
"""
import os
import subprocess
import sys
import textwrap

import pytest


def _run_code(code, env=None):
  r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                     text=True, env={**{k: v for k, v in os.environ.items()
                                        if k != "PYJAX_AS_JAX"}, **(env or {})}, timeout=120)
  return r


def test_install_as_jax_binds_the_same_modules():
  r = _run_code("""
    import sys, pyjax
    pyjax.install_as_jax()
    import jax, jax.numpy as jnp
    from jax import lax, random
    import jax.scipy.special
    assert jax is pyjax and jnp is pyjax.numpy and lax is pyjax.lax
    assert jax.scipy.special is sys.modules['pyjax.scipy.special']
    print(jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(2)).dtype)
    try:
      import jax.no_such_module
    except ModuleNotFoundError as e:
      print('missing', e.name)
    pyjax.install_as_jax()   # again: a no-op
    print(sum(type(f).__name__ == 'JaxAliasFinder' for f in sys.meta_path))
  """)
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["float32", "missing", "jax.no_such_module", "1"]


def test_install_after_real_jax_is_an_import_error():
  pytest.importorskip("jax")
  r = _run_code("""
    import jax, pyjax
    try:
      pyjax.install_as_jax()
    except ImportError as e:
      print('ImportError', 'already loaded' in str(e))
  """)
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["ImportError", "True"]


def test_uninstall_restores_the_import_system():
  r = _run_code("""
    import sys, pyjax
    from pyjax._src import jax_alias
    pyjax.install_as_jax(); import jax.numpy
    jax_alias.uninstall_as_jax()
    print(jax_alias.is_installed(), any(n == 'jax' or n.startswith('jax.') for n in sys.modules))
  """)
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["False", "False"]


def test_python_m_pyjax_run_script_and_module(tmp_path):
  script = tmp_path / "prog.py"
  script.write_text(textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp
    print(jax.__name__, sys.argv[1:], __name__)
    print(float(jax.grad(lambda x: jnp.sum(x ** 2))(jnp.arange(3.0))[2]))
  """))
  (tmp_path / "progmod.py").write_text("import jax\nprint('mod', jax.__name__)\n")
  r = subprocess.run([sys.executable, "-m", "pyjax", "run", str(script), "a", "--b"],
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.splitlines() == ["pyjax ['a', '--b'] __main__", "4.0"]
  r = subprocess.run([sys.executable, "-m", "pyjax", "run", "-m", "progmod"], cwd=tmp_path,
                     capture_output=True, text=True, timeout=120,
                     env={**os.environ, "PYTHONPATH": str(tmp_path)})
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "mod pyjax"
  r = subprocess.run([sys.executable, "-m", "pyjax", "bogus"], capture_output=True,
                     text=True, timeout=120)
  assert r.returncode == 2 and "python -m pyjax run" in r.stderr


def test_pth_hook_honours_the_environment_variable(tmp_path):
  from pyjax._src import jax_alias
  path = jax_alias.install_pth(str(tmp_path))
  assert os.path.basename(path) == "pyjax_as_jax.pth"
  # site.addsitedir processes .pth files as site-packages would at start-up.
  code = (f"import site; site.addsitedir({str(tmp_path)!r}); import sys; "
          "print('jax' in sys.modules and sys.modules['jax'].__name__)")
  on = _run_code(code, env={"PYJAX_AS_JAX": "1"})
  off = _run_code(code)
  assert on.returncode == 0 and off.returncode == 0, (on.stderr, off.stderr)
  assert on.stdout.strip() == "pyjax"
  assert off.stdout.strip() == "False"
  assert jax_alias.uninstall_pth(str(tmp_path)) == path
  assert jax_alias.uninstall_pth(str(tmp_path)) is None
