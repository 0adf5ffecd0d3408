"""Benchmarks: scripts that measure speed and quality; results go in BENCHMARKS.md."""
