"""Finding the library: DWCONV_LIBRARY, and an error naming every place tried."""
import os
import subprocess
import sys

import dwconv


def run(code, **env):
    e = os.environ.copy()
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=120)


def test_loaded_library():
    assert dwconv.library_version().startswith("0.")
    assert os.path.exists(dwconv.library_path())


def test_missing_library_names_where_it_looked(tmp_path):
    missing = str(tmp_path / "nowhere" / "libdwconv.so.0")
    r = run("import dwconv, torch\n"
            "dwconv.conv1d(torch.zeros(1, 1, 4), torch.zeros(1, 1, 1))",
            DWCONV_LIBRARY=missing)
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr and "cannot load libdwconv" in r.stderr
    assert f"{missing} (DWCONV_LIBRARY): no such file" in r.stderr


def test_search_order_without_the_variable(tmp_path):
    code = ("import dwconv._lib as L\n"
            "for path, origin in L.candidates(): print(origin, '|', path)")
    env = {k: v for k, v in os.environ.items() if k != "DWCONV_LIBRARY"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    origins = [line.split(" | ")[0] for line in r.stdout.splitlines()]
    assert origins[0] == "the build tree around this package"
    assert "sys.prefix" in origins and "the system loader" in origins
    assert origins.index("sys.prefix") < origins.index("the system loader")
