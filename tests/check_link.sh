#!/bin/sh
# The shared library's link surface: libdwconv.so exports exactly the functions that
# include/dwconv.h declares (all named dwconv_*), and neither it nor the dwconv tool
# depends on a GPU library, so a CUDA- or HIP-enabled build still loads where no GPU
# driver is installed (the modules are dlopen'ed; see tests/check_loader.c).
# Skips (77) only when the shared library was not built (--disable-shared).

top=${abs_top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
lib=$top/src/.libs/libdwconv.so
if [ ! -f "$lib" ]; then
    echo "SKIP: $lib was not built (configured with --disable-shared?)"
    exit 77
fi

status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# ---- exports ----
exports=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u)
[ -n "$exports" ] || fail "nm -D finds no exported symbol in $lib"
stray=$(printf '%s\n' "$exports" | grep -v '^dwconv_')
[ -z "$stray" ] || fail "$lib exports symbols outside dwconv_*:" $stray

header=${srcdir:+$srcdir/include/dwconv.h}
if [ ! -f "$header" ]; then
    header=$(sed -n 's/^abs_top_srcdir = //p' "$top/Makefile")/include/dwconv.h
fi
if [ -f "$header" ]; then
    declared=$(sed -n 's/^DWCONV_API.*[ *]\(dwconv_[a-z0-9_]*\)(.*/\1/p' "$header" | sort -u)
    [ -n "$declared" ] || fail "no DWCONV_API function found in $header"
    missing=$(printf '%s\n' "$declared" | grep -vxF "$exports")
    extra=$(printf '%s\n' "$exports" | grep -vxF "$declared")
    [ -z "$missing" ] || fail "declared in dwconv.h but not exported:" $missing
    [ -z "$extra" ] || fail "exported but not declared in dwconv.h:" $extra
else
    fail "cannot find include/dwconv.h (srcdir=$srcdir)"
fi

# ---- no GPU library, directly or through another library ----
gpu_libs='lib(cuda|cudart|nvrtc|nvidia-ml|amdhip64|hiprtc|hsa-runtime64|amd_comgr)[.-]'
check_no_gpu() {
    needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    [ -n "$needed" ] || fail "readelf -d shows no NEEDED entry in $1"
    bad=$(printf '%s\n' "$needed" | grep -E "$gpu_libs")
    [ -z "$bad" ] || fail "$1 needs a GPU library:" $bad
    bad=$(ldd "$1" 2>&1 | grep -E "$gpu_libs")
    [ -z "$bad" ] || fail "$1 pulls in a GPU library: $bad"
    bad=$(nm -D --undefined-only "$1" | awk '{ print $NF }' | grep -E '^(cuda|hip|hsa|cu[A-Z])')
    [ -z "$bad" ] || fail "$1 refers to GPU runtime symbols:" $bad
}
check_no_gpu "$lib"
tool=$top/tools/.libs/dwconv
[ -f "$tool" ] || tool=$top/tools/.libs/lt-dwconv
if [ -f "$tool" ] && readelf -h "$tool" >/dev/null 2>&1; then
    check_no_gpu "$tool"
fi

[ $status -eq 0 ] && echo "PASS: $lib exports" $(printf '%s\n' "$exports" | wc -l) \
    "dwconv_* functions and needs no GPU library"
exit $status
