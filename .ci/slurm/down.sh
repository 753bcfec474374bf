#!/usr/bin/env bash
# Tear down the cluster started by up.sh: cancel its jobs, stop every daemon up.sh started
# (by the PIDs in STATE_DIR/pids, never by name) and remove the /etc/slurm/slurm.conf link.
#
#   .ci/slurm/down.sh [STATE_DIR]    # default /tmp/rnnrepro-slurm; logs stay in STATE_DIR
set -uo pipefail

state="${1:-/tmp/rnnrepro-slurm}"
conf_link=/etc/slurm/slurm.conf
pids="$state/pids"

# Jobs first, so that no slurmstepd outlives slurmd (bounded wait: KillWait is 30 s).
if grep -q '^slurmctld ' "$pids" 2>/dev/null; then
    scancel --user=root 2>/dev/null
    for _ in $(seq 40); do
        [ -z "$(squeue -h -t RUNNING,COMPLETING,PENDING -o %i 2>/dev/null)" ] && break
        sleep 1
    done
fi

# Daemons in reverse start order: SIGTERM, up to 10 s to exit, then SIGKILL.
if [ -f "$pids" ]; then
    tac "$pids" | while read -r name pid; do
        kill -0 "$pid" 2>/dev/null || continue
        kill -TERM "$pid"
        for _ in $(seq 20); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "down.sh: $name ($pid) ignored SIGTERM; killing it" >&2
            kill -KILL "$pid"
        fi
        echo "down.sh: stopped $name ($pid)" >&2
    done
    rm -f "$pids"
fi

# The config link, only if it is ours.
if [ "$(readlink "$conf_link" 2>/dev/null)" = "$state/slurm.conf" ]; then
    rm -f "$conf_link"
fi
exit 0
