# Stages and lanes for scripts/test (sourced, not run).
#
# A stage is one command; its output goes to $STAGE_LOGS/NAME.log and its
# start, end and exit status to $STAGE_LOGS/stages.tsv, which
# scripts/test-times turns into the table printed at the end of a run.
# A lane is a shell function run in the background that runs its stages
# one after the other and stops at the first that fails; lanes that share
# nothing run at once.
#
#   stage NAME CMD...   run CMD as stage NAME; its log is printed if it fails
#   lane NAME FUNC      start FUNC in the background as lane NAME
#   lanes_wait          wait for every lane started; fails if one failed
#   lanes_stop          stop every lane started (SIGTERM to all it runs)
#
# Needs STAGE_LOGS (a directory) and STAGE_T0 (the run's start, from
# date +%s.%N).

stage_clock() { # seconds since STAGE_T0, as M:SS
	local now
	now=$(date +%s.%N)
	awk -v a="$STAGE_T0" -v b="$now" 'BEGIN { s = int(b - a); printf "%d:%02d", s / 60, s % 60 }'
}

stage() {
	local name=$1 start end rc=0
	shift
	start=$(date +%s.%N)
	printf 'test: [%s] %s started\n' "$(stage_clock)" "$name" >&2
	# A child of its own, waited for: a shell function given as CMD then
	# stops at its first failing command (set -e holds in it), which it
	# would not as the left side of ||.
	("$@") >"$STAGE_LOGS/$name.log" 2>&1 </dev/null &
	wait $! || rc=$?
	end=$(date +%s.%N)
	printf '%s\t%s\t%s\t%s\n' "$name" "$start" "$end" "$rc" >>"$STAGE_LOGS/stages.tsv"
	if ((rc != 0)); then
		{
			printf 'test: [%s] %s FAILED (exit %d); the last 400 lines of %s:\n' \
				"$(stage_clock)" "$name" "$rc" "$STAGE_LOGS/$name.log"
			tail -n 400 "$STAGE_LOGS/$name.log"
			printf 'test: end of %s\n' "$name"
		} >&2
		return "$rc"
	fi
	printf 'test: [%s] %s passed (%.0f s)\n' "$(stage_clock)" "$name" \
		"$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" >&2
}

STAGE_LANES=()
STAGE_PIDS=()

lane() {
	local name=$1 fn=$2
	(
		set -e
		"$fn"
	) &
	STAGE_LANES+=("$name")
	STAGE_PIDS+=($!)
}

# SIGTERM to every lane and all it started, children first (servers,
# meson and node end what they started on TERM).
stage_kill_tree() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		stage_kill_tree "$c"
	done
	kill -TERM "$1" 2>/dev/null || true
}

lanes_stop() {
	local p
	for p in "${STAGE_PIDS[@]}"; do
		stage_kill_tree "$p"
	done
	wait 2>/dev/null || true
}

# Every lane runs to its end (or its first failure): one run reports all the
# lanes that fail, not only the first.
lanes_wait() {
	local i rc failed=()
	for i in "${!STAGE_PIDS[@]}"; do
		rc=0
		wait "${STAGE_PIDS[$i]}" || rc=$?
		((rc == 0)) || failed+=("${STAGE_LANES[$i]}")
	done
	STAGE_LANES=()
	STAGE_PIDS=()
	if ((${#failed[@]} > 0)); then
		printf 'test: lane(s) failed: %s\n' "${failed[*]}" >&2
		return 1
	fi
}
