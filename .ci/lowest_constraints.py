"""Print a pip constraints file pinning every direct dependency of memlens (the
`dependencies` of pyproject.toml, plus the extras named as arguments, comma-separated) to the lowest
version its requirement allows: `make test-lowest` installs with it, so a lower bound
that the code does not work with fails a test instead of a user's install."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def lowest_pins(requirements: list[str]) -> list[str]:
    """One pin per package: where two extras both name it (numpy for the agent's
    embedded extra and for the app), the higher lower bound, which both allow."""
    pins: dict[str, tuple[str, str]] = {}
    for requirement in requirements:
        found = re.match(r"^([A-Za-z0-9_.-]+)(\[[^]]*\])?\s*(>=|==)\s*([^,;\s]+)", requirement)
        if found and not found.group(1).startswith("memlens"):
            name, version = found.group(1), found.group(4)
            known = pins.get(name.lower())
            if known is None or _release(version) > _release(known[1]):
                pins[name.lower()] = (name, version)
    return [f"{name}=={version}" for name, version in pins.values()]


def main(extras: list[str]) -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in (name for arg in extras for name in arg.split(",") if name):
        requirements += project["optional-dependencies"][extra]
    print("\n".join(lowest_pins(requirements)))


if __name__ == "__main__":
    main(sys.argv[1:])
