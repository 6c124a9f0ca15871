#!/usr/bin/env bash
# Headless Chromium for the browser test of `handoff serve` (query/web).
#
#   deploy/services/chromium.sh install   apt-get install chromium when missing
#   deploy/services/chromium.sh start     install if needed; print where it is
#   deploy/services/chromium.sh stop      nothing to stop (see below)
#   deploy/services/chromium.sh status    exit 0 when installed, 3 otherwise
#
# Chromium is not a server: the browser test (chromedp) launches its own
# headless instance per run, with a fresh --user-data-dir (a temporary
# directory of the test), and stops it when the test ends; screenshots go
# to $HANDOFF_DATA_DIR/screenshots. So "start" only makes sure the binary is
# there; its path goes into services.env as HANDOFF_CHROMIUM (up.sh).
#
# Environment (optional):
#   HANDOFF_DATA_DIR   project data dir (default <repo>/.data)
#   HANDOFF_CHROMIUM   the browser binary (default: chromium on PATH)
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=chromium
# shellcheck source=deploy/services/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

chromium_bin() {
  if [ -n "${HANDOFF_CHROMIUM:-}" ] && [ -x "$HANDOFF_CHROMIUM" ]; then
    printf '%s\n' "$HANDOFF_CHROMIUM"
    return 0
  fi
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null
}

cmd_install() {
  if chromium_bin >/dev/null; then
    return 0
  fi
  log "chromium not found: installing Debian's package"
  apt_install chromium
  chromium_bin >/dev/null || die "chromium still missing after apt-get install chromium"
  log "installed $("$(chromium_bin)" --version 2>/dev/null | head -n1)"
}

cmd_start() {
  cmd_install
  log "ready: $(chromium_bin) (launched per test by chromedp)"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) ;; # each test stops the browser it started
  status) chromium_bin >/dev/null || exit 3 ;;
  path) chromium_bin ;;
  *) echo "usage: $0 install|start|stop|status|path" >&2; exit 2 ;;
esac
