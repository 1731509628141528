"""The switch interval a brain sets (hindbrain/switching.py): only ever shorter, 0 leaves it."""

from __future__ import annotations

import sys

import pytest

from hindbrain import Brain
from hindbrain.switching import shorten_switch_interval


@pytest.fixture
def interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_shortens_never_lengthens(interval):
    assert shorten_switch_interval(0) == 0.005  # 0: the interpreter's is left
    assert shorten_switch_interval(1.0) == pytest.approx(0.001)
    assert shorten_switch_interval(2.0) == pytest.approx(0.001)  # a process's shorter choice stands
    assert shorten_switch_interval(0.5) == pytest.approx(0.0005)


def test_a_brain_sets_its_default_and_the_setting_turns_it_off(interval, tmp_path, monkeypatch):
    with Brain.open(tmp_path / "a"):
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    sys.setswitchinterval(0.005)
    monkeypatch.setenv("HINDBRAIN_SWITCH_INTERVAL_MS", "0")
    with Brain.open(tmp_path / "b"):
        assert sys.getswitchinterval() == 0.005
