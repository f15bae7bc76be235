"""Release order of target branches."""

from backport.config.model import nearest_first, newer, newest_first

TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")


def test_newest_first_orders_versions_numerically() -> None:
    assert newest_first(TARGETS) == ["master", "v2.12.0", "v2.11.0", "v2.7.1"]
    assert newest_first(["v2.7.1-7.2.0", "main", "dev", "v2.10.0"]) == [
        "main", "v2.10.0", "v2.7.1-7.2.0", "dev"]


def test_nearest_first_prefers_the_newer_neighbour_on_a_tie() -> None:
    assert nearest_first("v2.7.1", TARGETS) == ["v2.11.0", "v2.12.0", "master"]
    assert nearest_first("v2.11.0", TARGETS) == ["v2.12.0", "v2.7.1", "master"]
    assert nearest_first("master", TARGETS) == ["v2.12.0", "v2.11.0", "v2.7.1"]


def test_newer_follows_the_release_order() -> None:
    assert newer("master", "v2.12.0") and newer("v2.11.0", "v2.7.1")
    assert not newer("v2.7.1", "v2.11.0") and not newer("v2.11.0", "v2.11.0")
    assert newer("v2.7.1", "dev") and not newer("dev", "other")
