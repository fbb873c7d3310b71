"""Maps, sets, spreads and JSON are attack surface too: nothing of Python's dict machinery, no dunder
names smuggled into records or keyword arguments, no NumPy protocol honoured on a map."""

import pytest

from apsi_lang import permissions, run_source
from apsi_lang.errors import ApsiError, ApsiSyntaxError


@pytest.fixture
def run(tmp_path, capsys):
    old = permissions.current()

    def run(src):
        run_source(src, filename=str(tmp_path / "t.apsi"), grants=permissions.Grants(project_root=tmp_path))
        return capsys.readouterr().out
    yield run
    permissions.set_current(old)


@pytest.mark.parametrize("src", [
    'let m = {"a": 1}\nm.__class__',
    'let m = {"a": 1}\nm._x',
    'let r = {__class__: 1}',
    'let m = {:}\nprint(m.__dict__)',
])
def test_dunder_names_are_refused_at_compile_time(run, src):
    with pytest.raises(ApsiSyntaxError, match="reserved"):
        run(src)


@pytest.mark.parametrize("src, message", [
    ('let r = {...{"__class__": 1}}', "spreads another record, not a map"),
    ('fn f(**kw): return kw\nf(**{"__init__": 1})', "not a keyword argument name"),
    ('print(**{"_x": 1})', "not a keyword argument name"),
])
def test_dunder_keys_cannot_become_names(run, src, message):
    with pytest.raises(ApsiError, match=message):
        run(src)


def test_dunder_keys_stay_plain_keys(run):
    out = run('let m = {"__class__": 1, "__array_interface__": 2}\nprint(m, m["__class__"], len(m))')
    assert out == '{"__class__": 1, "__array_interface__": 2} 1 2\n'


@pytest.mark.parametrize("proto", ["__array_interface__", "__array__", "__array_struct__",
                                   "__array_priority__"])
def test_numpy_protocols_are_not_honoured_on_maps(run, proto):
    src = (f'use nn\nlet m = {{"{proto}": {{"shape": [1], "typestr": "<f8", "data": [0, false]}}}}\n'
           "array(m)")
    with pytest.raises(ApsiError, match="array: "):
        run(src)


def test_json_objects_are_maps_not_records(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.json").write_text('{"__class__": {"__init__": 1}}')
    out = run('let v = read_json("x.json")\nprint(type(v), v["__class__"]["__init__"])')
    assert out == "map 1\n"


def test_csv_headers_cannot_name_private_fields(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").write_text("__class__,b\n1,2\n")
    with pytest.raises(ApsiError, match="is not a field name"):
        run('read_csv("x.csv")')


def test_map_views_and_sets_print_the_apsi_way(run):
    out = run('let m = {"a": true}\nprint(m.keys(), m.values(), m.items(), set([none]), {:})')
    assert out == '["a"] [true] [("a", true)] set([none]) {:}\n'
    assert "0x" not in out


def test_set_is_a_function_not_a_type(run):
    from apsi_lang.builtins import BUILTINS

    assert not isinstance(BUILTINS["set"], type)
    assert run("print(type(set), set([2, 1]))") == "function set([1, 2])\n"
