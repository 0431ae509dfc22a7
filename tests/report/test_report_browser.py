"""The report pages as a reader sees them, rendered by headless Chromium: (a) the default study,
(b) a consumer group under broker faults (group_faults.toml) and (c) a small sweep's report.
From each page's geometry (a probe script reads the box of every fault label and every table,
dumped with --dump-dom): no two fault labels overlap, no table is wider than the page, and the
page does not scroll sideways. The default study's story and its ownership timeline with the
hatched duplicate spans are there, in the DOM and on the screen.

Each page's screenshot is copied to KAFKASIM_TEST_OUTPUT (default `test-output/browser/` under
the repository) for a person to look at after CI. Chromium is Debian's package (`make chromium`
installs it as root); where it is missing the tests are skipped and say why, and CI
(KAFKASIM_REQUIRE_CHROMIUM=1) fails instead. The default study is simulated once for the module
(about 15 s); the sweep runs on the suite's shared Spark session.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sim.cluster.scenario import load_scenario
from sim.report.page import write_report
from sim.studies.builtin import load_study
from sim.studies.runner import run_scenario

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
GROUP_FAULTS = Path(__file__).with_name("group_faults.toml")

MAGENTA = (255, 0, 255)
"""The hatch colour of the first cause's duplicate spans (sim/report/plots.py's CAUSE_COLOURS),
used by nothing else on the page."""

WIDTH = 1200

_PROBE = """<script>
window.addEventListener("load", () => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return {left: r.left + window.scrollX, top: r.top + window.scrollY, right: r.right + window.scrollX,
            bottom: r.bottom + window.scrollY, width: r.width, height: r.height}; };
  const timeline = document.getElementById("ownership-timeline");
  document.body.setAttribute("data-probe", JSON.stringify({
    clientWidth: document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
    contentRight: box(document.body).right - parseFloat(getComputedStyle(document.body).paddingRight),
    labels: [...document.querySelectorAll(".fault-label")].map(e => ({text: e.textContent, ...box(e)})),
    tables: [...document.querySelectorAll("table")].map(e => ({id: e.id, ...box(e)})),
    timeline: timeline ? box(timeline) : null}));
});
</script>"""
"""Added to a copy of the page only: what layout says, which --dump-dom cannot."""


def _chromium() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        reason = "Debian's chromium package is not installed (make chromium installs it as root)"
        if os.environ.get("KAFKASIM_REQUIRE_CHROMIUM"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _output_dir() -> Path:
    out = Path(os.environ.get("KAFKASIM_TEST_OUTPUT") or ROOT / "test-output" / "browser")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _run_chromium(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}", "--hide-scrollbars", "--force-device-scale-factor=1", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def render(page: Path, name: str, tmp: Path) -> dict[str, Any]:
    """The page's layout (from the probe), its DOM, and its screenshot, the whole page tall,
    also copied to the output directory as NAME.png."""
    chromium = _chromium()
    probe = tmp / f"{name}-probe.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    window = f"--window-size={WIDTH},2000"
    dom = _run_chromium(chromium, tmp, window, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    layout = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    # The same width as the probe's (the layout is the same); tall enough for the whole page.
    shot = tmp / f"{name}.png"
    _run_chromium(chromium, tmp, f"--window-size={WIDTH},{min(int(layout['height']) + 20, 16000)}",
                  f"--screenshot={shot}", page.as_uri())
    shutil.copyfile(shot, _output_dir() / f"{name}.png")
    return {"dom": dom, "layout": layout, "screenshot": shot}


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    width = min(a["right"], b["right"]) - max(a["left"], b["left"])
    height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return width > 0.5 and height > 0.5


def check_geometry(layout: dict[str, Any]) -> None:
    """No two fault labels overlap; no table is wider than the page; nothing scrolls sideways."""
    labels = layout["labels"]
    clashes = [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if _overlaps(a, b)]
    assert clashes == []
    page = layout["clientWidth"]
    right = min(page, layout["contentRight"])  # the page's text column, inside its margins
    wide = [(t["id"], t["right"]) for t in layout["tables"] if t["right"] > right + 0.5 or t["left"] < -0.5]
    assert wide == [], f"tables wider than the page ({right} px)"
    assert layout["scrollWidth"] <= page


@pytest.fixture(scope="module")
def default_study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _chromium()
    tmp = tmp_path_factory.mktemp("browser")
    run_dir = tmp / "default"
    summary = run_scenario(load_study(None), run_dir)
    page = write_report(run_dir, summary)  # no analysis.json: no Spark
    return {"summary": summary, "html": page.read_text(), **render(page, "default-study", tmp)}


def _image(data: bytes) -> Any:
    from PIL import Image  # noqa: PLC0415 - a test dependency (pyproject.toml)

    return Image.open(io.BytesIO(data)).convert("RGB")


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int], tolerance: int = 60) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))


def _count(image: Any, colour: tuple[int, int, int], box: tuple[int, int, int, int] | None = None, tolerance: int = 60) -> int:
    region = image if box is None else image.crop(box)
    return sum(n for n, pixel in region.getcolors(region.width * region.height) if _near(pixel, colour, tolerance))


# ------------------------------------------------------------------ (a) the default study


def test_the_dom_tells_the_crash_and_its_duplicates(default_study: dict[str, Any]) -> None:
    dom = default_study["dom"]
    story = re.search(r'<section id="narrative">(.*?)</section>', dom, re.S)
    assert story, "no narrative section"
    text = re.sub(r"<[^>]+>", "\n", story.group(1))
    assert "153 records were processed more than once (crash_before_commit 153)." in text
    assert (
        "At 31.0 s consumer-2 crashed (process); its partitions orders-2 and orders-3 had no owner for 44.1 s until "
        "generation 2; it had processed 153 records since its last auto-commit at 26.2 s, read again by consumer-3 "
        "(crash_before_commit); it restarted at 51.0 s." in text
    )
    assert "consumer-3 processed again 153 records (crash_before_commit)" in text


def test_the_default_studys_page_fits_and_its_fault_labels_never_overlap(default_study: dict[str, Any]) -> None:
    layout = default_study["layout"]
    check_geometry(layout)
    # the lane above the timeline: the crash, the restart and the rolling restart's three moments
    texts = [label["text"] for label in layout["labels"]]
    assert texts == ["crash consumer-2", "restart consumer-2", "close, exit, restart consumer-1",
                     "close, exit, restart consumer-2", "close, exit, restart consumer-3"]
    assert layout["timeline"]["top"] + layout["timeline"]["height"] < 2000, "the timeline is below the first screens"


def test_the_timeline_is_svg_with_the_duplicates_hatched(default_study: dict[str, Any]) -> None:
    timeline = re.search(r'<svg[^>]*id="ownership-timeline".*?</svg>', default_study["html"], re.S)
    assert timeline, "no inline timeline"
    svg = timeline.group(0)
    assert '<pattern id="hatch-0"' in svg and 'stroke="#ff00ff"' in svg
    spans = re.findall(r'<g class="duplicate-span" data-cause="crash_before_commit"><title>([^<]*)</title><rect [^>]*fill="url\(#hatch-0\)"', svg)
    assert spans == [
        "consumer-3 processed again offsets 340 to 402 of orders-3 at 76.140 s (crash_before_commit)",
        "consumer-3 processed again offsets 499 to 588 of orders-2 at 77.140 s (crash_before_commit)",
    ]


def test_the_screenshot_shows_the_timeline_with_its_duplicate_spans(default_study: dict[str, Any]) -> None:
    shot = _image(default_study["screenshot"].read_bytes())
    box = default_study["layout"]["timeline"]
    drawn = shot.width * shot.height - _count(shot, (255, 255, 255), tolerance=0)
    assert drawn > 50_000, "the screenshot is blank"
    inside = _count(shot, MAGENTA, (int(box["left"]), int(box["top"]), int(box["right"]), int(box["bottom"])))
    assert inside > 100
    assert _count(shot, MAGENTA) == inside, "the duplicate spans' colour appears outside the timeline"


# ------------------------------------------------------------------ (b) a group under broker faults


def test_a_group_under_broker_faults_fits_with_its_labels_apart(tmp_path: Path) -> None:
    run_dir = tmp_path / "group-faults"
    page = write_report(run_dir, run_scenario(load_scenario(str(GROUP_FAULTS)), run_dir))
    layout = render(page, "group-faults", tmp_path)["layout"]
    check_geometry(layout)
    # the faults' lane twice (timeline, replicas) and the four replica panels' own lanes
    assert len(layout["labels"]) == 31
    assert [t["id"] for t in layout["tables"] if t["id"]] == [
        "faults", "findings", "groups", "duplicates-by-cause", "startup-elections", "isr-changes", "details",
    ]


# ------------------------------------------------------------------ (c) a sweep's report


@pytest.mark.spark
def test_a_sweeps_report_fits(swept: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out, _ = swept
    layout = render(out / "report.html", "sweep", tmp_path)["layout"]
    check_geometry(layout)
    assert [t["id"] for t in layout["tables"]] == ["configs", "causes", "runs"]
    run_page = out / "runs" / "c2-seed2" / "report.html"
    check_geometry(render(run_page, "sweep-c2-seed2", tmp_path)["layout"])
