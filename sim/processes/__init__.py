"""Everything about other processes: dask clusters and their workers, the fork server
that starts them warm, the preload (compile and import before forking), the allocator
settings, forked chart drawing, and how a process ends. Used by fleet runs, sweeps,
recommendations and the CLI; it runs the simulator but is never imported by it."""
