"""Pages people read, checked in a real browser: Debian's headless Chromium (`make setup` installs
it) driven by Playwright. A page must load from its file with no console error and no request
besides itself, show a row per table and its charts, sort a table by a clicked column, and leave a
screenshot in build/test-artifacts/ (kept by CI as the test's artifact)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "build" / "test-artifacts"


def chromium() -> str:
    found = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    assert found, "no headless Chromium on PATH: run `make setup` (it installs chromium-headless-shell)"
    return found


@dataclass
class Loaded:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)  # the first cell of each row of #tables
    sorted_rows: list[str] = field(default_factory=list)  # ... after a click on `sort_by`
    charts: dict[str, int] = field(default_factory=dict)  # selector -> bars drawn in it
    text: str = ""
    screenshot: Path | None = None


def load(page_file: Path, charts: list[str], sort_by: str, name: str) -> Loaded:
    """Open `page_file` as a user would and record what the browser saw."""
    seen = Loaded()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: seen.console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen.console_errors.append(str(e)))
            page.on("request", lambda r: seen.requests.append(r.url))
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            seen.text = page.inner_text("body")
            seen.rows = page.locator("#tables tbody tr td:first-child").all_inner_texts()
            for selector in charts:
                seen.charts[selector] = page.locator(f"{selector} rect.bar").count()
            page.locator("#tables th", has_text=sort_by).first.click()
            seen.sorted_rows = page.locator("#tables tbody tr td:first-child").all_inner_texts()
            seen.screenshot = ARTIFACTS / f"{name}.png"
            page.screenshot(path=str(seen.screenshot), full_page=True)
        finally:
            browser.close()
    return seen


def assert_readable(seen: Loaded, page_file: Path, tables: list[str], charts: list[str]) -> None:
    assert seen.console_errors == [], seen.console_errors
    assert seen.requests == [page_file.resolve().as_uri()], seen.requests  # the page itself, nothing else
    assert sorted(seen.rows) == sorted(tables), seen.rows  # a row per table
    assert sorted(seen.sorted_rows) == sorted(tables)
    for selector in charts:
        assert seen.charts.get(selector, 0) > 0, f"no bars in {selector}: {seen.charts}"
    assert seen.screenshot is not None and seen.screenshot.stat().st_size > 10_000


@dataclass
class Fitted:
    """What a page shows at 1280 px: its width against the window's, its text, and the text a
    click on its first error's <details> opens (else its first <details>)."""

    scroll_width: int = 0
    client_width: int = 0
    text: str = ""
    details: int = 0
    opened: str = ""
    links: list[str] = field(default_factory=list)


def load_at_1280(page_file: Path, name: str) -> Fitted:
    """Open `page_file` in a 1280 px wide window, as a person reading a failed run's report does."""
    seen = Fitted()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            seen.scroll_width = page.evaluate("document.documentElement.scrollWidth")
            seen.client_width = page.evaluate("document.documentElement.clientWidth")
            seen.text = page.inner_text("body")
            seen.details = page.locator("details").count()
            seen.links = page.locator("a").evaluate_all("links => links.map(a => a.href)")
            if seen.details:  # an error's whole message where the page lists errors, else the first
                errors = page.locator("li.error details")
                opened = errors.first if errors.count() else page.locator("details").first
                opened.locator("summary").click()
                seen.opened = opened.inner_text()
            seen.scroll_width = max(seen.scroll_width, page.evaluate("document.documentElement.scrollWidth"))
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        finally:
            browser.close()
    return seen


def assert_fits_and_hides_traces(seen: Fitted) -> None:
    """No horizontal scroll at 1280 px, and no stack trace anywhere in the page's text."""
    assert seen.scroll_width <= seen.client_width, (seen.scroll_width, seen.client_width)
    for trace in ("stackTrace", "Traceback", 'File "/'):
        assert trace not in seen.text and trace not in seen.opened, trace


@dataclass
class Explored:
    """What a person sees of an estate's page (issue 48) at 1280 px: where the table of tables
    begins, the rows and pager it shows, what a name typed in the filter box leaves, what the next
    page and a kind's "show these tables" button show, and the grouped summary's lines."""

    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    table_top: float = 0.0  # px from the top of the page
    first_page: list[str] = field(default_factory=list)  # names in the rows shown
    pager: str = ""
    filtered: list[str] = field(default_factory=list)
    second_page: list[str] = field(default_factory=list)
    second_pager: str = ""
    kind_lines: list[str] = field(default_factory=list)  # each kind's summary line
    kind_opened: str = ""  # the first kind's line, opened
    by_kind: list[str] = field(default_factory=list)  # rows after the first kind's button
    sorted_first: str = ""  # the first row after two clicks on the first column (descending)
    seconds: float = 0.0  # from navigation to "load"


def explore(page_file: Path, name: str, find: str) -> Explored:
    """Open `page_file` at 1280 px and use its summary, filter box, pager and sorting."""
    seen = Explored()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shown = "#tables tbody tr:not([hidden])"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: seen.console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen.console_errors.append(str(e)))
            page.on("request", lambda r: seen.requests.append(r.url))
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            seen.seconds = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd / 1000")
            seen.table_top = page.evaluate(
                "document.getElementById('tables').getBoundingClientRect().top + window.scrollY"
            )
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
            seen.first_page = page.locator(f"{shown} td:first-child").all_inner_texts()
            seen.pager = page.locator("#tables-pager .count").inner_text()
            seen.kind_lines = page.locator("details.kind-line summary").all_inner_texts()
            if seen.kind_lines:
                page.locator("details.kind-line summary").first.click()
                seen.kind_opened = page.locator("details.kind-line").first.inner_text()
            page.locator("#tables-pager .next").click()
            seen.second_page = page.locator(f"{shown} td:first-child").all_inner_texts()
            seen.second_pager = page.locator("#tables-pager .count").inner_text()
            page.fill("#tables-filter", find)
            seen.filtered = page.locator(f"{shown} td:first-child").all_inner_texts()
            page.fill("#tables-filter", "")
            buttons = page.locator("button[data-for='tables']")
            if buttons.count():
                page.locator("details:has(button[data-for='tables'])").first.evaluate(
                    "d => { d.open = true; }"
                )
                buttons.first.click()
                seen.by_kind = page.locator(f"{shown} td:first-child").all_inner_texts()
                page.fill("#tables-filter", "")
            page.dispatch_event("#tables-filter", "input")
            page.locator("#tables th").first.click()
            page.locator("#tables th").first.click()
            seen.sorted_first = page.locator(f"{shown} td:first-child").first.inner_text()
        finally:
            browser.close()
    return seen


# Where a line of a table cell may end: after a space, '.', '_' or '/' (issue 56). For each cell of
# every table, each character's line (the top of its box, by Range.getClientRects) is read in
# order across the cell's text; a new line that starts after any other character broke a token.
# A <br> or another block between two characters is a break the markup asked for.
_BROKEN_CELLS = """() => {
  document.querySelectorAll("tr[hidden]").forEach(r => { r.hidden = false; });
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  const blockOf = n => {
    let e = n.parentElement;
    while (e && getComputedStyle(e).display.startsWith("inline")) e = e.parentElement;
    return e;
  };
  const broken = [];
  for (const cell of document.querySelectorAll("td, th")) {
    if (!cell.getClientRects().length) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
    let last = null, gap = false;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeType === Node.ELEMENT_NODE) { if (n.tagName === "BR") gap = true; continue; }
      const block = blockOf(n), text = n.data, range = document.createRange();
      for (let i = 0; i < text.length; i++) {
        if (/\\s/.test(text[i])) { gap = true; continue; }
        range.setStart(n, i); range.setEnd(n, i + 1);
        const box = range.getClientRects()[0];
        if (!box) continue;
        if (last && box.top > last.top + 2 && !gap && block === last.block && !"._/-".includes(last.ch)) {
          broken.push(cell.innerText.replace(/\\s+/g, " ").slice(0, 80) + " | " + last.ch + text[i]);
        }
        last = { top: box.top, block, ch: text[i] };
        gap = false;
      }
    }
  }
  return broken;
}"""


def cells_broken_mid_token(page_file: Path, name: str) -> list[str]:
    """Every table cell of `page_file` at 1280 px (all rows shown, every <details> open) whose text
    breaks a line inside a token: '<cell text> | <the two characters around the break>'."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            broken: list[str] = page.evaluate(_BROKEN_CELLS)
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
        finally:
            browser.close()
    return broken
