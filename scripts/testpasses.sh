#!/usr/bin/env bash
# testpasses.sh: make test's three passes, two of them beside the third.
#
# The full pass runs every test, packages one at a time so that CPU ground-truth tests do not compete with
# each other. It is bound by wall time: its lab tests wait on real components and use about a third of two
# cores. So the race pass (-short: the race detector over everything but the real-process timing tests)
# and the BPF paths on Linux 6.1 (scripts/kernelvm/run) run beside it, one after the other, at the lowest
# CPU priority (nice 19): they take what the full pass leaves. The full pass is what a busy node looks
# like to the tests, as they must hold on one anyway. The side passes' output is kept in a file and printed
# whole after the full pass's. The exit status is 0 only if all three passed. Ctrl-C or a kill stops
# both.
#
# Usage: GO=go scripts/testpasses.sh
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

side_log=$(mktemp -t tare-test-side.XXXXXX)
side() {
	GO=$GO "$GO" run ./scripts/gotest -race -short -count=1 -timeout 40m ./... || return
	GO=$GO ./scripts/kernelvm/run
}
# setsid: its own process group, so that the trap stops the whole of it (go test's children included).
setsid nice -n 19 bash -c "$(declare -f side); GO='$GO' side" >"$side_log" 2>&1 &
side_pid=$!
stop_side() {
	kill -- -"$side_pid" 2>/dev/null
	wait "$side_pid" 2>/dev/null
	rm -f "$side_log"
}
trap 'stop_side; exit 130' INT
trap 'stop_side; exit 143' TERM

echo "testpasses: the race pass and the Linux 6.1 check run beside the full pass (nice 19); their output follows it"
GO=$GO "$GO" run ./scripts/gotest -count=1 -p 1 -timeout 75m ./...
full=$?

wait "$side_pid"
side_status=$?
trap - INT TERM
echo "--- the race pass and the Linux 6.1 check (run beside the full pass)"
cat "$side_log"
rm -f "$side_log"
if [ "$full" -ne 0 ]; then
	exit "$full"
fi
exit "$side_status"
