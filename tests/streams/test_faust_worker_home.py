"""``hindbrain worker --engine faust`` under a home folder that does not exist yet (round thirty-two).

Faust makes its datadir (``<home>/faust``) when the app first starts, with ``mkdir(exist_ok=True)`` and no parents:
a first worker under a new home stopped at once with ``FileNotFoundError``. No broker is needed: the directories are
made in the app's first-start step, before it connects."""

from types import SimpleNamespace


def test_the_faust_worker_starts_under_a_home_that_does_not_exist_yet(tmp_path):
    from hindbrain.settings import Settings
    from hindbrain.streams.worker import make_app

    home = tmp_path / "new" / "brain"
    app = make_app(Settings(kafka="127.0.0.1:1", home=home), warehouse=SimpleNamespace(url="http://unused"))
    app._create_directories()  # what Faust's ``on_first_start`` runs first (faust/app/base.py)
    assert app.conf.datadir.is_dir() and app.conf.datadir.parent == home
