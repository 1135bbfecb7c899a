#!/bin/sh
# A throwaway 3-node RabbitMQ cluster beside the machine's default node, for the cluster failover spec and fault 14
# of the fault matrix.
#
#   scripts/rabbitmq-cluster.sh up [PID]   start the nodes (tearing down leftovers first) and join them; PID owns them;
#                                          RM_CLUSTER_SIZE=1 starts node 1 alone (a private broker to restart)
#   scripts/rabbitmq-cluster.sh down       kill the nodes and remove their directory
#   scripts/rabbitmq-cluster.sh status     cluster_status as the first node sees it
#   scripts/rabbitmq-cluster.sh ctl N ...  rabbitmqctl against node N (1-3); `queues N ...` runs rabbitmq-queues
#   scripts/rabbitmq-cluster.sh watch PID  once process PID has exited, tear the cluster down if PID still owns it
#
# Nodes are rm-fault-1..3@localhost, AMQP on 127.0.0.1:5681-5683 (guest/guest), Erlang distribution on
# 25681-25683, with their data, logs and pid files under $RM_CLUSTER_DIR (default /tmp/rm-cluster). They run as
# the current user with their own HOME and Erlang cookie, so they cannot reach the default node rabbit@localhost
# (whose cookie differs) and the default node's configuration, plugins and membership are never read or touched.
set -eu

SBIN=/usr/lib/rabbitmq/bin
BASE=${RM_CLUSTER_DIR:-/tmp/rm-cluster}
NODES="1 2 3"
SIZE=${RM_CLUSTER_SIZE:-3}
SEED=rm-fault-1@localhost

node_name() { echo "rm-fault-$1@localhost"; }
amqp_port() { echo $((5680 + $1)); }
dist_port() { echo $((25680 + $1)); }

# The environment every server and CLI call of this cluster runs with. The own env file replaces
# /etc/rabbitmq/rabbitmq-env.conf, which names the default node; the own CLI port range keeps our rabbitmqctl
# calls off the range other specs' calls to the default node use.
cluster_env() {
  export HOME="$BASE/home"
  export RABBITMQ_CONF_ENV_FILE="$BASE/rabbitmq-env.conf"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins"
  export RABBITMQ_CTL_DIST_PORT_MIN=35690
  export RABBITMQ_CTL_DIST_PORT_MAX=35710
  export ERL_EPMD_ADDRESS=127.0.0.1
}

ctl() {
  n=$1
  shift
  (cluster_env && "$SBIN/rabbitmqctl" -q -n "$(node_name "$n")" "$@")
}

queues() {
  n=$1
  shift
  (cluster_env && "$SBIN/rabbitmq-queues" -q -n "$(node_name "$n")" "$@")
}

start_node() {
  n=$1
  dir="$BASE/node$n"
  mkdir -p "$dir/mnesia" "$dir/log"
  cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$(amqp_port "$n")
vm_memory_high_watermark.absolute = 512MiB
disk_free_limit.absolute = 50MB
log.file.level = info
log.console = false
EOF
  (
    cluster_env
    export RABBITMQ_NODENAME="$(node_name "$n")"
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    export RABBITMQ_NODE_PORT="$(amqp_port "$n")"
    export RABBITMQ_DIST_PORT="$(dist_port "$n")"
    export RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf"
    export RABBITMQ_MNESIA_BASE="$dir/mnesia"
    export RABBITMQ_LOG_BASE="$dir/log"
    export RABBITMQ_PID_FILE="$dir/pid"
    # One scheduler and a small async pool: three nodes share two cores with the default node and the tests. A
    # node alone gets two, as a broker on a two-core machine has: a boot then rebuilds exchange state on two
    # workers at once, as RabbitMQ does on any multi-core machine.
    if [ "$SIZE" = 1 ]; then schedulers="+S 2:2"; else schedulers="+S 1:1"; fi
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$schedulers +SDio 2 +A 4"
    # Its own session, so an interrupt of the caller does not reach it before teardown does; the session id is
    # the process group that `down` kills.
    setsid nohup "$SBIN/rabbitmq-server" >"$dir/log/startup.log" 2>&1 </dev/null &
    echo $! >"$dir/session"
  )
}

# The OS pid of node N's beam.smp, from its pid file (empty when it never got that far).
node_pid() {
  cat "$BASE/node$1/pid" 2>/dev/null || true
}

down() {
  for n in $NODES; do
    session=$(cat "$BASE/node$n/session" 2>/dev/null || true)
    # The whole group: the launcher script, beam.smp and its port helpers.
    [ -n "$session" ] && kill -KILL -- "-$session" 2>/dev/null || true
    pid=$(node_pid "$n")
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  done
  for n in $NODES; do
    # Erlang unregisters a dead node from epmd when its socket closes; wait so a restart can take the name.
    i=0
    while epmd -names 2>/dev/null | grep -q "name rm-fault-$n at" && [ $i -lt 50 ]; do
      sleep 0.1
      i=$((i + 1))
    done
  done
  rm -rf "$BASE"
}

up() {
  down
  mkdir -p "$BASE/home"
  echo "${1:-}" >"$BASE/owner"
  # A cookie of our own: nodes of this cluster and its CLI calls share it, the default node does not.
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr 'a-f' 'A-F' >"$BASE/home/.erlang.cookie"
  chmod 400 "$BASE/home/.erlang.cookie"
  echo '[].' >"$BASE/enabled_plugins"
  cat >"$BASE/rabbitmq-env.conf" <<'EOF'
export ERL_FLAGS="-kernel inet_dist_use_interface {127,0,0,1}"
EOF
  if [ "$SIZE" = 1 ]; then
    start_node 1
    await_boot 1
    return
  fi
  for n in $NODES; do start_node "$n"; done
  # Every rabbitmqctl call boots an Erlang VM of its own (seconds on a busy machine): calls that do not depend on
  # each other run in parallel, and join_cluster runs one node at a time.
  pids=
  for n in $NODES; do
    await_boot "$n" &
    pids="$pids $!"
  done
  wait_all $pids
  pids=
  for n in 2 3; do
    ctl "$n" stop_app &
    pids="$pids $!"
  done
  wait_all $pids
  for n in 2 3; do
    # NOTE: join_cluster on 3.10 prints "Failed to create a tracked connection table" errors for the joining
    # node, which is stopped at that moment; they are harmless, so its output is shown only when it fails.
    if ! ctl "$n" join_cluster "$SEED" >"$BASE/node$n/log/join.log" 2>&1; then
      cat "$BASE/node$n/log/join.log" >&2
      exit 1
    fi
  done
  pids=
  for n in 2 3; do
    ctl "$n" start_app &
    pids="$pids $!"
  done
  wait_all $pids
  running=$(ctl 1 eval 'length(rabbit_nodes:all_running()).')
  if [ "$running" != 3 ]; then
    echo "the cluster has $running running node(s), not 3" >&2
    exit 1
  fi
}

# Waits for the pid file, then the distribution, then the boot (await_startup fails while a node is not yet
# reachable); shows the node's log when it does not come up.
await_boot() {
  if ! ctl "$1" wait "$BASE/node$1/pid" --timeout 180 >/dev/null 2>&1; then
    echo "node $(node_name "$1") did not start; its log:" >&2
    tail -n 40 "$BASE/node$1/log/startup.log" "$BASE/node$1/log/$(node_name "$1").log" >&2 || true
    exit 1
  fi
}

# Waits for the background jobs whose pids are given, failing if any failed.
wait_all() {
  failed=0
  for job in "$@"; do wait "$job" || failed=1; done
  [ "$failed" = 0 ] || exit 1
}

watch() {
  while kill -0 "$1" 2>/dev/null; do sleep 1; done
  # A later run may have started a cluster of its own meanwhile; that one is not ours to remove.
  [ "$(cat "$BASE/owner" 2>/dev/null || true)" = "$1" ] && down
  true
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  up) up "${1:-}" ;;
  down) down ;;
  status) ctl 1 cluster_status ;;
  ctl) ctl "$@" ;;
  queues) queues "$@" ;;
  pid) node_pid "$1" ;;
  watch) watch "$1" ;;
  *)
    echo "usage: $0 up|down|status|ctl N ...|queues N ...|pid N|watch PID" >&2
    exit 2
    ;;
esac
