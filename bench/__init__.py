"""MAD Lab's benchmarks: ``python -m bench`` (or ``bench/run.py``) runs them and writes BENCHMARKS.md."""
