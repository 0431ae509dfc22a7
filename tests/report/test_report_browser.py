"""The default study's report as a reader sees it: rendered by headless Chromium, its story and
its ownership timeline with the duplicate spans are there, in the DOM and on the screen.

Chromium is Debian's package (`make chromium` installs it as root); where it is missing the test
is skipped and says why, and CI (KAFKASIM_REQUIRE_CHROMIUM=1) fails instead. The default study
is simulated once for the module (about 25 s); the report needs no Spark.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sim.report.page import write_report
from sim.studies.builtin import load_study
from sim.studies.runner import run_scenario

pytestmark = pytest.mark.browser

MAGENTA = (255, 0, 255)
"""The hatch colour of the first cause's duplicate spans (sim/report/plots.py's CAUSE_COLOURS),
used by nothing else on the page."""

_PROBE = """<script>
window.addEventListener("load", () => {
  const img = document.getElementById("ownership-timeline");
  const box = img.getBoundingClientRect();
  document.body.setAttribute("data-probe", JSON.stringify({
    complete: img.complete, naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
    left: box.left + window.scrollX, top: box.top + window.scrollY, width: box.width, height: box.height}));
});
</script>"""
"""Added to a copy of the page only: what layout and decoding say, which --dump-dom cannot."""


def _chromium() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        reason = "Debian's chromium package is not installed (make chromium installs it as root)"
        if os.environ.get("KAFKASIM_REQUIRE_CHROMIUM"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _run_chromium(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}", "--hide-scrollbars", "--force-device-scale-factor=1", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    chromium = _chromium()
    tmp = tmp_path_factory.mktemp("browser")
    run_dir = tmp / "default"
    summary = run_scenario(load_study(None), run_dir)
    page = write_report(run_dir, summary)  # no analysis.json: no Spark
    html = page.read_text()
    probe = tmp / "probe.html"
    probe.write_text(html.replace("</body>", _PROBE + "</body>"))
    window = "--window-size=1200,3000"  # the same layout for the DOM's probe and the screenshot
    dom = _run_chromium(chromium, tmp, window, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    layout = json.loads(found.group(1).replace("&quot;", '"'))
    assert layout["top"] + layout["height"] < 3000, "the timeline is below the first screen"
    shot = tmp / "report.png"
    _run_chromium(chromium, tmp, window, f"--screenshot={shot}", page.as_uri())
    return {"summary": summary, "html": html, "dom": dom, "layout": layout, "screenshot": shot}


def _image(data: bytes) -> Any:
    from PIL import Image  # noqa: PLC0415 - matplotlib's own dependency

    return Image.open(io.BytesIO(data)).convert("RGB")


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int], tolerance: int = 60) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))


def _count(image: Any, colour: tuple[int, int, int], box: tuple[int, int, int, int] | None = None) -> int:
    region = image if box is None else image.crop(box)
    return sum(n for n, pixel in region.getcolors(region.width * region.height) if _near(pixel, colour))


def test_the_dom_tells_the_crash_and_its_duplicates(rendered: dict[str, Any]) -> None:
    dom = rendered["dom"]
    story = re.search(r'<section id="narrative">(.*?)</section>', dom, re.S)
    assert story, "no narrative section"
    text = re.sub(r"<[^>]+>", "\n", story.group(1))
    assert "152 records were processed more than once (crash_before_commit 152)." in text
    assert (
        "At 31.0 s consumer-2 crashed (process); its partitions orders-2 and orders-3 had no owner for 44.1 s until "
        "generation 2; it had processed 152 records since its last auto-commit at 26.2 s, read again by consumer-3 "
        "(crash_before_commit); it restarted at 51.0 s." in text
    )
    assert "consumer-3 processed again 152 records (crash_before_commit)" in text


def test_the_ownership_timeline_is_decoded_and_hatches_the_duplicates(rendered: dict[str, Any]) -> None:
    layout = rendered["layout"]
    assert layout["complete"] and layout["naturalWidth"] == 1100 and layout["naturalHeight"] > 200
    data = re.search(r'<img id="ownership-timeline" alt="[^"]*" src="data:image/png;base64,([^"]+)"', rendered["html"])
    assert data, "no inline timeline"
    timeline = _image(base64.b64decode(data.group(1)))
    assert timeline.size == (layout["naturalWidth"], layout["naturalHeight"])
    # the spans (upper part, among the consumers' rows), not only the legend below the axes
    assert _count(timeline, MAGENTA, (0, 0, timeline.width, int(timeline.height * 0.7))) > 100


def test_the_screenshot_shows_the_timeline_with_its_duplicate_spans(rendered: dict[str, Any]) -> None:
    shot = _image(rendered["screenshot"].read_bytes())
    layout = rendered["layout"]
    white = _count(shot, (255, 255, 255))
    assert white < 0.95 * shot.width * shot.height, "the screenshot is blank"
    box = (int(layout["left"]), int(layout["top"]), int(layout["left"] + layout["width"]), int(layout["top"] + layout["height"]))
    inside = _count(shot, MAGENTA, box)
    assert inside > 100
    assert _count(shot, MAGENTA) == inside, "the duplicate spans' colour appears outside the timeline"
