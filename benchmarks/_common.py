"""What every benchmark shares: the machine line, a table printer, RESULTS.md.

Not a benchmark itself (the leading underscore keeps `python -m benchmarks` from
running it).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
PYTHON = sys.executable

# Offline by construction, in this process and every child it starts.
for _name, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("MEM0_TELEMETRY", "False"),
    ("ANONYMIZED_TELEMETRY", "False"),
):
    os.environ.setdefault(_name, _value)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def machine() -> str:
    """CPU model, cores and RAM, read from /proc so no extra package is needed."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    try:
        load = "load avg {:.2f}/{:.2f}/{:.2f} at start".format(*os.getloadavg())
    except OSError:
        load = ""
    return f"{cpu}, {os.cpu_count()} cores, {ram}, Python {platform.python_version()}, {load}"


def rss_mib() -> float:
    """Resident memory of this process now (VmRSS), MiB."""
    return _status_kib("VmRSS") / 1024


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (VmHWM), MiB."""
    return _status_kib("VmHWM") / 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def timed(fn, repeat: int, warmup: int = 1) -> list[float]:
    """Wall times of `fn()` in milliseconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def rows_per_second_table(
    cases: Sequence[tuple[str, Callable[[], object]]],
    rows: int,
    repeat: int,
    first: str,
    ratio: str,
    seconds: dict[str, list[float]] | None = None,
) -> str:
    """Each case timed `repeat` times (median seconds) and tabled with its rows per
    second and its time against the first case, the baseline (column `ratio`).
    The runs are interleaved (every case once, then again), so a burst of load from
    other work on the machine falls on all the cases alike, not on one of them.
    `seconds`, when given, receives each case's times by label, round by round."""
    runs: dict[str, list[float]] = {label: [] for label, _ in cases}
    for _ in range(repeat):
        for label, fn in cases:
            runs[label] += timed(fn, repeat=1, warmup=0)
    timings = {label: median(times) / 1000 for label, times in runs.items()}
    if seconds is not None:
        seconds.update({label: [ms / 1000 for ms in times] for label, times in runs.items()})
    base = timings[cases[0][0]]
    return table(
        [first, "rows", "median s", "rows/s", ratio],
        [[label, f"{rows:,}", seconds, f"{rows / seconds:,.0f}", f"{seconds / base:.2f}x"] for label, seconds in timings.items()],
    )


def exit_code(problems: Sequence[str]) -> int:
    """1 when a benchmark's results were wrong (each said on stderr), else 0."""
    for problem in problems:
        print(f"WRONG RESULT: {problem}", file=sys.stderr)
    return 1 if problems else 0


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (it reads fine in a terminal too)."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def report(title: str, body: str) -> None:
    """Print one benchmark's section and append it to RESULTS.md with the date and
    the machine it ran on."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    section = f"\n## {title} — {stamp}\n\nMachine: {machine()}" + (f"; commit {commit}" if commit else "") + f"\n\n{body.strip()}\n"
    print(section)
    if not RESULTS.exists():
        RESULTS.write_text(HEADER)
    with RESULTS.open("a", encoding="utf-8") as out:
        out.write(section)


HEADER = """# Benchmark results

Every section below was appended by one run of a script in `benchmarks/`
(`python -m benchmarks` runs them all, `python -m benchmarks.<name>` one). Each
names the date, the machine, the commit, and the baseline it was measured against
in the same run. Append; never edit old sections. Times are wall-clock on a
machine shared with other work, so compare a figure with the baseline beside it,
not with a figure from another day.
"""
