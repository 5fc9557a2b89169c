#!/bin/sh
# The Python package's tests: pytest on python/tests with this build's library
# (DWCONV_LIBRARY) and modules, the package taken from the source tree. Needs, in the
# Python configure found (or $PYTHON): pytest, numpy and torch >= 2.4
# (tools/install-python-deps installs them). Skips (77) only when one is missing, or
# the shared library was not built; pytest's own skips (no GPU) are listed with -rs.
top=${abs_top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
src=${srcdir:-$(dirname "$0")/..}
src=$(cd "$src" && pwd)
py=${PYTHON:-python3}

skip() {
    echo "SKIP: $*"
    echo "  (tools/install-python-deps installs them; then configure with the PYTHON it prints)"
    exit 77
}
[ "$py" = ":" ] && skip "configure found no Python 3.8+ (or ran with --disable-python)"
command -v "$py" >/dev/null 2>&1 || skip "no $py"
for module in pytest numpy torch; do
    "$py" -c "import $module" >/dev/null 2>&1 || skip "$py cannot import $module"
done
"$py" -c 'import sys, torch; v = tuple(int(p) for p in torch.__version__.split(".")[:2]); sys.exit(v < (2, 4))' ||
    skip "$py has torch $("$py" -c 'import torch; print(torch.__version__)'), older than 2.4"

lib=$top/src/.libs/libdwconv.so.0
[ -f "$lib" ] || skip "$lib was not built (configured with --disable-shared?)"
DWCONV_LIBRARY=$lib
DWCONV_MODULE_PATH=${DWCONV_MODULE_PATH:-$top/src/.libs/dwconv}
PYTHONPATH=$src/python${PYTHONPATH:+:$PYTHONPATH}
# the source tree may be read-only (make distcheck): no bytecode, no pytest cache
PYTHONDONTWRITEBYTECODE=1
export DWCONV_LIBRARY DWCONV_MODULE_PATH PYTHONPATH PYTHONDONTWRITEBYTECODE
cd "$top" || exit 1
exec "$py" -m pytest -p no:cacheprovider -q -rs "$src/python/tests"
