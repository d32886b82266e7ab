"""The login page says where the demo's operator token is."""

from __future__ import annotations

from services.green.ui.templating import templates


def test_the_login_page_says_where_the_demo_keeps_the_token():
    html = templates.env.get_template("login.html").render(next="/ui", error=None)
    assert "cat data/compose/operator-token" in html
    assert "GREEN_API_TOKEN_FILE" in html
