#!/usr/bin/env bash
# The manual pages (man/): each one renders without a warning, and says
# what it must (ctest: man_lint, label docs).
#
# usage: tools/check_man.sh DEMO
#
# - `mandoc -T lint -W warning` and `groff -ww -mdoc -z` print nothing for
#   every page (either one that is missing is a failure: tools/deps.sh
#   installs mandoc; groff comes with man-db);
# - the SYNOPSIS of stackcap.3 has every function that include/stackcap.h
#   declares SC_EXTERN (the wrappers of the *_sz functions stand for
#   them), stackcap_check.3's every one of include/stackcap/check.h, and
#   stackcap_host.3's every one of include/stackcap/host.h;
# - stackcap-demo.1 has an entry (.It Cm NAME) for every scenario and
#   explorer body that `DEMO --help` lists, and every option (--name) of
#   it.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=${1:?usage: tools/check_man.sh DEMO}
pages=(man/stackcap.3 man/stackcap_check.3 man/stackcap_host.3
	man/stackcap_testing.3 man/stackcap-demo.1)
fails=0

fail() {
	echo "check_man: $*" >&2
	fails=$((fails + 1))
}

for tool in mandoc groff; do
	command -v "$tool" >/dev/null ||
		{ echo "check_man: $tool not found (tools/deps.sh)" >&2; exit 1; }
done
for page in "${pages[@]}"; do
	out=$(mandoc -T lint -W warning "$page" 2>&1) ||
		fail "$page: mandoc -T lint -W warning failed"
	[ -z "$out" ] || fail "$page: mandoc: $out"
	out=$(groff -ww -mdoc -z "$page" 2>&1) ||
		fail "$page: groff -ww -mdoc -z failed"
	[ -z "$out" ] || fail "$page: groff: $out"
done

# The functions a header declares SC_EXTERN, *_sz as the wrapper's name.
exported() {
	sed -n 's/^SC_EXTERN[^(]*[ *\t]\([a-z_][a-z_0-9]*\)(.*/\1/p' "$1" |
	    sed 's/_sz$//' | sort -u
}
for pair in include/stackcap.h:man/stackcap.3 \
    include/stackcap/check.h:man/stackcap_check.3 \
    include/stackcap/host.h:man/stackcap_host.3; do
	hdr=${pair%%:*} page=${pair#*:}
	synopsis=$(sed -n '/^\.Sh SYNOPSIS/,/^\.Sh /p' "$page")
	for fn in $(exported "$hdr"); do
		grep -qE "^\.Fn $fn( |$)" <<<"$synopsis" ||
			fail "$page: SYNOPSIS lacks $fn (declared in $hdr)"
	done
done

help=$("$demo" --help)
names=$(sed -n '/^Scenarios:/,$p' <<<"$help" |
	awk '/^  [a-z0-9-]+ / { print $1 }' | sort -u)
[ -n "$names" ] || fail "$demo --help lists no scenario"
for name in $names; do
	grep -qx "\.It Cm $name" man/stackcap-demo.1 ||
		fail "man/stackcap-demo.1: no entry for the scenario $name"
done
for opt in $(grep -oE -- '--[a-z][a-z-]+' <<<"$help" | sort -u); do
	grep -qE "^\.(It|Op) Fl ${opt#-}( |$)" man/stackcap-demo.1 ||
		fail "man/stackcap-demo.1: no entry for the option $opt"
done
[ "$fails" -eq 0 ] || exit 1
echo "check_man: ${#pages[@]} pages, no warning"
