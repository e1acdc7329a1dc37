#!/usr/bin/env bash
# Installs the established load generators we compare against (GuideLLM, AIPerf) from PyPI into
# venvs under the cache, outside the repo, so the capacity benchmark can run them offline.
# Idempotent: an existing venv whose package imports is kept.
#
#   crates/tpsmeter-emulator/scripts/peer.sh [guidellm|aiperf|all]   (default: all)
#
# Prints the venv's bin dir per peer. Versions are pinned so figures are reproducible.
set -euo pipefail

PEERS_DIR="${TPSMETER_PEERS_DIR:-$HOME/.cache/tpsmeter/peers}"
PYTHON="${PYTHON:-python3}"
GUIDELLM_VERSION="0.8.1"
AIPERF_VERSION="0.13.0"

install_one() {
  local name="$1" spec="$2" module="$3"
  local venv="$PEERS_DIR/$name"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import $module" 2>/dev/null; then
    echo "$name: $venv/bin (cached)"
    return 0
  fi
  mkdir -p "$PEERS_DIR"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet "$spec"
  "$venv/bin/python" -c "import $module"
  echo "$name: $venv/bin"
}

which_peer="${1:-all}"
case "$which_peer" in
  guidellm) install_one guidellm "guidellm==$GUIDELLM_VERSION" guidellm ;;
  aiperf) install_one aiperf "aiperf==$AIPERF_VERSION" aiperf ;;
  all)
    install_one guidellm "guidellm==$GUIDELLM_VERSION" guidellm
    install_one aiperf "aiperf==$AIPERF_VERSION" aiperf
    ;;
  *) echo "usage: $0 [guidellm|aiperf|all]" >&2; exit 2 ;;
esac
