"""Golden data of the tests (``tests/data/``): values recorded from real JAX or taken from a
specification, for the known-answer tests that need no JAX."""
import functools
import json
import pathlib

DATA = pathlib.Path(__file__).resolve().parent / "data"


def _tuples(x):
  return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


@functools.cache
def prng():
  """``tests/data/prng_golden.json``: ``jax_random`` as {mode: {case: value}} with each case
  a tuple (shapes in it tuples too), in the file's order; ``threefry2x32`` as
  (key, counter, expected) pairs of ints; ``rng_bit_generator`` as {(algorithm, shape):
  (new key, bits)}."""
  with open(DATA / "prng_golden.json") as f:
    d = json.load(f)
  return {
      "jax_random": {tag: {_tuples(case): value for case, value in cases}
                     for tag, cases in d["jax_random"].items()},
      "threefry2x32": [tuple(tuple(int(v, 16) for v in part) for part in c)
                       for c in d["threefry2x32"]],
      "rng_bit_generator": {(alg, tuple(shape)): (key, bits)
                            for alg, shape, key, bits in d["rng_bit_generator"]},
  }
