"""The kernel: the compiled bulk path. One compute's physics between two control-plane
events (arrivals, admission, the pooler's queue, the autoscaler's goal, temporary files,
the scale-to-zero countdown), the storage lane, their heaps and layouts, compiled ahead,
and the handover of a compute to and from the SimPy engine. It may import the engine
(whose model it reads and writes at a handover), rules and workload; the engine never
imports it."""

# first: where numba caches the compiled kernels is settled before numba is imported
from sim.kernel import kernel_cache  # noqa: F401
