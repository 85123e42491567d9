#!/usr/bin/env bash
# Runs one set-up step of `make demo` / `make test`, so a first run on a bare machine says what
# it is doing and where its time goes.
#
# Usage: scripts/step.sh TIMINGS LABEL WHAT -- COMMAND...
#   Prints "==> LABEL: WHAT" before COMMAND, a heartbeat line every ATOM_STEP_HEARTBEAT seconds
#   (default 60) while it runs (with the last "[ NN%]" or "[n/total]" progress mark of
#   $ATOM_STEP_LOG when that file is set and has one: the build's progress), and
#   "<== LABEL: N s" after; appends
#   "<epoch> <seconds> <label>" to TIMINGS for scripts/step.sh --summary.
# Usage: scripts/step.sh --summary TIMINGS SINCE
#   Prints the steps recorded in TIMINGS since the epoch SINCE, and their total.
# Why a heartbeat: the wheel build alone is ~10 min of silence on 2 cores otherwise, which reads
# as a hang. COMMAND's exit status is this script's.
set -uo pipefail

if [[ "${1:-}" == "--summary" ]]; then
  timings="$2" since="$3"
  [[ -f "$timings" ]] || exit 0
  awk -v since="$since" '
    $1 >= since { label = $3; for (i = 4; i <= NF; i++) label = label " " $i
                  printf "    %-34s %4d s  (%dm%02ds)\n", label, $2, $2 / 60, $2 % 60; total += $2; n++ }
    END { if (n) printf "    %-34s %4d s  (%dm%02ds)\n", "total", total, total / 60, total % 60 }
  ' "$timings"
  exit 0
fi

timings="$1" label="$2" what="$3"
shift 3
[[ "${1:-}" == "--" ]] && shift
every="${ATOM_STEP_HEARTBEAT:-60}"
start="$(date +%s)"
echo "==> $label: $what" >&2
# The heartbeat holds no pipe of the step's (its stdout may be captured, its stderr piped to
# tee) and takes its sleep with it when stopped, so nothing waits on a sleeping heartbeat.
(
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM
  while :; do
    sleep "$every" &
    nap=$!
    wait "$nap"
    now="$(date +%s)"
    progress=""
    if [[ -n "${ATOM_STEP_LOG:-}" && -f "$ATOM_STEP_LOG" ]]; then
      # make prints "[ 45%]", ninja "[120/267]".
      progress="$(grep -oE '\[ *[0-9]+%\]|\[[0-9]+/[0-9]+\]' "$ATOM_STEP_LOG" 2>/dev/null | tail -n1 | tr -d ' ')"
    fi
    echo "    ... $label: still running, $(((now - start) / 60)) min $(((now - start) % 60)) s${progress:+, compiled $progress}" >&2
  done
) >/dev/null &
beat=$!
trap 'kill "$beat" 2>/dev/null' EXIT
"$@"
status=$?
kill "$beat" 2>/dev/null
wait "$beat" 2>/dev/null
end="$(date +%s)"
echo "<== $label: $((end - start)) s$([[ $status -eq 0 ]] || echo " (failed, exit $status)")" >&2
mkdir -p "$(dirname "$timings")"
echo "$end $((end - start)) $label" >>"$timings"
exit "$status"
