"""bitsift's benchmarks: the standard workloads of shared/BENCHMARKS.md, run with ``make bench``."""
