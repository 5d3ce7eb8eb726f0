#!/usr/bin/env bash
# The README's test command: install what is needed (nothing when every
# package of tools/deps.sh, the tests' ones with them, and the trace
# viewer's puppeteer-core are installed: then no root and no network), then
# build and run the whole test suite in the default (gcc) and asan
# (ASan+UBSan) presets, and the protocol tests under TSan.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sc_install_deps test
sc_install_viewer
echo "=== style"
bash tools/check_style.sh
jobs=$(nproc)
for preset in default asan tsan; do
	echo "=== preset $preset"
	cmake --preset "$preset" -DSTACKCAP_WERROR=ON
	cmake --build --preset "$preset" -j "$jobs"
	ctest --preset "$preset" -j "$jobs"
done
bash tools/check_package.sh
echo "=== all tests passed"
