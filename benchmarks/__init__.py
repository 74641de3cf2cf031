"""Speed benchmarks: each module prints a table and appends it to RESULTS.md.

Run all of them with `python -m benchmarks` (or `make bench`), one with
`python -m benchmarks.<name>`. None of them asserts a time.
"""
