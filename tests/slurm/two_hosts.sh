#!/usr/bin/env bash
# One ruCCL job across two "hosts": two network namespaces joined by a veth pair (10.78.0.1/24 and
# 10.78.0.2/24, the same interface name rvh0 on both, as a cluster's nodes all have eth0), one
# rank in each, launched by OpenMPI's mpirun the way it reaches real nodes: over its rsh agent
# (here `ip netns exec`, tests/slurm/netns_agent.sh, instead of ssh), with --bind-to none,
# --mca btl self,tcp and the btl/oob interfaces chosen by CIDR.
#   two_hosts.sh WORKER ENGINE WORK_DIR
# ENGINE is what RUCCL_ENGINE asks for (tcp, or mpi when built with MPI); the worker
# (launched_worker collectives) reads OpenMPI's variables and must run every collective exactly,
# rank 0 on host 0 and rank 1 on host 1 (each rank prints the address it sees on rvh0).
# Prints "PASS: ..." and exits 0, "FAIL: ..." and exits 1, or exits 77 (CTest: skipped) with the
# reason when namespaces cannot be made here or mpirun is missing. The namespaces (and with them
# the veth pair) are deleted on every exit.
set -euo pipefail
worker=$1 engine=$2 work=$3

fail() { echo "FAIL: $*"; exit 1; }
# What Communicator::engine_name says for the engine asked for.
case $engine in
  tcp) engine_re="algorithms" ;;
  mpi) engine_re="mpi.*" ;;
  *) fail "unknown engine '$engine' (expected tcp or mpi)" ;;
esac
skip() { echo "SKIP: $*"; exit 77; }

((EUID == 0)) || skip "network namespaces need root (CI runs as root)"
command -v ip > /dev/null || skip "the ip tool is missing (apt-get install iproute2)"
command -v mpirun > /dev/null || skip "mpirun is missing (apt-get install openmpi-bin)"

# An outer launcher's variables (the tests run under mpirun or srun, say) must not reach this one.
for name in $(compgen -e); do
  [[ $name =~ ^(OMPI_|PMIX_|SLURM_|RUCCL_RANK|RUCCL_WORLD_SIZE|RUCCL_LOCAL_|RUCCL_MASTER_) ]] &&
    unset "$name"
done
tag=$(($$ % 100000))
ns=("ruccl_h0_$tag" "ruccl_h1_$tag")
addr=(10.78.0.1 10.78.0.2)
cleanup() {
  ip netns del "${ns[0]}" 2> /dev/null || true
  ip netns del "${ns[1]}" 2> /dev/null || true
}
trap cleanup EXIT
cleanup  # namespaces a killed run of this pid left
mkdir -p "$(dirname "$work")"
if ! ip netns add "${ns[0]}" 2> "$work.err"; then
  skip "cannot make a network namespace here: $(cat "$work.err")"
fi
ip netns add "${ns[1]}"
ip link add rvh0 netns "${ns[0]}" type veth peer name rvh0 netns "${ns[1]}"
for h in 0 1; do
  ip -n "${ns[h]}" addr add "${addr[h]}/24" dev rvh0
  ip -n "${ns[h]}" link set rvh0 up
  ip -n "${ns[h]}" link set lo up
done
rm -rf "$work" "$work.err" && mkdir -p "$work"

# Host names: the agent gets an address and runs the command in the namespace that has it.
agent=$work/agent.sh
cat > "$agent" <<EOF
#!/usr/bin/env bash
# mpirun's rsh agent for the two namespaces: AGENT [ssh-style options] HOST COMMAND...
while [[ \$1 == -* ]]; do shift; done
host=\$1; shift
case \$host in
  ${addr[0]}) ns=${ns[0]} ;;
  ${addr[1]}) ns=${ns[1]} ;;
  *) echo "netns agent: expected host ${addr[0]} or ${addr[1]}, got '\$host'" >&2; exit 255 ;;
esac
echo "\$host \$ns" >> "$work/agent.calls"
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
chmod +x "$agent"

status=0
SECONDS=0
# mpirun itself runs on host 0 (its orted daemons and the ranks reach it at 10.78.0.1).
timeout --kill-after=5 60 ip netns exec "${ns[0]}" \
  mpirun --allow-run-as-root -np 2 --host "${addr[0]}:1,${addr[1]}:1" \
    --mca plm_rsh_agent "$agent" --bind-to none --tag-output \
    --mca btl self,tcp --mca btl_tcp_if_include 10.78.0.0/24 --mca oob_tcp_if_include 10.78.0.0/24 \
    -x RUCCL_ENGINE="$engine" -x RUCCL_SOCKET_IFNAME=rvh0 -x RUCCL_MASTER_ADDR="${addr[0]}" \
    -x RUCCL_MASTER_PORT=29600 \
    /bin/sh -c "echo host \$(ip -4 -o addr show rvh0 | awk '{print \$4}'); exec '$worker' collectives 100003" \
  > "$work/mpirun.log" 2>&1 || status=$?
took=$SECONDS
cat "$work/mpirun.log"
[[ $status == 0 ]] || fail "mpirun exited with status $status"
grep -q "${addr[1]} ${ns[1]}" "$work/agent.calls" 2> /dev/null ||
  fail "mpirun did not start host 1 through the agent"
for r in 0 1; do
  grep -q "^\[1,$r\]<stdout>:host ${addr[r]}/24$" "$work/mpirun.log" ||
    fail "rank $r did not run on host $r (${addr[r]})"
  grep -q "^\[1,$r\]<stdout>:job rank $r of 2 (local rank 0 of 1, node $r of 2), rendezvous at ${addr[0]}:29600, from openmpi's variables$" \
    "$work/mpirun.log" || fail "rank $r did not read rank $r of 2, node $r of 2 from mpirun"
  grep -q "^\[1,$r\]<stdout>:ok rank $r of 2: 10 collectives exact (engine $engine_re)$" "$work/mpirun.log" ||
    fail "rank $r did not finish its collectives exactly"
done
echo "PASS: mpirun across two namespaces (rsh agent ip netns exec): 10 collectives exact on both" \
     "hosts, engine asked: $engine, $took s"
