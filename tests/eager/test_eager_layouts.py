"""``eager_native._row_broadcast``, the shortcut for row-broadcast operands, gives the
general layout merge's answer (or declines)."""
import numpy as np
import pytest

from pyjax._src.backends.cpu.eager import native as en


@pytest.mark.parametrize("shape,shapes,applies", [
    ((10000, 10), [(10000, 10), (1, 10)], True), ((10000, 10), [(1, 10), (10000, 10)], True),
    ((100, 100, 10), [(100, 100, 10), (1, 1, 10)], True),
    ((100, 100, 10), [(100, 100, 10), (1, 100, 10)], True),
    ((10000, 10), [(1, 10), ()], True),
    ((100, 100, 10), [(1, 1, 10), (1, 100, 10)], False),   # two different k
    ((100, 1, 10), [(100, 1, 10), (1, 1, 10)], False),     # a size-1 output dimension
    ((1000, 4), [(1000, 4), (1, 4)], False),               # rows shorter than MIN_ROW
    ((300, 300), [(300, 300), (300, 1)], False)])          # a column: not a row
def test_row_broadcast_matches_general_layout(monkeypatch, shape, shapes, applies):
  bufs = [np.zeros(s, np.float32) for s in shapes]
  fast = en._row_broadcast(shape, bufs)
  monkeypatch.setattr(en, "_row_broadcast", lambda *a: None)
  general = en._layout(shape, bufs)
  assert (fast is not None) == applies
  if fast is None:
    return
  assert general is not None
  norm = lambda lay: (lay[0], lay[1], list(lay[3]), list(lay[4]), lay[5])  # noqa: E731
  assert norm(fast) == norm(general)


def test_row_broadcast_declines_misaligned():
  raw = np.zeros(10 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(1, 10)
  assert not raw.flags.aligned
  assert en._row_broadcast((100, 10), [np.zeros((100, 10), np.float32), raw]) is None
