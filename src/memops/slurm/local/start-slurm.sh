#!/usr/bin/env bash
# A throw-away single-node Slurm cluster (munged + slurmctld + slurmd) without systemd, for the
# tests and for trying the templates on one machine
# (Debian 12: Slurm 22.05, munge 0.5.15), without the optional accounting database.
#
#   sudo SLURM_LAB=/tmp/slurm-local slurm/local/start-slurm.sh
#   source $SLURM_LAB/slurm.env            # every client (sbatch, squeue, scontrol) needs SLURM_CONF
#   slurm/local/stop-slurm.sh              # stops the daemons by the PIDs in their pid files
set -euo pipefail
LAB=${SLURM_LAB:-${TMPDIR:-/tmp}/slurm-local}
WAIT_S=${SLURM_WAIT_S:-60}

# Packages, when missing (about 3.5 MB).
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
   || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge >/dev/null
fi

# munged refuses a socket folder that is not world-executable.
mkdir -p "$LAB"/{munge,etc,log,spool}
chmod 0755 "$LAB" "$LAB/munge"
rm -rf "$LAB/state"; mkdir -p "$LAB/state"
mkdir -p "$LAB/spool/slurmd-localhost"

[ -s "$LAB/munge/munge.key" ] || mungekey --create --keyfile="$LAB/munge/munge.key"
chmod 0600 "$LAB/munge/munge.key"
MSOCK="$LAB/munge/munge.socket.2"
munged --key-file="$LAB/munge/munge.key" --socket="$MSOCK" \
       --pid-file="$LAB/munge/munged.pid" --log-file="$LAB/munge/munged.log" \
       --seed-file="$LAB/munge/munged.seed"
munge -n -S "$MSOCK" | unmunge -S "$MSOCK" >/dev/null

# The node's shape comes from `slurmd -C`; a RealMemory above it would drain the node.
read -r SOCK CPS TPC CPUS MEM < <(slurmd -C | awk '
  {for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]}}
  END{print v["SocketsPerBoard"], v["CoresPerSocket"], v["ThreadsPerCore"], v["CPUs"], v["RealMemory"]}')
MEM=$(( MEM * 9 / 10 ))
cat > "$LAB/etc/slurm.conf" <<CONF
ClusterName=lab
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MSOCK
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool/slurmd-%n
SlurmctldPidFile=$LAB/state/slurmctld.pid
SlurmdPidFile=$LAB/spool/slurmd-%n.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
# A job whose begin time passes with no event to wake the scheduler (a requeued one) starts at
# the next backfill pass: every 2 s here, 30 s by default. On one node a pass costs nothing.
SchedulerParameters=batch_sched_delay=0,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=300
JobCompType=jobcomp/filetxt
JobCompLoc=$LAB/log/jobcomp.txt
AccountingStorageType=accounting_storage/none
NodeName=localhost CPUs=$CPUS Sockets=$SOCK CoresPerSocket=$CPS ThreadsPerCore=$TPC RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$LAB/etc/slurm.conf"
echo "export SLURM_CONF=$SLURM_CONF" > "$LAB/slurm.env"

# Both daemons fork and write the pid files named in slurm.conf.
slurmctld
slurmd
st=
for _ in $(seq $((WAIT_S * 5))); do
  st=$(sinfo -h -n localhost -o %t 2>/dev/null || true)
  [ "$st" = idle ] && break
  sleep 0.2
done
if [ "$st" != idle ]; then
  echo "node not idle after ${WAIT_S}s (state: '$st')" >&2
  tail -20 "$LAB/log/slurmctld.log" "$LAB/log/slurmd-localhost.log" >&2
  exit 1
fi
echo "slurm up ($(sinfo --version)): munged $(cat "$LAB/munge/munged.pid"), slurmctld $(cat "$LAB/state/slurmctld.pid"), slurmd $(cat "$LAB/spool/slurmd-localhost.pid")"
