"""``python -m pyjax``: run unmodified JAX programs on pyjax.

    python -m pyjax run script.py [args...]     run a script with `jax` aliased to pyjax
    python -m pyjax run -m module [args...]     the same for a module (e.g. -m pytest)
    python -m pyjax install-pth                 add the PYJAX_AS_JAX=1 start-up hook
    python -m pyjax uninstall-pth               remove it
"""
import sys

from pyjax._src import jax_alias


def main(argv=None):
  argv = list(sys.argv[1:] if argv is None else argv)
  cmd = argv[0] if argv else ""
  if cmd == "run":
    return jax_alias.run(argv[1:])
  if cmd == "install-pth":
    print(jax_alias.install_pth())
    return 0
  if cmd == "uninstall-pth":
    path = jax_alias.uninstall_pth()
    print(path if path else "no start-up hook was installed")
    return 0
  print(__doc__.strip(), file=sys.stderr)
  return 2


if __name__ == "__main__":
  sys.exit(main())
