#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing stackcap need.
# Sourced by tools/demo.sh and tools/test.sh.  When every one is installed
# already (dpkg-query), it does nothing: a second run needs neither root
# nor the network.
set -euo pipefail
SC_PACKAGES=(build-essential gcc clang llvm libclang-rt-14-dev cmake pkg-config
	libcmocka-dev libunwind-dev libcjson-dev python3 doxygen spin mandoc
	librsvg2-bin elfutils)

# What only the tests need beside: Chromium for the trace viewer's test
# (tests/trace_viewer/), and Node.js with npm for its puppeteer-core, unless
# a node and an npm are there already (a Node.js not from Debian conflicts
# with Debian's npm).
SC_TEST_PACKAGES=(chromium)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	SC_TEST_PACKAGES+=(nodejs npm)
fi

# The packages of SC_PACKAGES (and, with "test", SC_TEST_PACKAGES) that are
# not installed, one a line.
sc_missing_deps() {
	local pkg pkgs=("${SC_PACKAGES[@]}")
	if [ "${1:-}" = test ]; then
		pkgs+=("${SC_TEST_PACKAGES[@]}")
	fi
	for pkg in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
		    grep -qx 'install ok installed' || echo "$pkg"
	done
}

# sc_install_deps [test]: with "test", the tests' packages too.
sc_install_deps() {
	local sudo="" missing pkgs=("${SC_PACKAGES[@]}")
	if [ "${1:-}" = test ]; then
		pkgs+=("${SC_TEST_PACKAGES[@]}")
	fi
	if command -v dpkg-query >/dev/null; then
		missing=$(sc_missing_deps "${1:-}")
		if [ -z "$missing" ]; then
			echo "deps: the ${#pkgs[@]} packages are installed;" \
			    "no apt-get"
			return 0
		fi
		echo "deps: to install:" $missing
	fi
	if [ "$(id -u)" -ne 0 ]; then
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update || return
	$sudo apt-get install -y --no-install-recommends "${pkgs[@]}"
}

# puppeteer-core and speedscope for tests/trace_viewer/, at the versions
# of its package-lock.json; nothing (no network) when both are installed.
sc_install_viewer() {
	local dir=tests/trace_viewer pkg want have
	for pkg in puppeteer-core speedscope; do
		want=$(sed -n "/\"node_modules\/$pkg\"/,/}/s/.*\"version\": \"\(.*\)\".*/\1/p" \
		    "$dir/package-lock.json")
		have=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' \
		    "$dir/node_modules/$pkg/package.json" 2>/dev/null || true)
		if [ -z "$want" ] || [ "$want" != "$have" ]; then
			(cd "$dir" && npm ci --no-audit --no-fund --prefer-offline)
			return
		fi
	done
	echo "deps: puppeteer-core and speedscope are installed; no npm"
}
