"""Shared storage: paths stay inside it, documents are written whole."""

from __future__ import annotations

import json

import pytest

from gpu_service.errors import ValidationFailed
from gpu_service.storage import inside_storage, write_json_atomically


def test_a_relative_path_resolves_inside_storage(tmp_path):
    assert inside_storage(path="datasets/a", storage=tmp_path) == tmp_path / "datasets" / "a"


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside", "datasets/../../outside"])
def test_a_path_that_leaves_storage_is_refused_naming_the_field(tmp_path, path):
    with pytest.raises(ValidationFailed) as refused:
        inside_storage(path=path, storage=tmp_path / "storage", field="dataset")
    assert refused.value.details == {"field": "dataset", "path": path}


def test_a_symlink_out_of_storage_is_refused(tmp_path):
    storage = tmp_path / "storage"
    storage.mkdir()
    (storage / "link").symlink_to(tmp_path)
    with pytest.raises(ValidationFailed):
        inside_storage(path="link/secret", storage=storage)


def test_a_json_document_replaces_the_old_one_whole_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "results.json"
    target.write_text('{"old": true}')
    write_json_atomically(target, {"b": 1, "a": 2}, sort_keys=True)
    assert json.loads(target.read_text()) == {"a": 2, "b": 1}
    assert target.read_text().index('"a"') < target.read_text().index('"b"')
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
