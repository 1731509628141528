"""Dates a question names meet the dates a memory is indexed under."""

from datetime import UTC, datetime

from hindbrain.recall.cues import index_terms
from hindbrain.recall.timecues import query_time_values

NOW = int(datetime(2026, 12, 2, 12, tzinfo=UTC).timestamp() * 1_000_000)


def test_absolute_dates_in_english_and_chinese():
    assert query_time_values("What did Mel do in May 2023?", NOW) == ["2023-05", "2023"]
    assert query_time_values("on 14 May 2023", NOW)[:2] == ["2023-05-14", "2023-05"]
    assert query_time_values("May 14th, 2023", NOW)[:2] == ["2023-05-14", "2023-05"]
    assert query_time_values("2023年5月她做了什么", NOW) == ["2023-05", "2023"]
    assert query_time_values("5月14日", NOW) == ["month-05"]
    assert query_time_values("in March", NOW) == ["month-03"]


def test_relative_dates_count_from_the_recall():
    assert query_time_values("what happened yesterday", NOW) == ["2026-12-01"]
    assert query_time_values("last May", NOW) == ["2026-05"]
    assert query_time_values("two weeks ago", NOW) == ["2026-W47"]
    assert query_time_values("去年", NOW) == ["2025"] and query_time_values("三天前", NOW) == ["2026-11-29"]


def test_words_that_only_look_like_dates_are_not_dates():
    for text in ("May I ask a question?", "I had 3 apples", "When did Caroline go to the support group?", ""):
        assert query_time_values(text, NOW) == [], text


def test_an_event_is_indexed_under_its_day_week_month_year_and_month_of_year():
    ts = int(datetime(2023, 5, 14, 18, tzinfo=UTC).timestamp() * 1_000_000)
    terms = set(index_terms({"text": "we adopted a puppy"}, ts))
    assert {"@time:2023-05-14", "@time:2023-w19", "@time:2023-05", "@time:2023", "@time:month-05"} <= terms
