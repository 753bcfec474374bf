#!/usr/bin/env bash
# Bring up a one-node SLURM cluster on localhost (Debian's Slurm 22.05, munge, one pretend GPU)
# for tests/test_slurm.py.
#
#   .ci/slurm/up.sh [STATE_DIR]      # default /tmp/rnnrepro-slurm; stop it with down.sh STATE_DIR
#
# Installs slurmctld, slurmd, slurm-client and munge when missing, writes slurm.conf and
# gres.conf into STATE_DIR, points /etc/slurm/slurm.conf at it (the slurm-jobstep plugin drops
# SLURM_CONF before its inner srun), starts munged (unless one already answers), slurmctld and
# slurmd in the background, records their PIDs in STATE_DIR/pids and waits for the node to be idle.
# Exit status 77: this machine cannot host the cluster (not root, or the packages cannot be
# installed); the tests skip then. Any other failure exits 1 after stopping what was started.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
state="${1:-/tmp/rnnrepro-slurm}"
conf_link=/etc/slurm/slurm.conf

cannot() { echo "up.sh: cannot run a SLURM cluster here: $*" >&2; exit 77; }
fail() { echo "up.sh: $*" >&2; "$here/down.sh" "$state" >&2 || true; exit 1; }

[ "$(id -u)" -eq 0 ] || cannot "needs root (starts daemons and writes /etc/slurm)"

# 1. Packages (about 10 s).
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || cannot "slurm is not installed and there is no apt-get"
    echo "up.sh: installing slurmctld slurmd slurm-client munge" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends slurmctld slurmd slurm-client munge; } >&2 \
        || cannot "apt-get install slurmctld slurmd slurm-client munge failed"
fi

# 2. Refuse to clobber another cluster.
if [ -s "$state/pids" ]; then
    echo "up.sh: $state/pids exists: a cluster may be up; run .ci/slurm/down.sh $state" >&2
    exit 1
fi
if pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null; then
    echo "up.sh: a slurmctld or slurmd is already running" >&2
    exit 1
fi
# A link left by an up.sh whose cluster is gone (no daemon runs) is replaced; a real file is not.
if [ -e "$conf_link" ] && [ ! -L "$conf_link" ]; then
    echo "up.sh: $conf_link is a real configuration; not touching it" >&2
    exit 1
fi

# 3. Configuration: the node line (CPUs, RealMemory, ...) is what `slurmd -C` detects.
host="$(hostname -s)"
node="$(slurmd -C | head -n 1)"
mkdir -p "$state/ctld" "$state/spool" /etc/slurm
rm -rf "${state:?}/ctld/"* # a fresh cluster: no jobs from an earlier run
sed -e "s|@HOST@|$host|g" -e "s|@STATE@|$state|g" -e "s|@NODE@|$node|" \
    "$here/slurm.conf.in" >"$state/slurm.conf"
sed -e "s|@HOST@|$host|g" "$here/gres.conf.in" >"$state/gres.conf"
ln -sfn "$state/slurm.conf" "$conf_link"
: >"$state/pids"

# Start "$@" in the background (in its own session, so a Ctrl-C in the caller's terminal does
# not reach it), check that it is alive and record "name pid" for down.sh.
start() {
    local name="$1" log="$2"
    shift 2
    setsid "$@" >>"$log" 2>&1 </dev/null &
    local pid=$!
    sleep 0.5
    kill -0 "$pid" 2>/dev/null || fail "$name exited at once; see $log"
    echo "$name $pid" >>"$state/pids"
}

# 4. munge: a key owned by munge (mode 0400) and its socket directory; reuse a running munged.
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null \
            || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
    mkdir -p /run/munge
    chown munge:munge /run/munge
    start munged "$state/munged.log" \
        setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground
fi

# 5. The daemons: -D stays in the foreground (so $! is the daemon), -i ignores old state.
start slurmctld "$state/slurmctld.out" slurmctld -D -i -f "$state/slurm.conf"
start slurmd "$state/slurmd.out" slurmd -D -f "$state/slurm.conf"

# 6. Ready when the node is idle (about 5 s).
for _ in $(seq 60); do
    if [ "$(sinfo -h -N -o %T 2>/dev/null)" = idle ]; then
        echo "up.sh: SLURM cluster up (state $state):" >&2
        sinfo -N -o "%N %T %c %m %G" >&2
        exit 0
    fi
    sleep 1
done
sinfo -N -l >&2 || true
tail -n 20 "$state/slurmctld.log" "$state/slurmd.log" >&2 || true
fail "the node did not become idle within 60 s"
