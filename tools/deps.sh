#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing stackcap need.
# Sourced by tools/demo.sh and tools/test.sh.  When every one is installed
# already (dpkg-query), it does nothing: a second run needs neither root
# nor the network.
set -euo pipefail
SC_PACKAGES=(build-essential gcc clang llvm libclang-rt-14-dev cmake pkg-config
	libcmocka-dev libunwind-dev libcjson-dev python3 doxygen spin mandoc
	librsvg2-bin elfutils)

# The packages of SC_PACKAGES that are not installed, one a line.
sc_missing_deps() {
	local pkg
	for pkg in "${SC_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
		    grep -qx 'install ok installed' || echo "$pkg"
	done
}

sc_install_deps() {
	local sudo="" missing
	if command -v dpkg-query >/dev/null; then
		missing=$(sc_missing_deps)
		if [ -z "$missing" ]; then
			echo "deps: the ${#SC_PACKAGES[@]} packages are installed;" \
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
	$sudo apt-get install -y --no-install-recommends "${SC_PACKAGES[@]}"
}
