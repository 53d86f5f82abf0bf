"""Heaps of float rows in a numpy array, for the compute kernel: `heapq`'s own algorithms.

`H[h]` is heap h: rows of three floats, compared as Python compares tuples,
its item count in `sizes[k]`, and its last row a scratch row that holds the
item being placed. `push` and `pop` are `heapq.heappush` and `heapq.heappop`
step for step (sift down from the new leaf; the hole down to a leaf, then
the last item up into it), so a heap holds its items in the very order a
Python list under `heapq` does: the SimPy engine's runtime takes the kernel's
heaps over as they are, and hands its own back.

Compiled without numba's reference counting, to be inlined into the kernel's
helpers, which are too (see `sim.kernel.physics`).
"""

from __future__ import annotations

from sim.kernel.jit import njit

_inline = njit(cache=True, inline="always", _nrt=False)


@_inline
def _less(H, h, a, b):
    """Row a of heap h sorts before row b, as Python compares tuples."""
    for c in range(3):
        if H[h, a, c] != H[h, b, c]:
            return H[h, a, c] < H[h, b, c]
    return False


@_inline
def _move(H, h, src, dst):
    for c in range(3):
        H[h, dst, c] = H[h, src, c]


@_inline
def _sift_down(H, h, start, pos, scratch):
    """heapq._siftdown, the item to place held in row `scratch`."""
    while pos > start:
        parent = (pos - 1) >> 1
        if _less(H, h, scratch, parent):
            _move(H, h, parent, pos)
            pos = parent
            continue
        break
    _move(H, h, scratch, pos)


@_inline
def push(H, h, sizes, k, x0, x1, x2):
    """heapq.heappush of (x0, x1, x2) on heap h, of `sizes[k]` items."""
    scratch = H.shape[1] - 1
    H[h, scratch, 0] = x0
    H[h, scratch, 1] = x1
    H[h, scratch, 2] = x2
    pos = sizes[k]
    sizes[k] = pos + 1
    _sift_down(H, h, 0, pos, scratch)


@_inline
def pop(H, h, sizes, k):
    """heapq.heappop on heap h, of `sizes[k]` items, whose smallest item (row 0) the caller
    has read."""
    end = sizes[k] - 1
    sizes[k] = end
    if end == 0:
        return
    scratch = H.shape[1] - 1
    _move(H, h, end, scratch)
    # heapq._siftup: the hole goes down to a leaf, then the last item sifts up into it
    pos = 0
    child = 1
    while child < end:
        right = child + 1
        if right < end and not _less(H, h, child, right):
            child = right
        _move(H, h, child, pos)
        pos = child
        child = 2 * pos + 1
    _sift_down(H, h, 0, pos, scratch)


__all__ = ["pop", "push"]
