#!/usr/bin/env bash
# The style(9) rules that a machine can check, on src/, include/, tests/,
# tools/, bench/ and fuzz/ C sources: indentation by tabs (a continuation
# is tabs then up to 7 spaces), at most 80 columns with tabs of 8, no
# trailing white space, and a function definition's return type on a line
# of its own.  (clang-format cannot express style(9)'s continuation and
# alignment rules; HACKING.md says why there is no .clang-format.)
# Prints each violation as file:line: rule, exits 1 if there is one.
#
# Also, on every tracked file: nothing points outside the repository.  The
# project's requirements file and the seed review thread live outside it;
# what a reader needs from them is in docs/ (design.md: "Beyond the
# kernel", "Quality bars", "Names that stay").  A mention of that file, by
# its upper-case name, or of the seed folder is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
outside='(^|[^[:alnum:]_])DESIGN([^[:alnum:]_]|$)|shared/seed'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	hits=$(git grep -InE "$outside" -- . ':!tools/check_style.sh' || true)
else
	hits=$(grep -rInE --exclude-dir=.git --exclude-dir=build \
	    --exclude=check_style.sh "$outside" . || true)
fi
if [ -n "$hits" ]; then
	printf '%s\n' "$hits" | sed 's/$/  <- points outside the repository/'
	echo "check_style: what a reader needs goes into docs/, not a pointer" >&2
	exit 1
fi
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'tools/*.[ch]' \
	'bench/*.[ch]' 'fuzz/*.[ch]' 'examples/*.[ch]' 2>/dev/null || true)
[ -n "$files" ] || files=$(find src include tests tools bench fuzz examples \
	-name '*.[ch]')
# shellcheck disable=SC2086
awk '
function width(s,   i, c, w) {
	w = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "\t")
			w = int(w / 8) * 8 + 8
		else
			w++
	}
	return w
}
function bad(rule) {
	printf("%s:%d: %s\n", FILENAME, FNR, rule)
	n++
}
FNR == 1 { incomment = 0 }
{
	line = $0
	if (line ~ /[ \t]+$/)
		bad("trailing white space")
	if (width(line) > 80)
		bad("longer than 80 columns")
	# Leading white space: tabs, then at most 7 spaces (a continuation or
	# the " * " of a block comment).
	if (match(line, /^[ \t]+/)) {
		lead = substr(line, 1, RLENGTH)
		if (lead ~ /\t / && lead ~ / \t/)
			bad("space before tab in indentation")
		else if (lead ~ /^ {8,}/)
			bad("indentation by spaces")
	}
	# A function definition: "name(" in column 0 after a line that holds
	# its return type.  "static int f(...)" on one line, followed by "{"
	# at column 0 later, is the violation.
	if (line ~ /^[a-z_][a-z_0-9 \t\*]*[ \t\*][a-z_][a-z_0-9]*\(/ &&
	    line !~ /;[ \t]*$/ && line !~ /^(return|else|if|for|while|do|switch|case|typedef)/ &&
	    line !~ /\)[ \t]*;/ && line !~ /^#/ && line !~ /__attribute__/) {
		pending = FNR
		pendline = line
	}
	if (line ~ /^\{/ && pending != 0 && FNR - pending < 6) {
		saved = FNR; FNR = pending
		bad("return type not on its own line")
		FNR = saved
	}
	if (line ~ /^\}/ || line ~ /;[ \t]*$/)
		pending = 0
}
END { exit (n > 0) }
' $files
