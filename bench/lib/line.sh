# Shared by bench/wan and bench/files: the delay line between namespaces
# $NA (clients) and $NB (servers), and ending what runs in them.
# Needs: DL (delayline binary), NA, NB, NET, RATE, IMPAIR (array), W (work dir).
DLPID=
in_a() { ip netns exec $NA "$@"; }
in_b() { ip netns exec $NB "$@"; }
ns_kill() {  # $1 = namespace: end whatever still runs in it (only this script starts processes there)
  local i pids
  for i in $(seq 50); do
    pids=$(ip netns pids "$1" 2>/dev/null || true); [[ -z $pids ]] && return 0
    ((i == 1)) && { kill -TERM $pids 2>/dev/null || true; }; ((i == 40)) && { kill -KILL $pids 2>/dev/null || true; }
    sleep 0.1
  done
}
line_down() {
  [[ -n $DLPID ]] || return 0
  ns_kill $NA; ns_kill $NB
  kill -TERM $DLPID 2>/dev/null || true; wait $DLPID 2>/dev/null || true; DLPID=
}
log() { echo "$*" >&2; }

line_up() {  # $1 = RTT in ms
  rm -f "$W/dl.out"
  "$DL" up --rtt "${1}ms" --rate "$RATE" "${IMPAIR[@]}" --ns-a $NA --ns-b $NB --net $NET > "$W/dl.out" 2> "$W/dl.err" &
  DLPID=$!
  for _ in $(seq 100); do
    grep -q '^ready:' "$W/dl.out" 2>/dev/null && { log "$(cat "$W/dl.out")"; return 0; }
    kill -0 $DLPID 2>/dev/null || break; sleep 0.1
  done
  log "delayline did not come up:"; cat "$W/dl.err" >&2; exit 1
}
