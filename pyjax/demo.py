"""``python -m pyjax.demo``: pyjax running the seeds' workflows end to end on real data.

1. image restoration: scikit-image's cat photograph, noise, jitted blur + sharpen
   (``examples/image_restoration.py``);
2. linear regression with explicit state and a jitted SGD step
   (``examples/linear_regression.py``);
3. an MLP on scikit-learn's handwritten digits with jit(value_and_grad), Adam on pytrees,
   random.permutation minibatches and vmap (``examples/digits_mlp.py``);
4. the quickstart measurements, timed against NumPy and JAX (``examples/quickstart.py``).

The workflows are the standalone scripts in the repository's ``examples/`` folder; this
module runs them one after another and writes their files to ``--out``.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys
import time

WORKFLOWS = ("image_restoration", "linear_regression", "digits_mlp", "quickstart")


def examples_dir():
  """The ``examples/`` folder of the checkout pyjax is installed from (``pip install -e``)."""
  here = pathlib.Path(__file__).resolve().parent.parent / "examples"
  return here if (here / "quickstart.py").exists() else None


def load_example(name):
  folder = examples_dir()
  if folder is None:
    raise FileNotFoundError(
        "pyjax.demo runs the scripts in the repository's examples/ folder; install pyjax "
        "from a checkout with `python -m pip install -e \".[demo]\"`.")
  spec = importlib.util.spec_from_file_location(f"pyjax_examples.{name}", folder / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--out", default="pyjax-demo-output", help="directory for output files")
  p.add_argument("--quick", action="store_true", help="smaller, faster run (CI)")
  p.add_argument("--only", choices=WORKFLOWS, action="append",
                 help="run only this workflow (repeatable)")
  args = p.parse_args(argv)
  import pyjax
  out = os.path.abspath(args.out)
  os.makedirs(out, exist_ok=True)
  print(f"pyjax {pyjax.__version__} on {pyjax.devices()}; output files go to {out}")
  results = {}
  start = time.perf_counter()
  for i, name in enumerate(args.only or WORKFLOWS, 1):
    print(f"\n[{i}] ", end="")
    t0 = time.perf_counter()
    results[name] = load_example(name).run(
        out, quick=args.quick, log=print,
        **({"progress": sys.stderr.isatty()} if name == "digits_mlp" else {}))
    print(f"  ({time.perf_counter() - t0:.1f} s)")
  print(f"\ndemo finished in {time.perf_counter() - start:.1f} s; files in {out}")
  return results


if __name__ == "__main__":
  main()
