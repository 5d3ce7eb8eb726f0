#!/usr/bin/env bash
# The SVG pictures of the protocol's races (stackcap-demo --svg).
#
#   check_svg.sh DEMO OUTDIR            write OUTDIR/NAME.svg for every
#                                       scenario of DEMO --help
#   check_svg.sh --check DEMO OUTDIR DOCS
#                                       the same, then: the bad inputs fail
#                                       clearly; every picture of OUTDIR and
#                                       of DOCS/img renders with rsvg-convert
#                                       to a PNG of a sane size; DOCS/
#                                       protocol.md shows each scenario's
#                                       picture, and each one it shows exists
#
# The build's target protocol-svg runs the first form into docs/img/.  The
# committed pictures are not compared with new ones: times, addresses and
# the order of unrelated events change from run to run.  Exit 77 (ctest:
# skipped) when rsvg-convert is missing (Debian: librsvg2-bin, which
# tools/deps.sh installs).
set -euo pipefail

check=0
if [ "${1:-}" = "--check" ]; then
	check=1
	shift
fi
if [ $# -ne $((2 + check)) ]; then
	echo "usage: $0 DEMO OUTDIR | --check DEMO OUTDIR DOCS" >&2
	exit 2
fi
demo=$1
out=$2
docs=${3:-}

fail() {
	echo "check_svg.sh: $*" >&2
	exit 1
}

mkdir -p "$out"
names=$("$demo" --help | awk '/^Scenarios:/ { f = 1; next }
    /^$/ { f = 0 } f { print $1 }')
[ -n "$names" ] || fail "$demo --help lists no scenario"

for s in $names; do
	if ! "$demo" --scenario "$s" --svg "$out/$s.svg" >"$out/$s.log" 2>&1
	then
		cat "$out/$s.log" >&2
		fail "--scenario $s --svg failed"
	fi
	rm -f "$out/$s.log"
done
[ "$check" -eq 1 ] || exit 0

# Bad input: a clear message and exit status 2, no run.
expect_error() {
	local want=$1 status=0 msg
	shift
	msg=$("$demo" "$@" 2>&1 >/dev/null) || status=$?
	[ "$status" -eq 2 ] || fail "$* exits $status, not 2"
	case $msg in
	*"$want"*) ;;
	*) fail "$*: \"$msg\" does not say \"$want\"" ;;
	esac
}
expect_error "needs --scenario NAME" --svg "$out/x.svg"
expect_error "--svg $out/no/such/dir/x.svg: No such file or directory" \
    --scenario running --svg "$out/no/such/dir/x.svg"

if ! command -v rsvg-convert >/dev/null; then
	echo "check_svg.sh: rsvg-convert not found (Debian: librsvg2-bin):" \
	    "skipped" >&2
	exit 77
fi

# A PNG's width and height, from its IHDR chunk (bytes 16..23).
png_size() {
	od -An -tu1 -j16 -N8 "$1" | awk '{
	    printf "%d %d\n", (($1 * 256 + $2) * 256 + $3) * 256 + $4,
		(($5 * 256 + $6) * 256 + $7) * 256 + $8 }'
}

render() {
	local svg=$1 png w h
	png="$out/png/$(basename "${svg%.svg}")${2}.png"
	mkdir -p "$out/png"
	rsvg-convert -o "$png" "$svg" || fail "rsvg-convert cannot read $svg"
	[ -s "$png" ] || fail "$svg renders to an empty file"
	read -r w h < <(png_size "$png")
	if [ "$w" -lt 900 ] || [ "$w" -gt 4000 ] || [ "$h" -lt 250 ] ||
	    [ "$h" -gt 8000 ]; then
		fail "$svg renders ${w}x${h}: not a sane size"
	fi
}

for s in $names; do
	render "$out/$s.svg" ""
	[ -f "$docs/img/$s.svg" ] || fail "docs/img/$s.svg is missing" \
	    "(cmake --build --preset default --target protocol-svg)"
	render "$docs/img/$s.svg" ".docs"
	grep -q "](img/$s.svg)" "$docs/protocol.md" ||
	    fail "docs/protocol.md does not show img/$s.svg"
done
for f in $(grep -o '](img/[^)]*\.svg)' "$docs/protocol.md" |
    sed 's/^](img\///; s/)$//'); do
	[ -f "$docs/img/$f" ] || fail "docs/protocol.md shows img/$f," \
	    "which does not exist"
done
echo "check_svg.sh: $(echo "$names" | wc -l) scenarios drawn, rendered" \
    "(and their copies in docs/img)"
