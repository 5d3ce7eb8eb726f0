#!/usr/bin/env bash
# The README's demo command: install what is needed (Debian 12, root or
# sudo), build the default preset, then run the demo: a simulated machine
# printed the way `procstat -kk -a` does.  Arguments go to the demo
# (e.g. --ncpu 4).
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sc_install_deps
cmake --preset default
cmake --build --preset default -j "$(nproc)"
exec ./build/default/tools/stackcap-demo "$@"
