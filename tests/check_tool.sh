#!/bin/sh
# The dwconv tool's command line: every bad flag is a usage error (exit 2, as the man
# page says) with one line on stderr that starts "dwconv bench:" and names the flag;
# values an int cannot hold are refused, not truncated (--repeat 3000000000 used to
# become a negative count, --device 4294967296 device 0); --json prints one object
# that a JSON parser accepts, without inf or nan; both man pages and docs/api.md
# name every environment variable the code reads.
set -u
tool="${abs_top_builddir:-.}/tools/dwconv"
[ -x "$tool" ] || { echo "check_tool: $tool not built" >&2; exit 99; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
failures=0
# a flag that is not refused may start a long run (a truncated --warmup): bound it
limit=
command -v timeout >/dev/null && limit="timeout 60"

# expect RC STDERR-PREFIX ARGS...: the exit status and the one-line message's start
expect() {
    want_rc=$1 want_err=$2
    shift 2
    $limit "$tool" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    first=$(head -n1 "$tmp/err")
    case "$first" in
        "$want_err"*) prefix_ok=1 ;;
        *) prefix_ok=0 ;;
    esac
    one_line_ok=1
    case "$want_err" in "dwconv bench:"*) [ "$lines" = 1 ] || one_line_ok=0 ;; esac
    if [ "$rc" != "$want_rc" ] || [ "$prefix_ok" != 1 ] || [ "$one_line_ok" != 1 ]; then
        echo "FAIL: dwconv $*: exit $rc (want $want_rc), stderr ($lines lines):" >&2
        sed 's/^/    /' "$tmp/err" >&2
        echo "    (want a first line starting '$want_err', one line for dwconv bench)" >&2
        failures=$((failures + 1))
    else
        echo "ok: dwconv $* -> $rc: $first"
    fi
}

expect 2 "dwconv bench: --repeat '3000000000' is not an integer" bench --repeat 3000000000
expect 2 "dwconv bench: --device '4294967296' is not an integer" bench --device 4294967296
expect 2 "dwconv bench: --threads '-1' is not an integer" bench --threads -1
expect 2 "dwconv bench: --warmup '99999999999' is not an integer" bench --warmup 99999999999
expect 2 "dwconv bench: --length '12x' is not an integer" bench --length 12x
expect 2 "dwconv bench: --stride '99999999999999999999' is not an integer" bench --stride 99999999999999999999
expect 2 "dwconv bench: --dtype 'f64' is not one of" bench --dtype f64
expect 2 "dwconv bench: unknown or ambiguous option '--no-such-flag'" bench --no-such-flag
expect 2 "dwconv bench: unknown option '-x'" bench -x
expect 2 "dwconv bench: --repeat needs a value" bench --repeat
expect 2 "dwconv bench: unexpected argument 'extra'" bench extra
expect 2 "dwconv bench: invalid problem:" bench --backend cpu --length 3 --kernel-size 9 --pad 0
expect 2 "dwconv info takes no arguments" info extra
expect 2 "usage: dwconv"
expect 2 "dwconv: unknown command 'frobnicate'" frobnicate
expect 0 "" bench --help

# --json: one line, a valid object, no inf/nan anywhere
$limit "$tool" bench --backend cpu --batch 1 --channels 2 --length 16 --repeat 3 --warmup 1 --json \
    >"$tmp/json" 2>"$tmp/err"
rc=$?
if [ "$rc" != 0 ] || [ "$(wc -l <"$tmp/json")" != 1 ] || grep -Eiq '(^|[^a-z_])(inf|nan)([^a-z_]|$)' "$tmp/json"; then
    echo "FAIL: bench --json: exit $rc, output:" >&2
    cat "$tmp/json" "$tmp/err" >&2
    failures=$((failures + 1))
elif command -v python3 >/dev/null &&
     ! python3 -c 'import json, sys; json.loads(sys.stdin.read())' <"$tmp/json"; then
    echo "FAIL: bench --json is not JSON: $(cat "$tmp/json")" >&2
    failures=$((failures + 1))
else
    echo "ok: bench --json: $(cut -c1-100 "$tmp/json")..."
fi

# the man pages and docs/api.md name every variable the library and the tool read
src=${srcdir:-.}
if [ -f "$src/docs/dwconv.1" ]; then
    vars=$(grep -rhoE 'getenv\("[A-Z_]+"\)' "$src/src" "$src/tools" | sed 's/.*("\(.*\)")/\1/' | sort -u)
    [ -n "$vars" ] || { echo "FAIL: no getenv calls found under $src/src" >&2; failures=$((failures + 1)); }
    for v in $vars; do
        for doc in docs/dwconv.1 docs/dwconv.3 docs/api.md; do
            if grep -qw "$v" "$src/$doc"; then :; else
                echo "FAIL: $doc does not mention $v, which the code reads" >&2
                failures=$((failures + 1))
            fi
        done
    done
    echo "ok: docs name $(echo $vars)"
fi

[ "$failures" = 0 ] || { echo "check_tool: $failures failure(s)" >&2; exit 1; }
