# shellcheck shell=bash
# Shared helpers for deploy/services/*.sh. Source it; do not run it.
#
# Sets:
#   REPO_ROOT  the repository root (two levels above this file)
#   DATA_DIR   $HANDOFF_DATA_DIR, else <repo>/.data (made absolute)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA_DIR="${HANDOFF_DATA_DIR:-$REPO_ROOT/.data}"
mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"

# Name used in messages; each script sets SVC before using these.
SVC="${SVC:-services}"

log() { printf '[%s] %s\n' "$SVC" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$SVC" "$*" >&2; exit 1; }

# Run a command as root: directly when we are root, else through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo -n "$@"
  else
    die "need root to run: $* (no sudo available)"
  fi
}

# apt-get install the given Debian packages, non-interactively. Runs
# 'apt-get update' first (a fresh machine has no package lists). While it
# installs, a temporary policy-rc.d keeps packages' postinst from starting
# system services (we run our own instances, on our own ports).
APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
  local policy=/usr/sbin/policy-rc.d made_policy=0 rc=0
  if [ ! -e "$policy" ]; then
    as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    made_policy=1
  fi
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || rc=$?
    APT_UPDATED=1
  fi
  if [ "$rc" -eq 0 ]; then
    log "apt-get install $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends -o Dpkg::Options::=--force-confdef \
      -o Dpkg::Options::=--force-confold "$@" >&2 || rc=$?
  fi
  if [ "$made_policy" -eq 1 ]; then as_root rm -f "$policy"; fi
  [ "$rc" -eq 0 ] || die "apt-get install $* failed (exit $rc)"
}

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" >/dev/null 2>&1
}

# pid_alive PID: the process exists and is not a zombie (a child of ours that
# died during startup stays a zombie until we exit).
pid_alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)"
  [ "$state" != "Z" ]
}

# pid_from_file FILE: prints the pid if the file names a live process.
pid_from_file() {
  local f="$1" pid
  [ -f "$f" ] || return 1
  pid="$(tr -dc '0-9' <"$f")"
  [ -n "$pid" ] || return 1
  pid_alive "$pid" || return 1
  printf '%s\n' "$pid"
}

# pid_matches PID PATTERN: the process's command line contains PATTERN
# (guards against a recycled pid).
pid_matches() {
  [ -r "/proc/$1/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$2"
}

# stop_pid PID NAME TIMEOUT_SECONDS: SIGTERM, wait, then SIGKILL.
stop_pid() {
  local pid="$1" name="$2" timeout="$3" waited=0
  kill -TERM "$pid" 2>/dev/null || return 0
  while pid_alive "$pid"; do
    if [ "$waited" -ge "$((timeout * 10))" ]; then
      log "$name (pid $pid) still running after ${timeout}s: sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
}

# show_log_tail FILE...: print the last lines of each existing file.
show_log_tail() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    printf '[%s] ---- last 40 lines of %s ----\n' "$SVC" "$f" >&2
    tail -n 40 "$f" >&2
  done
}
