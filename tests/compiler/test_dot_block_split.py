"""The fixed split of a large float product (``compiler/kernels/dot.py``'s ``block_size``):
1, 2, 4 or 8 blocks of equal size (multiples of 16, at least 256 rows each, or two blocks of
at least 128 rows for a product of 256 to 511 rows), a function of the shapes alone, shared by both jit tiers (``test_tier_determinism``)."""
from pyjax._src.backends.cpu.compiler.kernels import dot


def _blocks(m, n, k):
  u = max(m, n)
  bs = dot.block_size(m, n, k, 1)
  full, last = divmod(u, bs)
  return [bs] * full + ([last] if last else [])


def test_small_products_are_one_block():
  assert _blocks(128, 10, 512) == [128]
  assert _blocks(16, 16, 512) == [16]          # under 2**18 multiply-adds
  assert dot.block_size(64, 64, 64, 4) == 0    # batched: one call per item


def test_blocks_are_a_power_of_two_of_equal_sizes():
  # the MLP step's weight gradient 784 x 128 x 512: two blocks, not 256+256+256+16
  assert _blocks(784, 512, 128) == [400, 384]
  assert _blocks(128, 512, 784) == [256, 256]
  assert _blocks(1024, 1024, 1024) == [256] * 4
  for u in (300, 511, 512, 767, 1000, 1500, 2048, 3000, 5000, 100000):
    b = _blocks(u, 64, 256)
    assert sum(b) == u and len(b) in (1, 2, 4, 8), (u, b)
    assert all(x % 16 == 0 for x in b[:-1]) and b[0] - b[-1] < 16 * len(b), (u, b)
    assert min(b[:-1] or b) >= (128 if len(b) == 2 else 256) or len(b) == 1, (u, b)
  # a mid-size product runs on two threads (vmap of a 256x256 matvec over 100 vectors)
  assert _blocks(256, 100, 256) == [128, 128]
  assert _blocks(300, 64, 256) == [160, 140]
