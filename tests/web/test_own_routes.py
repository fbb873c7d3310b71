"""The server's own routes are one table (web/own_routes.py): docs/web.md's table, serve_model's and
serve's refusals of those paths and the apps' routes are read from it or held against it."""

from pathlib import Path

import pytest

from apsi_layers.web import own_routes

DOC = (Path(__file__).resolve().parents[2] / "docs" / "web.md").read_text()


def test_docs_list_every_own_route_of_serve_model():
    documented = [line.split("`")[1].split()[1] for line in DOC.splitlines() if line.startswith("| `GET /")]
    assert documented == list(own_routes.paths("model"))


def test_serve_leaves_its_users_every_path_but_metrics():
    from apsi_layers.web.routes_app import OWN

    assert OWN == own_routes.paths("routes") == ("/metrics",)


def test_an_app_without_a_handler_for_its_row_stops_at_start_up():
    with pytest.raises(KeyError, match="/info"):
        own_routes.bind("model", {"/health": print, "/metrics": print})
    assert own_routes.bind("routes", {"/metrics": print}) == [("/metrics", print)]
