"""`python -m benchmarks [name ...]`: run every benchmark script in this folder.

Each `benchmarks/<name>.py` (not starting with "_") is a benchmark and runs in its
own process as `python -m benchmarks.<name>`, so one benchmark's memory and loaded
models do not colour the next. A benchmark added later is picked up without an
edit here. Exits non-zero when any benchmark crashed (never because of a time).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str]) -> int:
    available = discover()
    wanted = argv or available
    unknown = [name for name in wanted if name not in available]
    if unknown:
        print(f"Unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available)}", file=sys.stderr)
        return 2
    failed = []
    for name in wanted:
        print(f"\n=== benchmarks.{name} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"], cwd=HERE.parent)
        print(f"=== benchmarks.{name}: exit {code} after {time.perf_counter() - started:.0f} s ===", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"Benchmarks that crashed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
