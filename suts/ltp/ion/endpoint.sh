#!/bin/bash
# One LTP role of ION-DTN (NASA JPL, ion-open-source-4.1.3) for dtnconform's
# endpoint contract (docs/implementers.md): every setting from DTNC_*
# environment variables, one JSON result line on stdout, everything else on
# stderr, ION's own log (ion.log) and config files in DTNC_WORKDIR.
#
#   DTNC_ROLE sender|receiver      DTNC_LISTEN ip:port (udplsi binds it)
#   DTNC_PEER ip:port (udplso)     DTNC_ENGINE / DTNC_PEER_ENGINE (ION node nbrs)
#   DTNC_BLOCK_LEN DTNC_RED_LEN    DTNC_SEGMENT_SIZE (client data bytes/segment)
#   DTNC_CLIENT_SERVICE_ID (0..7)  DTNC_RETRANSMISSION_MS DTNC_RETRANSMISSION_LIMIT
#   DTNC_LINGER_MS DTNC_TIME_LIMIT_MS DTNC_WORKDIR DTNC_FEATURES
#   ION_PREFIX (default: the repository's .tools/ion), DTNC_ION_CLIENT (default bin/dtnc-ion-ltp)
#
# Exit 127 (not supported), before anything starts, for a feature outside
# {red, green, foreign-service} or a setting ION cannot take (below).
#
# How the model's knobs map onto ION (ltprc(5), ltp/library/libltpP.c):
# - Segment size.  ION's span max_segment_size bounds the WHOLE segment: LTP
#   header (version/flags, session originator SDNV, session number SDNV,
#   extension counts) plus the data segment fields (client service SDNV,
#   offset SDNV, length SDNV, and on checkpoints the checkpoint and report
#   serial numbers), and ION fills each data segment up to it (libltpP.c
#   issueSegments).  We set max_segment_size = DTNC_SEGMENT_SIZE + the
#   overhead of the block's first segment (offset 0, session number 1: a
#   fresh node's first session).  So no segment carries more than
#   DTNC_SEGMENT_SIZE bytes; segments at offsets >= 128 carry 1 byte less
#   (their offset SDNV is longer), and ION cuts the last red byte(s) into a
#   separate checkpoint segment when the checkpoint's serial numbers do not
#   fit: that is ION's own segmentation, not ours.
# - Retransmission timer.  ION's timers count whole seconds: the deadline is
#   OWLT out + OWLT in + the span's remote queuing latency + ownqtime/2*2
#   (libltpP.c, ~3340-3366), checked once a second by ltpclock.  We set the
#   OWLT to 0 (ionadmin range) and the queuing latency to
#   ceil(DTNC_RETRANSMISSION_MS / 1000) s. ION counts from the current whole
#   second, so a timer may fire up to a second early (an RS resent 549 ms
#   after it left, with 1000 ms asked) or late; the trace model lets a timer
#   expire at any time, so no verdict rests on it.
# - The receiver's linger.  ION tells a client of delivery and cancellation,
#   never that an import session closed: after the red part and the EOB the
#   session may still resend its RS and, at the limit, cancel (RLEXC).  So
#   the receiver lingers, registered, past every RS retransmission the limit
#   allows, (L + 1) timer periods of up to QTIME + 1 s, and its outcome is
#   its last notice by then (docs/implementers.md, "linger by rule").
# - Retransmission limit L.  ION has no such setting: the limit on timer
#   expiries of checkpoints, reports and cancel segments (vspan->maxTimeouts)
#   is derived from "m maxber" and the segment size, and is never below 3
#   (libltpP.c:518-533, computeRetransmissionLimits).  We choose the bit
#   error rate that makes ION derive exactly L; L < 3 is not supported (127).
#   ION also caps the number of checkpoints per export session
#   (getMaxReports, libltpP.c:5200, at least 2, set in ltpmeter.c:148, enforced
#   libltpP.c:6985) and of reports per import session (libltpP.c:4613): those
#   derive from the same bit error rate and are not settable.
set -u

here=$(cd "$(dirname "$0")" && pwd)
ION_PREFIX=${ION_PREFIX:-$(cd "$here/../../.." && pwd)/.tools/ion}
CLIENT=${DTNC_ION_CLIENT:-$here/bin/dtnc-ion-ltp}
NOT_SUPPORTED=127

say() { echo "[$(date +%H:%M:%S.%3N) endpoint.sh ${DTNC_ROLE:-?}] $*" >&2; }

json_error() {
    local d=${1//\\/\\\\}
    d=${d//\"/\\\"}
    printf '{"role":"%s","outcome":"error","detail":"%s","notices":[],"duration_s":%s}\n' \
        "${DTNC_ROLE:-unknown}" "$d" "${2:-0}"
}

unsupported() { say "not supported: $*"; exit $NOT_SUPPORTED; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

sdnv_len() { # bytes of the SDNV encoding of $1
    local v=$1 n=1
    while ((v >= 128)); do v=$((v >> 7)); n=$((n + 1)); done
    echo $n
}

if [ -z "${DTNC_ION_INNER:-}" ]; then
    # ---- outside: check what can be checked, then re-exec in private namespaces
    t0=$(date +%s%3N)
    IFS=',' read -r -a feats <<<"${DTNC_FEATURES:-}"
    for f in "${feats[@]}"; do
        f=${f// /}
        case "$f" in
        red | green | foreign-service | "") ;;
        *) unsupported "feature '$f' (ION here: red, green, foreign-service)" ;;
        esac
    done
    missing=""
    for v in DTNC_ROLE DTNC_LISTEN DTNC_PEER DTNC_ENGINE DTNC_PEER_ENGINE DTNC_BLOCK_LEN \
        DTNC_RED_LEN DTNC_SEGMENT_SIZE DTNC_CLIENT_SERVICE_ID DTNC_RETRANSMISSION_MS \
        DTNC_RETRANSMISSION_LIMIT DTNC_LINGER_MS DTNC_TIME_LIMIT_MS DTNC_WORKDIR; do
        [ -n "${!v:-}" ] || missing="$missing $v"
    done
    if [ -n "$missing" ]; then
        json_error "missing settings:$missing"
        exit 2
    fi
    case "$DTNC_ROLE" in sender | receiver) ;; *)
        json_error "DTNC_ROLE must be sender or receiver, not $DTNC_ROLE"
        exit 2
        ;;
    esac
    for v in DTNC_ENGINE DTNC_PEER_ENGINE DTNC_BLOCK_LEN DTNC_RED_LEN DTNC_SEGMENT_SIZE \
        DTNC_CLIENT_SERVICE_ID DTNC_RETRANSMISSION_MS DTNC_RETRANSMISSION_LIMIT \
        DTNC_LINGER_MS DTNC_TIME_LIMIT_MS; do
        if ! is_uint "${!v}"; then
            json_error "$v=${!v} is not a non-negative integer"
            exit 2
        fi
    done
    if ((DTNC_RED_LEN > DTNC_BLOCK_LEN)); then
        json_error "DTNC_RED_LEN $DTNC_RED_LEN exceeds DTNC_BLOCK_LEN $DTNC_BLOCK_LEN"
        exit 2
    fi
    # what ION cannot take
    ((DTNC_CLIENT_SERVICE_ID <= 7)) ||
        unsupported "client service $DTNC_CLIENT_SERVICE_ID (ION: 0..7, LTP_MAX_NBR_OF_CLIENTS)"
    ((DTNC_ENGINE >= 1 && DTNC_PEER_ENGINE >= 1)) || unsupported "engine id 0 (ION node numbers start at 1)"
    ((DTNC_RETRANSMISSION_LIMIT >= 3)) ||
        unsupported "retransmission limit $DTNC_RETRANSMISSION_LIMIT (ION never allows fewer than 3)"
    ((DTNC_RETRANSMISSION_LIMIT <= 1375)) ||
        unsupported "retransmission limit $DTNC_RETRANSMISSION_LIMIT (ION's loss rate cap .99 allows 1375)"
    ((DTNC_SEGMENT_SIZE >= 1 && DTNC_SEGMENT_SIZE <= 65400)) ||
        unsupported "segment size $DTNC_SEGMENT_SIZE (one UDP datagram per segment)"
    [[ $DTNC_LISTEN =~ ^[0-9.]+:[0-9]+$ && $DTNC_PEER =~ ^[0-9.]+:[0-9]+$ ]] ||
        unsupported "address other than IPv4 ip:port ($DTNC_LISTEN, $DTNC_PEER)"
    if [ ! -x "$ION_PREFIX/bin/ionadmin" ] || [ ! -x "$CLIENT" ]; then
        json_error "ION ($ION_PREFIX/bin/ionadmin) or the client ($CLIENT) is missing: run build.sh"
        exit 2
    fi
    mkdir -p "$DTNC_WORKDIR" || { json_error "cannot create DTNC_WORKDIR $DTNC_WORKDIR"; exit 2; }
    # A private IPC namespace (ION's SysV shared memory and semaphores), PID
    # namespace (its daemons end with it) and mount namespace (a private
    # /dev/shm and /proc) per role; the network namespace is the caller's.
    # The inner side reads fd 8, a pipe whose only writer is this shell: if
    # this shell dies, even by SIGKILL, the inner side sees EOF and ends.
    alive="$DTNC_WORKDIR/.alive.$$"
    rm -f "$alive" && mkfifo "$alive" || { json_error "cannot make a fifo in $DTNC_WORKDIR"; exit 2; }
    DTNC_ION_INNER=1 DTNC_T0_MS=$t0 \
        unshare --ipc --pid --mount --fork --mount-proc --kill-child=SIGKILL \
        /bin/bash "$here/endpoint.sh" 8<"$alive" &
    upid=$!
    exec 9>"$alive"
    rm -f "$alive"
    forward() {
        local c
        c=$(ps -o pid= --ppid "$upid" 2>/dev/null | head -n1)
        [ -n "$c" ] && kill -TERM "$c" 2>/dev/null
    }
    trap forward TERM INT
    while :; do
        wait "$upid"
        rc=$?
        kill -0 "$upid" 2>/dev/null || break
    done
    exit $rc
fi

# ---- inside the private namespaces: PID 1 of its own PID namespace
W=$DTNC_WORKDIR
T0=$DTNC_T0_MS
export PATH="$ION_PREFIX/bin:$PATH"
export LD_LIBRARY_PATH="$ION_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mount -t tmpfs -o size=64m,mode=1777 tmpfs /dev/shm || say "could not mount a private /dev/shm"
cd "$W" || exit 2
rm -f ion.log client.ready result.json

E=$DTNC_ENGINE
P=$DTNC_PEER_ENGINE
S=$DTNC_SEGMENT_SIZE
L=$DTNC_RETRANSMISSION_LIMIT
# the data segment engine/session fields name the session's originator: the sender
if [ "$DTNC_ROLE" = sender ]; then orig=$E; else orig=$P; fi
ohd=$((1 + $(sdnv_len "$orig") + $(sdnv_len 1) + 1 + $(sdnv_len "$DTNC_CLIENT_SERVICE_ID") + 1 + $(sdnv_len "$S")))
MSS=$((S + ohd))
QTIME=$(((DTNC_RETRANSMISSION_MS + 999) / 1000))
((QTIME >= 1)) || QTIME=1
if [ "$DTNC_ROLE" = receiver ]; then # linger by rule (header)
    by_rule=$(((L + 1) * (QTIME + 1) * 1000))
    ((DTNC_LINGER_MS >= by_rule)) || export DTNC_LINGER_MS=$by_rule
fi
# segment loss rate p with smallest n such that p^n <= 1e-6 equal to L
# (libltpP.c computeRetransmissionLimits), then the bit error rate giving p
# for segments of MSS bytes: p = 1 - (1 - ber)^(8 MSS)
BER=$(awk -v L="$L" -v m="$MSS" 'BEGIN { p = exp(log(1e-6) / (L - 0.5)); printf "%.9g", 1 - exp(log(1 - p) / (8 * m)) }')
AGGR=$DTNC_BLOCK_LEN
RATE=125000000 # bytes/s in the contact plan: ION paces its output at it
HEAPWORDS=$((250000 + (DTNC_BLOCK_LEN < 16777216 ? DTNC_BLOCK_LEN : 16777216) / 2)) # words of 8 bytes; big blocks go through files
say "engine $E -> $P, listen $DTNC_LISTEN, peer $DTNC_PEER, segment size $S => ION max_segment_size $MSS (overhead $ohd), timer ${QTIME}s (asked ${DTNC_RETRANSMISSION_MS}ms), limit $L => maxber $BER"

# ION's working memory (wmSize) holds segmentation and reassembly state, the
# SDR's own (sdrWmSize, default 1 MB) its transaction log, which one block's
# segmentation fills: the defaults fail near a 1 MB block
BIG=$((DTNC_BLOCK_LEN < 50000000 ? DTNC_BLOCK_LEN : 50000000))
WMSIZE=$((5000000 + BIG * 20))
SDRWMSIZE=$((1000000 + BIG * 20))
cat >node.ionconfig <<EOF
pathName $W
wmSize $WMSIZE
sdrWmSize $SDRWMSIZE
heapWords $HEAPWORDS
EOF
cat >node.ionrc <<EOF
1 $E $W/node.ionconfig
s
m horizon +0
a contact +0 +86400000 $E $P $RATE
a contact +0 +86400000 $P $E $RATE
a range +0 +86400000 $E $P 0
EOF
cat >node.ltprc <<EOF
1 8
m screening n
m maxber $BER
a span $P 4 4 $MSS $AGGR 1 'udplso $DTNC_PEER' $QTIME
a seat 'udplsi $DTNC_LISTEN'
EOF
echo s >start.ltprc

cpid=""
client_signal() { [ -n "$cpid" ] && kill -TERM "$cpid" 2>/dev/null; }
trap client_signal TERM INT
if [ -e /proc/self/fd/8 ]; then # the outer shell's lifeline (above)
    { cat <&8 >/dev/null; kill -TERM $$ 2>/dev/null; } &
    exec 8<&-
fi

stop_node() {
    say "stopping ION"
    timeout 5 ltpadmin . >&2 2>>"$W/admin.log" </dev/null
    timeout 5 ionadmin . >&2 2>>"$W/admin.log" </dev/null
    # whatever is left of ION in this PID namespace
    for p in $(ps -e -o pid= 2>/dev/null); do
        [ "$p" -ne $$ ] && [ -d "/proc/$p" ] && kill -KILL "$p" 2>/dev/null
    done
    ipcrm -a 2>/dev/null # only this private IPC namespace's
    say "after stop: $(ipcs -m | grep -c '^0x') shm segments, $(ipcs -s | grep -c '^0x') semaphore sets"
}

finish() { # print the client's result line, or an error line
    local line=""
    [ -s result.json ] && line=$(tail -n 1 result.json)
    if [ -n "$line" ]; then
        printf '%s\n' "$line"
    else
        json_error "$1" "$(awk -v a="$T0" -v b="$(date +%s%3N)" 'BEGIN { printf "%.3f", (b - a) / 1000 }')"
    fi
}

say "starting ION node $E"
if ! timeout 20 ionadmin node.ionrc >&2 </dev/null || ! timeout 20 ltpadmin node.ltprc >&2 </dev/null; then
    stop_node
    finish "ION would not start (see ion.log in $W)"
    exit 0
fi

DTNC_READY_FILE=$W/client.ready "$CLIENT" >result.json &
cpid=$!
# the engine (and so udplsi's port) starts only once the client service is
# open: a receiver's port is dtnconform's sign that it is ready to take data
for _ in $(seq 1 500); do
    [ -e client.ready ] && break
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.01
done
timeout 20 ltpadmin start.ltprc >&2 </dev/null
grep -h 'max timeouts' ion.log >&2
# ION binds udplsi's port about a second before it processes what arrives
# there: a checkpoint sent as the port was bound was answered 997 ms late,
# one sent after this pause in 3 ms (2026-11-30, licklider sending)
sleep "${DTNC_ION_SETTLE_S:-1.2}"
: >ready # endpoint.toml's run.ready: dtnconform starts the sender now
while kill -0 "$cpid" 2>/dev/null; do
    wait "$cpid"
done
stop_node
finish "the client ended without a result (see stderr)"
exit 0
