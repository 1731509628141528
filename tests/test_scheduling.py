"""tests/scheduling.py: the order `make test`'s workers take the scopes in."""

from scheduling import heaviest_first, scope_of

IDS = ["a.py::t1", "a.py::t2", "b.py::C::t1", "b.py::C::t2[x]", "b.py::t3", "c.py::t1", "c.py::t2", "c.py::t3",
       "d.py::t1"]


def test_scopes_are_xdists_class_or_module():
    assert [scope_of(i) for i in ("a.py::t1", "b.py::C::t2[x]", "b.py::t3")] == ["a.py", "b.py::C", "b.py"]


def test_listed_scopes_go_first_by_seconds_then_the_rest_by_size_and_each_stays_whole_and_in_order():
    order = [IDS[i] for i in heaviest_first(IDS, {"d.py": 50.0, "b.py::C": 10.0})]
    assert order == ["d.py::t1", "b.py::C::t1", "b.py::C::t2[x]", "c.py::t1", "c.py::t2", "c.py::t3",
                     "a.py::t1", "a.py::t2", "b.py::t3"]
    assert sorted(heaviest_first(IDS, {})) == list(range(len(IDS)))  # a permutation: nothing lost or doubled
