"""Charts people can read (design.md §issue-20 point 4): the learning report's curves are matplotlib SVG
inlined in one HTML file — a point per round, axes with ticks and units, the band of the
seeds — beside recall quality and latency from the benches' measured numbers, and nothing in
the page is fetched from anywhere.

The rows are ``Round``s as ``report.rounds`` reads them from the views (its SQL is tested
against the simulator in test_sim.py); here they are built directly, so the charts are tested
in a second, for every shape that matters (one seed, two seeds, a round with nothing to
measure).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from hindbrain.sim.report import RECALL_BENCH, Round, write_html
from hindbrain.sim.run import Counts

ARMS = ("no memory", "naive RAG", "hindbrain")


def fleet(seeds: tuple[int, ...], rounds: int = 4) -> list[Round]:
    """A fleet whose arms succeed more each round, the seeds a little apart; hindbrain injects
    tokens, the others do not; no task is known before round 2 (nothing to measure there)."""
    rows = []
    for seed in seeds:
        for a, arm in enumerate(ARMS):
            for r in range(1, rounds + 1):
                successes = min(12, 2 + a * r + seed % 3)
                rows.append(Round(f"sim-{arm.replace(' ', '-').lower()}-fleet-{seed}", "fleet", arm, r, Counts(
                    tasks=12, successes=successes, known_tasks=0 if r == 1 else 6, repeated=0 if r == 1 else 3 - a,
                    injected_tokens=80 * a * successes)))
    return rows


SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory) -> str:
    return write_html(tmp_path_factory.mktemp("report") / "report.html", fleet(seeds=(7, 8))).read_text("utf-8")


@pytest.fixture(scope="module")
def one_seed(tmp_path_factory) -> str:
    return write_html(tmp_path_factory.mktemp("report") / "report.html", fleet(seeds=(7,))).read_text("utf-8")


def element(page: str, gid: str) -> ET.Element:
    """The element with this id in the page's inline SVG (each chart is well-formed XML)."""
    for chart in re.findall(r"<svg .*?</svg>", page, re.S):
        found = ET.fromstring(chart).find(f".//*[@id='{gid}']")
        if found is not None:
            return found
    raise AssertionError(f"no element {gid!r} in the page")


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def points(page: str, gid: str) -> int:
    return len(element(page, gid).findall(f".//{SVG}use"))


def text(page: str, gid: str) -> str:
    return " ".join(element(page, gid).itertext())


def test_each_curve_has_a_point_per_round_axes_with_ticks_and_units_and_the_band_of_the_seeds(two_seeds):
    page = two_seeds
    key = "fleet-success-rate"
    for arm in ("no-memory", "naive-rag", "hindbrain"):
        assert points(page, f"{key}-points-{arm}") == 4  # one point per round
        assert f'<g id="{key}-band-{arm}"' in page  # two seeds: the band from the lowest to the highest
    assert [text(page, f"{key}-xtick_{n}").strip() for n in range(1, 5)] == ["1", "2", "3", "4"]  # the rounds
    assert [text(page, f"{key}-ytick_{n}").strip() for n in range(1, 7)] == ["0%", "20%", "40%", "60%", "80%", "100%"]
    assert "% of tasks done by the agent" in text(page, f"{key}-axes_1") and "round" in text(page, f"{key}-axes_1")
    assert "tokens injected per success" in page  # the one curve that is not a share names its unit
    # the repeated-mistake curve starts in round 2: round 1 had nothing to measure
    assert points(page, "fleet-repeated-mistake-rate-points-hindbrain") == 3
    assert "median of 2 seeds (7, 8)" in page


def test_one_seed_draws_no_band_and_says_so(one_seed):
    page = one_seed
    assert "-band-" not in page and "one seed (7): no spread to draw" in page
    assert points(page, "fleet-success-rate-points-hindbrain") == 4


def test_the_page_is_one_file_that_fetches_nothing_and_has_unique_ids(two_seeds):
    page = two_seeds
    assert not re.search(r"<script|<link|<img|<iframe|@import", page, re.I)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", page, re.I)
    # success, repeated mistakes and tokens (this fleet has no preference or ticket tasks: no such
    # curve), then recall quality and latency
    assert page.count("<svg") == 3 + 2
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) and not any(" " in i for i in ids)
    for ref in set(re.findall(r'href="#([^"]+)"|url\(#([^)]+)\)', page)):  # every reference resolves
        assert (ref[0] or ref[1]) in ids


def test_recall_quality_and_latency_come_from_the_measured_file_with_its_date_and_command(one_seed, tmp_path):
    measured, page = json.loads(RECALL_BENCH.read_text(encoding="utf-8")), one_seed
    assert measured["measured"] in page and measured["command"] in page and measured["commit"] in page
    quality, latency = text(page, "recall-quality-axes_1"), text(page, "recall-latency-axes_1")
    for name, data in measured["sets"].items():
        assert name in quality and name in latency  # a group of bars per benchmark set
        for ranking, got in data["rankings"].items():
            bar = f"bar-{slug(ranking)}-{slug(name)}"
            element(page, f"recall-quality-{bar}"), element(page, f"recall-latency-{bar}")  # each raises if missing
            assert f"{got['recall_at']['5']:.1f}" in quality  # the bar's label is the measured number
            assert ranking in quality
    missing = write_html(tmp_path / "other.html", fleet(seeds=(7,)), recall_bench=tmp_path / "none.json")
    without = missing.read_text(encoding="utf-8")
    assert "No measured numbers here" in without and without.count("<svg") == 3
