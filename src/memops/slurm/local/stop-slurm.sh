#!/usr/bin/env bash
# Stop the cluster that start-slurm.sh started, by the PIDs in its pid files and nothing else.
set -uo pipefail
LAB=${SLURM_LAB:-${TMPDIR:-/tmp}/slurm-local}

# A zombie still answers `kill -0`, so "alive" reads the process state instead.
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }

stop_pid() {  # <process name> <pid file>
  local name=$1 pf=$2 pid
  [ -s "$pf" ] || { echo "$name: no pid file"; return 0; }
  pid=$(cat "$pf")
  if ! alive "$pid"; then echo "$name: pid $pid not running"; rm -f "$pf"; return 0; fi
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "$name" ]; then
    echo "$name: pid $pid belongs to '$(cat "/proc/$pid/comm" 2>/dev/null)'; stale pid file, not killing"
    rm -f "$pf"; return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then echo "$name: pid $pid ignored SIGTERM, sending SIGKILL"; kill -KILL "$pid"; sleep 0.2; fi
  if alive "$pid"; then echo "$name: pid $pid STILL RUNNING"; return 1; fi
  echo "$name: pid $pid stopped"
  rm -f "$pf"
}

status=0
stop_pid slurmd    "$LAB/spool/slurmd-localhost.pid" || status=1
stop_pid slurmctld "$LAB/state/slurmctld.pid" || status=1
stop_pid munged    "$LAB/munge/munged.pid" || status=1
exit $status
