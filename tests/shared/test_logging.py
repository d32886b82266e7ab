"""The log router: one file per task key, inside the run folder."""

from services.shared.logging import LogRouter


def test_a_log_key_from_a_peer_cannot_leave_the_run_folder(tmp_path):
    router = LogRouter(tmp_path / "run", echo=None)
    router.write("../../escape", "line")
    router.write("arvo_10055", "ok")
    router.close_all()
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "_.._escape.log",
        "arvo_10055.log",
    ]
    assert not (tmp_path / "escape.log").exists()
