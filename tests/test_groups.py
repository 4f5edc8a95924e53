"""The xdist groups of tests/conftest.py: a part of a file (PARTS) names
tests that exist and shares no module fixture with the rest of its file
(each worker would compute it), and the costliest groups (COSTLIEST) are
groups."""
from pathlib import Path

import pytest


@pytest.fixture
def conftest(request):
    """tests/conftest.py as pytest loaded it (`import conftest` gets
    whichever of the suite's conftest.py files was imported last)."""
    return request.config.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))


def test_parts_name_tests_that_share_no_fixture_with_the_rest_of_their_file(request, conftest):
    items = request.session.items
    functions, users = set(), {}
    for item in items:
        path, group = item.nodeid.split("::")[0], conftest.group_of(item.nodeid)
        functions.add((path, getattr(item, "originalname", item.name)))
        for fixture in conftest.shared_fixtures(item):
            users.setdefault((path, fixture), set()).add(group)
    shared = {(path, name): sorted(groups) for (path, (name, _)), groups in users.items()
              if len(groups) > 1}
    assert not shared, f"parts of a file that share a fixture (give its users one part): {shared}"
    collected = {path for path, _ in functions}
    missing = [(path, f) for path, parts in conftest.PARTS.items() if path in collected
               for fs in parts.values() for f in fs if (path, f) not in functions]
    assert not missing, f"tests/conftest.py's PARTS names tests that do not exist: {missing}"


def test_group_of_keeps_files_whole_but_their_parts_and_deploy_in_one(conftest):
    assert conftest.group_of("tests/gpcore/test_fitter.py::test_x[a-b]") == "tests/gpcore/test_fitter.py"
    assert conftest.group_of("tests/deploy/test_dockerfile.py::test_x") == "tests/deploy"
    assert conftest.group_of("tests/deploy/test_packaging.py::test_y") == "tests/deploy"
    path, parts = next(iter(conftest.PARTS.items()))
    part, functions = next(iter(parts.items()))
    assert conftest.group_of(f"{path}::{functions[0]}[p]") == f"{path}::{part}"
    assert conftest.group_of(f"{path}::test_not_in_a_part") == path


def test_the_costliest_groups_are_groups(request, conftest):
    groups = {conftest.group_of(item.nodeid) for item in request.session.items}
    if len(groups) > 50:  # the whole suite collected
        assert set(conftest.COSTLIEST) <= groups, set(conftest.COSTLIEST) - groups
