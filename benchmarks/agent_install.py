"""What `pip install memlens` costs an agent: the plain install's size, and the start-up
time of `import memlens` against `import json` (the baseline: an interpreter that
imports one standard-library module), both in a fresh virtual environment holding the
wheel built from this checkout and nothing else.

- Size: the files memlens installs (its RECORD), and the whole site-packages beside
  the fresh environment's own pip and setuptools.
- Time: `python -c "import memlens"` and `python -c "import json"` as whole processes,
  40 of each, alternated, so load from other work falls on both alike; medians.

Target: the plain install at most 60 MB in all (issue: no Streamlit, pandas, torch ...).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT, exit_code, median, report, table

RUNS = 40
LIMIT_MB = 60


def _mb(paths) -> float:
    return sum(p.stat().st_size for p in paths if p.is_file()) / 2**20


def main() -> int:
    # The fresh environment must see only what it installed: not a checkout on PYTHONPATH.
    os.environ.pop("PYTHONPATH", None)
    folder = Path(tempfile.mkdtemp(prefix="memlens-bench-install-"))
    # Built from a copy: setuptools leaves build/ and an egg-info where it builds.
    source = folder / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "tests", "benchmarks", "docs"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder), str(source)], check=True)
    (wheel,) = folder.glob("memlens-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(folder / "venv")], check=True)
    python = folder / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    (record,) = site.glob("memlens-*.dist-info/RECORD")
    own = [site / line.split(",")[0] for line in record.read_text().splitlines() if line]
    own_mb, all_mb = _mb(own), _mb(site.rglob("*"))
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True).stdout.split()
    times: dict[str, list[float]] = {"import json (baseline)": [], "import memlens": []}
    for _ in range(RUNS):
        for label in times:
            started = time.perf_counter()
            subprocess.run([str(python), "-c", label.split(" (")[0]], check=True, cwd=folder)
            times[label].append((time.perf_counter() - started) * 1000)
    base = median(times["import json (baseline)"])
    rows = [[label, f"{median(values):.1f}", f"{median(values) - base:+.1f}", f"{median(values) / base:.2f}x"] for label, values in times.items()]
    body = (
        f"The wheel of this checkout ({wheel.stat().st_size / 2**10:,.0f} KiB) in a fresh virtual environment; "
        f"`pip list`: {', '.join(listed)}.\n\n"
        + table(["installed", "MB"], [["memlens's own files (RECORD)", f"{own_mb:.1f}"], ["site-packages in all (pip, setuptools included)", f"{all_mb:.1f}"]])
        + f"\n\n{RUNS} whole processes of each, alternated; median milliseconds.\n\n"
        + table(["python -c", "median ms", "added ms", "vs baseline"], rows)
        + f"\n\nTarget: the plain install at most {LIMIT_MB} MB in all: {all_mb:.1f} MB ({'met' if all_mb <= LIMIT_MB else 'NOT met'})."
    )
    report("agent_install: pip install memlens, its size and import memlens vs import json", body)
    return exit_code([] if all_mb <= LIMIT_MB else [f"the plain install is {all_mb:.1f} MB"])


if __name__ == "__main__":
    sys.exit(main())
