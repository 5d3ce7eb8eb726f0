#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing stackcap need.
# Sourced by tools/demo.sh and tools/test.sh.
set -euo pipefail
SC_PACKAGES=(build-essential gcc clang llvm libclang-rt-14-dev cmake pkg-config
	libcmocka-dev libunwind-dev libcjson-dev python3 doxygen spin
	librsvg2-bin)
sc_install_deps() {
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends "${SC_PACKAGES[@]}"
}
