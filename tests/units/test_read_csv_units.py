"""Issue 21: read_csv(units=true) reads columns named like "speed [km/h]" as quantities (named
"speed"), checked against pint's own conversion; without `use units` or units=true it says what to do."""

import subprocess
import sys

import pint


def _run(tmp_path, source):
    (tmp_path / "d.csv").write_text("t [s],h [cm],speed [km / h],name\n0,0,36,a\n1,490.5,72,b\n")
    (tmp_path / "p.apsi").write_text(source)
    return subprocess.run([sys.executable, "-m", "apsi", "p.apsi"], cwd=tmp_path, capture_output=True,
                          text=True)


def test_rows_and_columns_become_quantities(tmp_path):
    p = _run(tmp_path, "use nn\nuse units\nlet rows = read_csv(\"d.csv\", units=true)\n"
                       "print(magnitude(rows[1].h, \"m\"), magnitude(rows[0].speed, \"m/s\"), rows[1].name)\n"
                       "let c = read_csv(\"d.csv\", units=true, as=\"columns\")\n"
                       "print(magnitude(c.speed, \"m/s\").tolist(), unit_of(c.t))\n")
    assert p.returncode == 0, p.stderr
    first, second = p.stdout.splitlines()
    ureg = pint.UnitRegistry()
    h, v = first.split()[:2]
    assert float(h) == ureg.Quantity(490.5, "cm").to("m").magnitude
    assert float(v) == ureg.Quantity(36, "km/h").to("m/s").magnitude
    assert first.endswith(" b")
    assert second.startswith(str([ureg.Quantity(x, "km/h").to("m/s").magnitude for x in (36, 72)]))


def test_the_messages_say_what_to_do(tmp_path):
    p = _run(tmp_path, "use nn\nprint(read_csv(\"d.csv\", units=true))\n")
    assert p.returncode == 1 and "add `use units` to the program first" in p.stderr
    p = _run(tmp_path, "print(read_csv(\"d.csv\"))\n")
    assert p.returncode == 1 and 'the header "t [s]" names a unit: read the file with read_csv(path, ' \
                                 'units=true)' in p.stderr
    p = _run(tmp_path, "use units\nprint(read_csv(\"d.csv\", units=true, header=false))\n")
    assert p.returncode == 1 and "it needs header=true" in p.stderr
    assert 'File "' not in p.stderr
