"""Where clients find green's operator token (services/shared/operator_token.py)."""

from __future__ import annotations

from services.shared.operator_token import find_local_token


def test_clients_find_the_token_where_green_keeps_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_local_token({}) is None
    (tmp_path / "data" / "compose").mkdir(parents=True)
    (tmp_path / "data" / "compose" / "operator-token").write_text("from-compose\n")
    assert find_local_token({}) == "from-compose"
    (tmp_path / "data" / "operator-token").write_text("local\n")
    assert find_local_token({}) == "local"
    named = tmp_path / "named"
    named.write_text("named\n")
    assert find_local_token({"GREEN_API_TOKEN_FILE": str(named)}) == "named"
    assert find_local_token({"GREEN_API_TOKEN": "env", "GREEN_API_TOKEN_FILE": str(named)}) == "env"
