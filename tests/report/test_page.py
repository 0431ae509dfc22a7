"""The run report's page as a reader meets it, on a consumer group under broker faults
(group_faults.toml, 60 s simulated in about 3 s): faults on a lane of their own whose labels
never overlap, the ownership timeline sized to its group with its legend beside it, replica
panels only where something happened, start-up folded, inline SVG, and every value in people's
words (no Python repr anywhere)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sim.cluster.scenario import load_scenario
from sim.report import fmt
from sim.report.fault_lane import Mark, lay_out, marks
from sim.report.page import write_report
from sim.report.plots import LEFT, LEGEND_X, RIGHT
from sim.report.replica_plots import eventful_partitions, steady_text
from sim.report.run_facts import RunFacts, scan_events
from sim.report.svg import TimeAxis
from sim.studies.runner import run_scenario

GROUP_FAULTS = Path(__file__).with_name("group_faults.toml")

REPR = re.compile(r"\{'|\['|\[\d|\bNone\b|\bTrue\b|\bFalse\b")
"""What Python's repr of a dict, a list, None or a boolean looks like on a page."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run_dir = tmp_path_factory.mktemp("group-faults") / "run"
    summary = run_scenario(load_scenario(str(GROUP_FAULTS)), run_dir)
    raw = write_report(run_dir, summary).read_text()
    # `<wbr>` lets a long name wrap after its dots and underscores; the tests read the words.
    return {"summary": summary, "facts": scan_events(run_dir / "events.jsonl"), "page": raw.replace("<wbr>", ""),
            "facts_path": run_dir / "events.jsonl"}


def _fault(ts_ms: int, event: str, target: str | None, **fields: Any) -> dict[str, Any]:
    keys = ("kind", "action", "until_ms", "side_a", "side_b", "incarnation", "reason")
    return {"ts_ms": ts_ms, "event": event, "target": target, **dict.fromkeys(keys), **fields}


# ------------------------------------------------------------------ the faults' lane


def test_each_fault_is_a_mark_and_a_nodes_moment_is_one(run: dict[str, Any]) -> None:
    assert [(m.ms, m.kind, m.label) for m in marks(run["facts"])] == [
        (12000, "crash", "crash broker-1"),
        (20000, "restart", "restart broker-1"),
        (25000, "crash", "crash consumer-2"),
        (35000, "restart", "restart consumer-2"),
        (40000, "crash", "crash broker-1"),
        (48000, "restart", "restart broker-1"),
    ]
    # A rolling restart's close, exit and start of one consumer: one mark, every step in its tooltip.
    facts = RunFacts(end_ms=120000, faults=[
        _fault(0, "node_started", "consumer-1", incarnation=0),
        _fault(90000, "application_called", "consumer-1/consumer", action="close"),
        _fault(90019, "node_stopped", "consumer-1"),
        _fault(90019, "node_started", "consumer-1", incarnation=1),
        _fault(95019, "application_called", "consumer-2/consumer", action="close"),
    ])
    lane = marks(facts)
    assert [(m.ms, m.kind, m.label) for m in lane] == [
        (90000, "call", "close, exit, restart consumer-1"), (95019, "call", "close consumer-2"),
    ]
    assert lane[0].details == (
        "90.000 s: consumer-1's application called close\n90.019 s: consumer-1's process exited\n"
        "90.019 s: consumer-1 started again (incarnation 1)"
    )


def test_fault_labels_that_would_overlap_go_to_rows_of_their_own(run: dict[str, Any]) -> None:
    axis = TimeAxis(LEFT, RIGHT, run["facts"].end_ms)
    placed = lay_out(marks(run["facts"]), axis, LEGEND_X - 8)
    # crash broker-1 at 12 s reaches past restart broker-1's mark at 20 s: a row up; and so on.
    assert [p.row for p in placed] == [0, 1, 0, 1, 0, 1]
    assert [(round(p.left, 1), round(p.right, 1)) for p in placed[:2]] == [(242.0, 351.2), (340.7, 463.5)]
    for a in placed:
        for b in placed:
            if a is not b and a.row == b.row:
                assert a.right <= b.left or b.right <= a.left
    # Near the right edge a label runs left of its mark, and never past the legend.
    late = lay_out([Mark([e]) for e in marks(run["facts"])[0].events], TimeAxis(LEFT, RIGHT, 12500), LEGEND_X - 8)
    assert (late[0].anchor, round(late[0].right, 1)) == ("end", 816.4)


def test_the_faults_table_lists_every_fault(run: dict[str, Any]) -> None:
    table = re.search(r'<table id="faults">(.*?)</table>', run["page"]).group(1)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", table)
    assert rows == [
        ("12.000", "crash", "broker-1", "broker-1 crashed (process)"),
        ("20.000", "(re)start", "broker-1", "broker-1 started again (incarnation 1)"),
        ("25.000", "crash", "consumer-2", "consumer-2 crashed (process)"),
        ("35.000", "(re)start", "consumer-2", "consumer-2 started again (incarnation 1)"),
        ("40.000", "crash", "broker-1", "broker-1 crashed (power_loss)"),
        ("48.000", "(re)start", "broker-1", "broker-1 started again (incarnation 2)"),
    ]


# ------------------------------------------------------------------ the figures


def test_the_figures_are_inline_svg_with_labelled_faults(run: dict[str, Any]) -> None:
    page = run["page"]
    assert "data:image/png" not in page and "<img" not in page
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" id="ownership-timeline"') == 1
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" id="replicas"') == 1
    # the faults' lane twice (above the timeline, above the replicas: 2 x 6 marks) and the
    # replica panels' lanes (19 elections, ISR changes and HW stalls), each mark with its tooltip
    assert page.count('class="fault-label"') == 31
    assert '<g class="fault" data-kind="crash"><title>40.000 s: broker-1 crashed (power_loss)</title>' in page


def test_the_ownership_timeline_follows_its_group_with_its_legend_beside(run: dict[str, Any]) -> None:
    timeline = re.search(r'<svg[^>]*id="ownership-timeline".*?</svg>', run["page"]).group(0)
    # the lane's two rows, then three consumers of six partitions each (14 px a lane, 10 between)
    assert 'viewBox="0 0 1060 368"' in timeline
    bars = [(float(x), float(w)) for x, w in re.findall(r'<g class="hold"><title>[^<]*</title><rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', timeline)]
    assert len(bars) == 18 and all(LEFT <= x and x + w <= RIGHT + 0.1 for x, w in bars)
    legend = re.findall(rf'<text x="{LEGEND_X + 30}" y="[\d.]+">([^<]*)</text>', timeline)
    assert legend == ["crash", "(re)start", *(f"events-{p}" for p in range(6)), "expelled_session_timeout"]
    rows = [float(y) for y in re.findall(r'<text x="92" y="([\d.]+)" text-anchor="end">consumer-\d</text>', timeline)]
    assert rows == [93, 187, 281]  # 94 px apart: six lanes of 14 px, and 10 between rows


def test_replica_panels_only_where_something_happened(run: dict[str, Any]) -> None:
    facts = run["facts"]
    assert eventful_partitions(facts) == ["events-0", "events-2", "events-3", "events-5"]
    assert steady_text(facts) == "events-1, events-4: steady, no leader or ISR change after start-up, no HW stall, no truncation."
    replicas = re.search(r'<svg[^>]*id="replicas".*?</svg>', run["page"]).group(0)
    assert re.findall(r'font-weight="bold" font-size="12">([^<]*)</text>', replicas) == ["events-0", "events-2", "events-3", "events-5"]
    assert '<p class="note" id="steady-partitions">events-1, events-4: steady' in run["page"]


def test_a_truncation_alone_earns_a_panel() -> None:
    facts = RunFacts(end_ms=10000)
    for p in range(3):
        facts.leader_changes.append({"ts_ms": 84, "event": "leader_elected", "partition": f"T-{p}", "election": "new",
                                     "unclean": False, "leader": 1, "leader_epoch": 0, "isr": [1, 2], "previous_isr": [],
                                     "logged_by": "broker-1"})
    facts.truncations.append({"ts_ms": 5000, "partition": "T-1", "node": "broker-2", "from_offset": 40, "to_offset": 30,
                              "reason": "leader_epoch"})
    assert eventful_partitions(facts) == ["T-1"]
    assert steady_text(facts) == "T-0, T-2: steady, no leader or ISR change after start-up, no HW stall, no truncation."


# ------------------------------------------------------------------ the tables


def test_start_up_is_folded_and_the_changes_after_it_are_listed(run: dict[str, Any]) -> None:
    page = run["page"]
    assert ('<details id="startup"><summary>Start-up: 56 partitions got their first leader at 0.084 s; '
            "broker-2 became the controller at 0.032 s (epoch 1).</summary>") in page
    changes = re.search(r'<table id="isr-changes">(.*?)</table>', page).group(1)
    first = re.findall(r"<tr><td>(.*?)</td></tr>", changes)[0].split("</td><td>")
    assert first == ["24.039", "__consumer_offsets-0", "leader_elected (offline)", "broker-2", "1", "1, 2, 3", "2, 3", "broker-2"]
    assert "(new)" not in changes
    assert '<p id="controller-changes">No controller change after the first election.</p>' in page


def test_every_value_is_in_peoples_words(run: dict[str, Any]) -> None:
    page = run["page"]
    found = REPR.findall(re.sub(r"<svg.*?</svg>", "", page, flags=re.S))
    assert found == [], found
    assert "<tr><th>rebalances</th><td>3</td></tr>" in page
    assert "<tr><th>records consumed</th><td>3,304</td></tr>" in page
    assert '<table id="duplicates-by-cause"><tr><th>cause</th><th>records</th></tr><tr><td>expelled_session_timeout</td><td>304</td></tr>' in page
    assert "<tr><th>interrupted</th><td>no</td></tr>" in page
    assert "<tr><th>failure</th><td>none</td></tr>" in page
    assert "<tr><th>consumer_failures</th><td>none</td></tr>" in page
    assert "<tr><th>sim_ms</th><td>60 s</td></tr>" in page


def test_people_formatting() -> None:
    assert (fmt.plural(1, "rebalance"), fmt.plural(3, "rebalance"), fmt.plural(0, "rebalance")) == (
        "1 rebalance", "3 rebalances", "0 rebalances")
    assert (fmt.count(12151), fmt.number(19.5), fmt.number(152.0), fmt.number(1931.4), fmt.number(0.3712)) == (
        "12,151", "19.5", "152", "1,931", "0.371")
    assert [fmt.text(v) for v in (None, True, False, [1, 2], [], {"a": 1})] == ["", "yes", "no", "1, 2", "none", "a 1"]
    assert fmt.cell({"crash_before_commit": 153}) == (
        '<table class="inner"><tr><th>crash_<wbr>before_<wbr>commit</th><td>153</td></tr></table>')
    assert fmt.breakable("consumers.1.auto.commit.interval.ms 0.37") == "consumers.1.<wbr>auto.<wbr>commit.<wbr>interval.<wbr>ms 0.37"


def test_spark_figures_are_in_words_and_the_pings_an_svg(run: dict[str, Any], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "events.jsonl").write_bytes(Path(run["facts_path"]).read_bytes())
    analysis = {
        "ping_timeline": [{"second": 0, "max_rtt_ms": 4}, {"second": 1, "max_rtt_ms": 31}, {"second": 2, "max_rtt_ms": 5}],
        "faults": [{"ts_ms": 0}, {"ts_ms": 1200}],
        "produce_outcomes": {"NONE": 12000, "NOT_ENOUGH_REPLICAS": 3},
        "events_by_type": {"records_appended": 1500},
        "dropped_by_reason": {},
    }
    page = write_report(run_dir, run["summary"], analysis).read_text().replace("<wbr>", "")
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" id="pings"') == 1
    assert "<tr><th>NONE</th><td>12,000</td></tr><tr><th>NOT_ENOUGH_REPLICAS</th><td>3</td></tr>" in page
    assert "<h2>Dropped messages by reason</h2>\n<p>none</p>" in page
    assert REPR.findall(re.sub(r"<svg.*?</svg>", "", page, flags=re.S)) == []


def test_every_kind_of_fault_has_its_mark_and_words() -> None:
    facts = RunFacts(end_ms=60000, faults=[
        _fault(5000, "network_partitioned", None, side_a=["broker-1"], side_b=["broker-2", "broker-3", "zookeeper"]),
        _fault(8000, "network_healed", None),
        _fault(10000, "node_paused", "broker-2", until_ms=14000),
        _fault(20000, "application_called", "broker-3/broker", action="shutdown"),
        _fault(30000, "fault_skipped", "consumer-1", kind="zombie", reason="no leader"),
        _fault(39990, "application_called", "admin/admin", action="reset_offsets"),
    ])
    facts.controllers += [{"ts_ms": 32, "event": "controller_elected", "broker_id": 1, "epoch": 1},
                          {"ts_ms": 21000, "event": "controller_elected", "broker_id": 2, "epoch": 2}]
    facts.admin_actions.append({"ts_ms": 40000, "operation": "reset_offsets", "group_id": "g", "error": "NON_EMPTY_GROUP",
                                "detail": "to latest"})
    assert [(m.kind, m.label, m.details) for m in marks(facts)] == [
        ("cut", "cut broker-1", "5.000 s: traffic between broker-1 and 3 nodes cut"),
        ("heal", "heal", "8.000 s: every network cut lifted"),
        ("pause", "pause broker-2", "10.000 s: broker-2 paused until 14.000 s"),
        ("shutdown", "shutdown broker-3", "20.000 s: broker-3's operator called shutdown"),
        ("controller", "controller broker-2", "21.000 s: broker-2 elected controller (epoch 2)"),
        ("skipped", "zombie skipped consumer-1", "30.000 s: the zombie fault on consumer-1 could not act: no leader"),
        # the operator's command and its answer, one moment
        ("admin", "admin reset_offsets",
         "39.990 s: the operator ran reset_offsets\n40.000 s: reset_offsets of group g to latest answered NON_EMPTY_GROUP"),
    ]


def test_skipped_records_are_marked_on_the_lane_of_whoever_passed_them(tmp_path: Path) -> None:
    """examples/11_operator_reset.toml: the group closes at 20 s and an operator resets it to
    the log ends at 30 s, past 505 records of each partition: three skip spans, on an
    `operator` row, one per partition's lane, each with its offsets in its tooltip."""
    run_dir = tmp_path / "run"
    summary = run_scenario(load_scenario(str(Path(__file__).parents[2] / "examples/11_operator_reset.toml")), run_dir)
    page = write_report(run_dir, summary).read_text()
    timeline = page[page.index('id="ownership-timeline"'):]
    timeline = timeline[: timeline.index("</svg>")]
    spans = re.findall(r'<g class="skip-span" data-cause="(\w+)"><title>([^<]*)</title>', timeline)
    assert [cause for cause, _ in spans] == ["admin_reset"] * 3
    assert [tip for _, tip in spans] == [
        f"the operator moved group study past offsets 1000 to 1504 of T-{p} at 30.038 s, never processed (admin_reset)"
        for p in range(3)
    ]
    assert ">operator<" in timeline and ">skipped<" in timeline
