"""Time as a cue: the dates a memory is indexed under and the dates a question names.

A perceived event is indexed under its day, ISO week, month, year and month-of-year
(``@time:2023-05-14``, ``@time:2023-W19``, ``@time:2023-05``, ``@time:2023``,
``@time:month-05``). A question reaches them by naming a date the way people do:
"in May 2023", "on 14 May 2023", "May 14, 2023", "in 2022", "last May", "yesterday",
"last week", "two weeks ago", "2023年5月", "5月14日", "去年", "上周", "三天前" — each becomes
the cue terms of that day, week, month or year, relative ones counted from the recall's
time. Dates relative to another event ("two weeks before the wedding") are not resolved here:
the event's own words find it, and its date is on the item.
Pure functions, no IO.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

_US_PER_DAY = 86_400 * 1_000_000
MONTHS = {name: n for n, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")), 1) for name in names}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
            "九": 9, "十": 10, "几": None}
_MONTH_NAME = (r"(january|february|march|april|may|june|july|august|september|october|november|december|"
               r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?")
_EN_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_NAME},?\s+(\d{{4}})\b", re.I)
_EN_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH_NAME}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_EN_MONTH_YEAR = re.compile(rf"\b{_MONTH_NAME},?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_EN_LAST_MONTH_NAME = re.compile(rf"\b(?:last|this past|past)\s+{_MONTH_NAME}(?!\w)", re.I)
_EN_IN_MONTH = re.compile(rf"\b(?:in|during|since|early|late|mid|mid-)\s+{_MONTH_NAME}(?!\w)(?!,?\s*(?:of\s+)?\d{{4}})",
                          re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")
_YEAR = re.compile(r"(?:\b(?:in|of|during|since|year)\s+|(?<!\d))((?:19|20)\d{2})(?:\s*年|\b)", re.I)
_ZH_DATE = re.compile(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?")
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(day|week|month|year)s?\s+ago\b",
                  re.I)
_ZH_AGO = re.compile(r"(\d+|[一两二三四五六七八九十])\s*(天|周|个星期|星期|个月|年)(?:以)?前")
_RELATIVE = {  # phrase → (unit, how many back)
    "yesterday": ("day", 1), "today": ("day", 0), "last week": ("week", 1), "this week": ("week", 0),
    "last month": ("month", 1), "this month": ("month", 0), "last year": ("year", 1), "this year": ("year", 0),
    "昨天": ("day", 1), "前天": ("day", 2), "今天": ("day", 0), "上周": ("week", 1), "上星期": ("week", 1),
    "上个星期": ("week", 1), "本周": ("week", 0), "这周": ("week", 0), "上个月": ("month", 1), "上月": ("month", 1),
    "这个月": ("month", 0), "本月": ("month", 0), "去年": ("year", 1), "今年": ("year", 0), "前年": ("year", 2),
}
_RELATIVE_RE = re.compile("|".join(sorted(map(re.escape, _RELATIVE), key=len, reverse=True)), re.I)
_ZH_UNITS = {"天": "day", "周": "week", "个星期": "week", "星期": "week", "个月": "month", "年": "year"}


@lru_cache(maxsize=4096)
def day_values(day_number: int) -> tuple[str, ...]:
    """The time cue values of a day (days since 1970-01-01): day, week, month, year, month-of-year."""
    day = datetime.fromtimestamp(day_number * 86_400, UTC).date()
    year, week, _ = day.isocalendar()
    return day.isoformat(), f"{year}-W{week:02d}", f"{day.year}-{day.month:02d}", str(day.year), \
        f"month-{day.month:02d}"


def _day(d: date) -> str:
    return d.isoformat()


def _week(d: date) -> str:
    year, week, _ = d.isocalendar()
    return f"{year}-W{week:02d}"


def _month(year: int | None, month: int) -> str:
    return f"{year}-{month:02d}" if year else f"month-{month:02d}"


def _valid(year: int | None, month: int, day: int | None = None) -> bool:
    try:
        date(year or 2000, month, day or 1)
        return True
    except ValueError:
        return False


def _back(now: date, unit: str, n: int) -> str:
    if unit == "day":
        return _day(now - timedelta(days=n))
    if unit == "week":
        return _week(now - timedelta(weeks=n))
    if unit == "month":
        total = now.year * 12 + now.month - 1 - n
        return _month(total // 12, total % 12 + 1)
    return str(now.year - n)


def query_time_values(text: str | None, now_us: int) -> list[str]:
    """The time cue values a question names (see the module docstring), in order found."""
    if not text or not any(ch.isdigit() for ch in text) and not _has_time_words(text):
        return []
    now = datetime.fromtimestamp(now_us / 1_000_000, UTC).date()
    found: list[str] = []
    for m in _ISO.finditer(text):
        year, month, day = int(m.group(1)), int(m.group(2)), m.group(3)
        _add_date(found, year, month, int(day) if day else None)
    for m in _EN_DAY_MONTH_YEAR.finditer(text):
        _add_date(found, int(m.group(3)), MONTHS[m.group(2).lower()], int(m.group(1)))
    for m in _EN_MONTH_DAY_YEAR.finditer(text):
        _add_date(found, int(m.group(3)), MONTHS[m.group(1).lower()], int(m.group(2)))
    for m in _EN_MONTH_YEAR.finditer(text):
        found.append(_month(int(m.group(2)), MONTHS[m.group(1).lower()]))
    for m in _EN_LAST_MONTH_NAME.finditer(text):
        month = MONTHS[m.group(1).lower()]
        found.append(_month(now.year if month < now.month else now.year - 1, month))
    for m in _EN_IN_MONTH.finditer(text):
        if m.group(1).lower() != "may" or m.group(0).lower().startswith(("in may", "during may", "since may")):
            found.append(_month(None, MONTHS[m.group(1).lower()]))
    for m in _ZH_DATE.finditer(text):
        year, month, day = (int(g) if g else None for g in m.groups())
        _add_date(found, year, month, day)
    for m in _YEAR.finditer(text):
        found.append(m.group(1))
    for m in _RELATIVE_RE.finditer(text):
        found.append(_back(now, *_RELATIVE[m.group(0).lower()]))
    for m in _AGO.finditer(text):
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1).lower()]
        found.append(_back(now, m.group(2).lower(), n))
    for m in _ZH_AGO.finditer(text):
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1)]
        if n is not None:
            found.append(_back(now, _ZH_UNITS[m.group(2)], n))
    return list(dict.fromkeys(found))


def _add_date(found: list[str], year: int | None, month: int, day: int | None) -> None:
    if not _valid(year, month, day):
        return
    if day and year:
        found.append(f"{year}-{month:02d}-{day:02d}")
    found.append(_month(year, month))


_TIME_WORDS = re.compile(r"yesterday|today|last|this|ago|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|"
                         r"天|周|星期|月|年", re.I)


def _has_time_words(text: str) -> bool:
    return _TIME_WORDS.search(text) is not None
