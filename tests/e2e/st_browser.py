"""Driving a Streamlit page the way a reviewer does, through the DOM Streamlit renders.

Keyed widgets sit in a container with the CSS class ``st-key-<key>``: those are the
selectors used here, with Streamlit's ``data-testid`` values for unkeyed elements.
A data frame is drawn on a canvas; its cells are read from the accessible table
Streamlit's grid renders beside the canvas for screen readers.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import Locator, Page, expect

# The first query waits for the embedding model, which a busy machine loads slowly.
FIRST_RESULT_TIMEOUT_MS = 240_000


def wait_idle(page: Page, timeout: float = 60_000) -> None:
    """Wait until the app is connected and no script run is in progress."""
    page.wait_for_selector(
        "[data-testid=stApp][data-test-connection-state=CONNECTED][data-test-script-state=notRunning]",
        timeout=timeout,
    )
    page.wait_for_timeout(250)  # a rerun triggered by the last event may just be starting
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout)


def open_app(page: Page, path: str = "", params: dict[str, str] | None = None) -> None:
    # The `page` fixture (conftest.py) pins the server's address on the Page itself:
    # Playwright's Page type has no such attribute, hence the one ignore.
    url = page.base_url + "/" + path.lstrip("/")  # type: ignore[attr-defined]
    if params:
        url += "?" + urlencode(params)
    page.goto(url)
    wait_idle(page, timeout=FIRST_RESULT_TIMEOUT_MS)


def widget(page: Page, key: str) -> Locator:
    return page.locator("." + key_class(key))


def ask(page: Page, query: str) -> None:
    """Type the message and press Enter (the form's submit), then wait for the table."""
    box = widget(page, "query").locator("input")
    box.fill(query)
    box.press("Enter")
    expect(page.get_by_test_id("stCode").first).to_be_visible(timeout=FIRST_RESULT_TIMEOUT_MS)
    wait_idle(page, timeout=FIRST_RESULT_TIMEOUT_MS)


def table_rows(scope: Page | Locator, index: int = 0) -> list[dict[str, str]]:
    """The rows of the index-th data frame in `scope` (the page, or a part of it), as
    header -> cell text, read from the grid's accessible table (it holds the rows and
    columns currently in view)."""
    return grid_rows(scope.get_by_test_id("stDataFrame").nth(index))


def grid_rows(grid: Locator) -> list[dict[str, str]]:
    grid.scroll_into_view_if_needed()  # the grid draws its cells only once in view
    expect(grid.locator("table [role=gridcell]").first).to_be_attached()
    headers = grid.locator("table thead [role=columnheader]").all_inner_texts()
    rows = []
    for row in grid.locator("table tbody [role=row]").all():
        cells = row.locator("[role=gridcell]").all_inner_texts()
        rows.append(dict(zip(headers, cells, strict=True)))
    return rows


def grid_with_column(page: Page, column: str, timeout_s: float = 20.0) -> Locator:
    """The data frame with this column header (a keyed data frame gets no st-key
    class). Each grid is scrolled into view first, since only then is it drawn; a
    grid that has just appeared may draw its headers a moment later, so look again
    until `timeout_s` has passed."""
    import time

    deadline = time.monotonic() + timeout_s
    seen: list[list[str]] = []
    while True:
        seen = []
        for grid in page.get_by_test_id("stDataFrame").all():
            grid.scroll_into_view_if_needed()
            expect(grid.locator("table thead [role=columnheader]").first).to_be_attached()
            headers = grid.locator("table thead [role=columnheader]").all_inner_texts()
            if column in headers:
                return grid
            seen.append(headers)
        if time.monotonic() > deadline:
            raise AssertionError(f"no table with a {column!r} column on the page; tables seen: {seen}")
        page.wait_for_timeout(500)


def slider_value(page: Page, key: str) -> str:
    return widget(page, key).locator("input[type=range]").get_attribute("aria-valuetext") or ""


def move_slider(page: Page, key: str, steps: int) -> None:
    """Put the focus on the slider's thumb (as Tab does) and press an arrow key
    `steps` times (negative: left), as a keyboard user would."""
    widget(page, key).locator("input[type=range]").focus()
    key_name = "ArrowRight" if steps > 0 else "ArrowLeft"
    for _ in range(abs(steps)):
        page.keyboard.press(key_name)
    wait_idle(page)


def code_blocks(page: Page) -> list[str]:
    return page.get_by_test_id("stCode").all_inner_texts()


def key_class(key: str) -> str:
    """The CSS class Streamlit gives a keyed widget's container (it replaces every
    character outside [a-zA-Z0-9_-] with a dash)."""
    return "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def screenshot(page: Page, path: Path, *, full_page: bool = True, height: int | None = None) -> None:
    """The whole page, not just the viewport: Streamlit scrolls inside its main
    section, so the viewport is stretched to that section's height for the shot.
    `height` keeps only the top of it (for the README); `full_page=False` the viewport."""
    wait_idle(page)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not full_page:
        page.screenshot(path=str(path))
        return
    viewport = page.viewport_size
    assert viewport is not None  # the contexts here are opened with one
    content = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stSidebarContent]')]"
        ".map(e => e.scrollHeight))"
    )
    page.set_viewport_size({"width": viewport["width"], "height": max(viewport["height"], int(content) + 40)})
    page.wait_for_timeout(500)  # let charts and the grid re-layout to the new size
    if height:
        page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": viewport["width"], "height": height})
    else:
        page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(viewport)


def copy_new_screenshots(source: Path, target: Path, since: float) -> list[Path]:
    """The PNGs written in `source` at or after `since`, copied into `target` (a shot
    left over from an earlier run is not copied over a newer committed one)."""
    copied = []
    for shot in sorted(source.glob("*.png")):
        if shot.stat().st_mtime >= since:
            copied.append(Path(shutil.copy2(shot, target / shot.name)))
    return copied


def choose(page: Page, key: str, option: str) -> None:
    """Pick `option` in the keyed selectbox: open it, click the option.

    The box is first scrolled to the middle of its pane, as a person scrolls to it:
    a box at the very bottom edge of the window (the sidebar's End user, below the
    store settings) only takes focus on a click, its list never opening."""
    widget(page, key).evaluate("element => element.scrollIntoView({block: 'center'})")
    widget(page, key).get_by_role("combobox").click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page)


def go_to(page: Page, title: str) -> None:
    """Follow a page's link in the sidebar navigation (the session is kept)."""
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    wait_idle(page, timeout=FIRST_RESULT_TIMEOUT_MS)


def chart_count(page: Page, key: str) -> int:
    """How many drawn plotly charts (an SVG inside) the keyed chart element holds."""
    charts = widget(page, key).get_by_test_id("stPlotlyChart")
    return charts.filter(has=page.locator("svg.main-svg")).count()


def name_reviewer(page: Page, name: str) -> None:
    """Say who is labelling in Inspect's sidebar box, as a reviewer does once per
    browser session before the first label (no label goes out without a name)."""
    box = widget(page, "reviewer").locator("input")
    box.fill(name)
    box.press("Enter")
    wait_idle(page)
