#!/bin/sh
# A set-uid or set-gid program linked with libdwconv must not load a module from a
# DWCONV_MODULE_PATH its user chose (it would run their code with the program's
# rights): the loader reads the variable through secure_getenv, as the dynamic loader
# treats LD_LIBRARY_PATH. The same probe without the set-gid bit is the control: there
# the variable is honoured. Needs root (to set the bit for another group) and a file
# system that honours set-gid bits; skips (77) otherwise.
set -u
: "${abs_top_builddir:?}"
probe="$abs_top_builddir/tests/setuid_probe"
fake="$abs_top_builddir/tests/modules/.libs/fake_nodevice_cuda.so"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a set-gid copy"; exit 77; }
[ -x "$probe" ] && [ -f "$fake" ] || { echo "FAIL: $probe or $fake was not built"; exit 1; }
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/modules"
ln -s "$fake" "$work/modules/dwconv_cuda.so"
cp "$probe" "$work/plain"
cp "$probe" "$work/setgid"
chgrp nogroup "$work/setgid" 2>/dev/null || chgrp 65534 "$work/setgid" || exit 1
chmod g+s "$work/setgid"
if ! ls -l "$work/setgid" | cut -c7 | grep -q s; then
    echo "SKIP: $work does not keep set-gid bits"; exit 77
fi
if command -v findmnt >/dev/null && findmnt -no OPTIONS --target "$work" | grep -q nosuid; then
    echo "SKIP: $work is on a file system mounted nosuid"; exit 77
fi
run() { DWCONV_MODULE_PATH="$work/modules" "$work/$1"; }
plain=$(run plain) || { echo "FAIL: the plain probe failed: $plain"; exit 1; }
echo "plain:  $plain"
case "$plain" in *"path=$work/modules/"*) ;; *)
    echo "FAIL: the control did not load the module from DWCONV_MODULE_PATH"; exit 1;; esac
setgid=$(run setgid) || { echo "FAIL: the set-gid probe failed: $setgid"; exit 1; }
echo "setgid: $setgid"
case "$setgid" in *"path=$work/modules/"*)
    echo "FAIL: a set-gid program loaded a module from the user's DWCONV_MODULE_PATH"; exit 1;; esac
echo "PASS: DWCONV_MODULE_PATH is ignored in a set-gid program"
