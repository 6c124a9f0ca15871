#!/usr/bin/env bash
# chdb-core (a current ClickHouse, 26.x, in-process in Python) for the
# portability check of the dashboard SQL: query/dash's TestCurrentClickHouse
# runs the same DDL and queries on it as on the 18.16 server
# (deploy/chdb/run.py). There is no server: "start" only makes sure it is
# installed.
#
#   deploy/services/chdb.sh install   make a venv under $HANDOFF_DATA_DIR/chdb and pip install chdb-core
#   deploy/services/chdb.sh start     the same (nothing runs)
#   deploy/services/chdb.sh stop      nothing to stop
#   deploy/services/chdb.sh status    exit 0 when chdb-core imports, 3 otherwise
#   deploy/services/chdb.sh python    print the venv's python (HANDOFF_CHDB_PYTHON)
#
# Environment (all optional):
#   HANDOFF_DATA_DIR        project data dir (default <repo>/.data)
#   HANDOFF_CHDB_VERSION    chdb-core version to install (default 26.9.0)
#   HANDOFF_PYTHON          python3 used to make the venv (default python3)
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=chdb
# shellcheck source=deploy/services/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHDB_VERSION="${HANDOFF_CHDB_VERSION:-26.9.0}"
CHDB_DIR="$DATA_DIR/chdb"
CHDB_VENV="$CHDB_DIR/venv"
CHDB_PY="$CHDB_VENV/bin/python"
PY="${HANDOFF_PYTHON:-python3}"

chdb_ok() {
  [ -x "$CHDB_PY" ] && "$CHDB_PY" -c "import chdb, sys; sys.exit(0 if chdb.__version__ == '$CHDB_VERSION' else 1)" >/dev/null 2>&1
}

cmd_install() {
  if chdb_ok; then
    return 0
  fi
  if ! command -v "$PY" >/dev/null 2>&1; then
    log "$PY not found: installing Debian's python3"
    apt_install python3 python3-venv
  fi
  mkdir -p "$CHDB_DIR"
  if [ ! -x "$CHDB_PY" ]; then
    if ! "$PY" -m venv "$CHDB_VENV" >/dev/null 2>&1; then
      # Debian splits venv (ensurepip) out of python3.
      rm -rf "$CHDB_VENV"
      log "python3 cannot make a venv: installing Debian's python3-venv"
      apt_install python3-venv
      "$PY" -m venv "$CHDB_VENV" || die "python3 -m venv $CHDB_VENV failed"
    fi
  fi
  log "pip install chdb-core==$CHDB_VERSION into $CHDB_VENV (about 100 MB, once)"
  "$CHDB_PY" -m pip install -q --disable-pip-version-check "chdb-core==$CHDB_VERSION" >&2 ||
    die "pip install chdb-core==$CHDB_VERSION failed (is PyPI reachable? a proxy may need PIP_INDEX_URL)"
  chdb_ok || die "chdb-core installed but does not import in $CHDB_PY"
  log "installed chdb-core $CHDB_VERSION ($("$CHDB_PY" -c 'import chdb; print(chdb.engine_version)' 2>/dev/null || echo '?'))"
}

case "${1:-}" in
  install | start) cmd_install ;;
  stop) ;;
  status)
    if chdb_ok; then
      log "chdb-core $CHDB_VERSION in $CHDB_VENV"
    else
      log "chdb-core $CHDB_VERSION not installed in $CHDB_VENV"
      exit 3
    fi
    ;;
  python) printf '%s\n' "$CHDB_PY" ;;
  *) die "usage: $0 install|start|stop|status|python" ;;
esac
