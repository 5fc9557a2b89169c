#!/bin/sh
# `pip install ./python` works: the package, installed by pip into a scratch folder (no
# build isolation, no dependencies: nothing is fetched), imported from there, not from
# the source tree, finds the library through DWCONV_LIBRARY and convolves a NumPy
# array; a DWCONV_LIBRARY that names no file is refused with an error naming it. Skips
# (77) where configure's Python lacks pip, setuptools or numpy.
top=${abs_top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
src=$(cd "${srcdir:-$(dirname "$0")/..}" && pwd)
py=${PYTHON:-python3}
[ "$py" = ":" ] && { echo "SKIP: configure found no Python"; exit 77; }
for module in pip setuptools numpy; do
    "$py" -c "import $module" >/dev/null 2>&1 || { echo "SKIP: $py cannot import $module"; exit 77; }
done
lib=$top/src/.libs/libdwconv.so.0
[ -f "$lib" ] || { echo "SKIP: $lib was not built"; exit 77; }
scratch=$(mktemp -d) || exit 1
trap 'rm -rf "$scratch"' EXIT
# pip builds in place; the source tree may be read-only (distcheck): build from a copy
cp -R "$src/python" "$scratch/src" && chmod -R u+w "$scratch/src" || exit 1
"$py" -m pip install -q --no-build-isolation --no-deps --no-compile --target "$scratch/site" \
    "$scratch/src" >"$scratch/pip.log" 2>&1 || { cat "$scratch/pip.log"; echo "FAIL: pip install"; exit 1; }
cd "$scratch" || exit 1
PYTHONPATH=$scratch/site DWCONV_LIBRARY=$lib "$py" - "$scratch/site" <<'PY' || exit 1
import os, sys
import numpy as np
import dwconv
site = os.path.realpath(sys.argv[1])
assert os.path.realpath(dwconv.__file__).startswith(site), f"imported {dwconv.__file__}, not pip's copy"
x = np.arange(2 * 3 * 10, dtype=np.float32).reshape(2, 3, 10) - 20
w = np.array([[1, 2, 3], [0.5, -1, 0.25], [0, 0, 1]], dtype=np.float32)
y = dwconv.conv1d(x, w, padding=1)
pad = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1)))
want = sum(pad[:, :, k:k + 10] * w[None, :, k, None] for k in range(3))
assert y.shape == (2, 3, 10) and np.allclose(y, want, rtol=1e-6, atol=1e-5), (y, want)
print("pip's copy of dwconv", dwconv.__version__ if hasattr(dwconv, "__version__") else "",
      "runs library", dwconv.library_version(), "from DWCONV_LIBRARY")
PY
PYTHONPATH=$scratch/site DWCONV_LIBRARY=$scratch/absent/libdwconv.so.0 "$py" - <<'PY' || exit 1
import numpy as np
import dwconv
try:
    dwconv.conv1d(np.ones((1, 2, 8), np.float32), np.ones((2, 3), np.float32))
except Exception as e:  # LibraryNotFoundError
    assert "absent/libdwconv.so.0" in str(e) and "DWCONV_LIBRARY" in str(e), str(e)
    print("a DWCONV_LIBRARY that names no file:", type(e).__name__, "naming it")
else:
    raise SystemExit("FAIL: a DWCONV_LIBRARY that names no file was not refused")
PY
