#!/bin/sh
# The HIP module carries code for every target in HIP_ARCHS: hipcc without
# --offload-arch silently builds for gfx803 only, and nothing else would notice.
# Skips (77) when this build has no HIP module.
so="$abs_top_builddir/src/hip/.libs/dwconv_hip.so"
[ -f "$so" ] || { echo "no HIP module in this build: skipped"; exit 77; }
status=0
for arch in $HIP_ARCHS; do
    if grep -aq "amdgcn-amd-amdhsa--$arch" "$so"; then
        echo "ok: code object for $arch"
    else
        echo "FAIL: no code object for $arch in $so"
        status=1
    fi
done
exit $status
