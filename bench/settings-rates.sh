#!/usr/bin/env bash
# CPU per request of GET /system/v1/settings (workload G of ../shared/bench)
# against the harness's bare net/http server, at the rates each is driven at.
#
# Why: the harness divides each server's CPU by the requests it served in a
# closed loop of 16 clients, and each server is driven as fast as the load
# generator, on the same two cores, can go. The project answers in gzip (Go's
# client asks for it) and the client then inflates ~34 KB a response, so the
# project is driven at about a third of bare's rate. A Go server's CPU per
# request depends on its rate (at lower rates more of it is waking threads and
# polling), so this script also drives both at the same rates: bare with 16
# clients at the project's own closed-loop rate, and both at fixed rates.
#
# Needs the harness's tools: bash ../shared/bench/run.sh install (vegeta, the
# bare server, benchtool) and its data (gen data, for settings.json).
# Usage: bash bench/settings-rates.sh      knobs: ROUNDS ROUND_S RATES CONC WORK
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
ROUND_S=${ROUND_S:-10}
RATES=${RATES:-"1000 5000 10000"}
CONC=${CONC:-16}
WORK=${WORK:-/tmp/agritrade-settings-rates}
BENCHWORK=${BENCHWORK:-/tmp/benchwork}
VEGETA=${VEGETA:-/tmp/benchbin/vegeta}
BARE=${BARE:-$BENCHWORK/bin/bare}
BENCHTOOL=${BENCHTOOL:-$BENCHWORK/bin/benchtool}
SETTINGS=${SETTINGS:-$BENCHWORK/data/settings.json}
PROJECT_ADDR=${PROJECT_ADDR:-127.0.0.1:18381}
BARE_ADDR=${BARE_ADDR:-127.0.0.1:18391}
HZ=$(getconf CLK_TCK)

for f in "$VEGETA" "$BARE" "$BENCHTOOL"; do
	[ -x "$f" ] || { echo "missing $f: run bash ../shared/bench/run.sh install" >&2; exit 1; }
done
if [ ! -f "$SETTINGS" ]; then
	mkdir -p "$WORK/data"
	"$BENCHWORK/bin/gen" data -seed 42 -n 1000 -out "$WORK/data" >/dev/null
	SETTINGS=$WORK/data/settings.json
fi

rm -rf "$WORK/project" "$WORK/bare"
mkdir -p "$WORK/project" "$WORK/bare/files" "$WORK/raw"
echo "building the project into $WORK ..." >&2
CGO_ENABLED=0 go build -trimpath -o "$WORK/agritrade" ./cmd/agritrade
export AGRITRADE_DATA_DIR=$WORK/project
"$WORK/agritrade" migrate up >/dev/null
TOKEN=$("$WORK/agritrade" token --sub U1 --org O1 --roles admin --ttl 2h 2>/dev/null | tail -n 1)

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
AGRITRADE_HTTP_ADDR=$PROJECT_ADDR AGRITRADE_LOG_LEVEL=warn "$WORK/agritrade" serve >"$WORK/project.log" 2>&1 &
PPID_=$!
pids+=("$PPID_")
"$BARE" -db "$WORK/bare/bare.db" -addr "$BARE_ADDR" -settings "$SETTINGS" -files "$WORK/bare/files" >"$WORK/bare.log" 2>&1 &
BPID=$!
pids+=("$BPID")
for url in "http://$BARE_ADDR/settings" "http://$PROJECT_ADDR/system/v1/settings"; do
	for _ in $(seq 50); do curl -fsS -o /dev/null -H "Authorization: Bearer $TOKEN" "$url" 2>/dev/null && break; sleep 0.2; done
done
echo "GET http://$PROJECT_ADDR/system/v1/settings" >"$WORK/project.targets"
echo "GET http://$BARE_ADDR/settings" >"$WORK/bare.targets"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run NAME TARGET RATE WORKERS [header...]: one vegeta run; prints
# req/s, the server's and the client's CPU per request (µs), p99 (ms)
run() {
	local name=$1 target=$2 rate=$3 workers=$4 pid t0 t1 sum
	shift 4
	pid=$BPID
	[ "$target" = project ] && pid=$PPID_
	local args=(attack -targets="$WORK/$target.targets" -duration="${ROUND_S}s" -timeout=30s -keepalive=true -max-body=0 -rate="$rate")
	[ "$workers" != - ] && args+=(-workers="$workers" -max-workers="$workers")
	[ "$target" = project ] && args+=(-header "Authorization: Bearer $TOKEN")
	for h in "$@"; do args+=(-header "$h"); done
	t0=$(ticks "$pid")
	local TIMEFORMAT='%U %S'
	{ time "$VEGETA" "${args[@]}" >"$WORK/raw/$name.bin"; } 2>"$WORK/raw/$name.time"
	t1=$(ticks "$pid")
	"$VEGETA" report -type=json "$WORK/raw/$name.bin" >"$WORK/raw/$name.json"
	sum=$("$BENCHTOOL" vegsum "$WORK/raw/$name.json")
	read -r cu cs <"$WORK/raw/$name.time"
	echo "$sum" | awk -F'\t' -v s=$((t1 - t0)) -v hz="$HZ" -v cu="$cu" -v cs="$cs" \
		'{ printf "%.0f\t%.1f\t%.1f\t%s\n", $1, s / hz / $5 * 1e6, (cu + cs) / $5 * 1e6, $3 }'
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

declare -A RPS CPU CLI P99
record() { # KEY NAME TARGET RATE WORKERS [header...]
	local key=$1 line
	shift
	line=$(run "$@")
	read -r r c k p <<<"$line"
	RPS[$key]+="$r " CPU[$key]+="$c " CLI[$key]+="$k " P99[$key]+="$p "
	printf '  %-28s %8s req/s  server %6s µs/req  client %6s µs/req\n' "$key" "$r" "$c" "$k" >&2
}
med() { tr ' ' '\n' <<<"$1" | grep . | median; }

echo "warm-up" >&2
run warm-b bare 0 "$CONC" >/dev/null
run warm-p project 0 "$CONC" >/dev/null

echo "closed loop, $CONC clients, $ROUNDS rounds of ${ROUND_S}s, alternated" >&2
for ((r = 1; r <= ROUNDS; r++)); do
	record "closed bare" "c-b-$r" bare 0 "$CONC"
	record "closed project (gzip)" "c-p-$r" project 0 "$CONC"
	record "closed project (identity)" "c-i-$r" project 0 "$CONC" "Accept-Encoding: identity"
done
PRATE=$(med "${RPS[closed project (gzip)]}")
echo "bare with $CONC clients held to the project's rate ($PRATE/s)" >&2
for ((r = 1; r <= ROUNDS; r++)); do
	record "bare at project's rate" "h-b-$r" bare "$PRATE" "$CONC"
done
for rate in $RATES; do
	echo "fixed rate $rate/s" >&2
	record "fixed $rate bare" "f-b-$rate" bare "$rate" -
	record "fixed $rate project" "f-p-$rate" project "$rate" -
done

printf '\n%-30s %9s %13s %13s %8s\n' "run (medians)" "req/s" "server µs/req" "client µs/req" "p99 ms"
for key in "closed bare" "closed project (gzip)" "closed project (identity)" "bare at project's rate"; do
	printf '%-30s %9s %13s %13s %8s\n' "$key" "$(med "${RPS[$key]}")" "$(med "${CPU[$key]}")" "$(med "${CLI[$key]}")" "$(med "${P99[$key]}")"
done
for rate in $RATES; do
	for t in bare project; do
		key="fixed $rate $t"
		printf '%-30s %9s %13s %13s %8s\n' "$key" "$(med "${RPS[$key]}")" "$(med "${CPU[$key]}")" "$(med "${CLI[$key]}")" "$(med "${P99[$key]}")"
	done
done

ratio() { awk -v a="$(med "${CPU[$1]}")" -v b="$(med "${CPU[$2]}")" 'BEGIN{printf "%.2f", a / b}'; }
printf '\nserver CPU per request, project/bare\n'
printf '  %-62s %s\n' "both closed loop, the project in gzip (the harness's G figure)" "$(ratio "closed project (gzip)" "closed bare")"
printf '  %-62s %s\n' "both closed loop, the project in identity (bare's bytes)" "$(ratio "closed project (identity)" "closed bare")"
printf '  %-62s %s\n' "the project closed loop in gzip, bare held to its rate" "$(ratio "closed project (gzip)" "bare at project's rate")"
for rate in $RATES; do
	printf '  %-62s %s\n' "both at a fixed $rate/s" "$(ratio "fixed $rate project" "fixed $rate bare")"
done
