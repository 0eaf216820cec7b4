#!/usr/bin/env bash
# Benchmark of the SSH backend against OpenSSH on this machine: per tool call
# (pi-remote's persistent connection vs a new ssh per call vs a
# ControlMaster), 64 MiB transfers vs scp, and round trips per call at 20 ms
# of added RTT; rpc reads; durable commands (steady cost and re-attach after
# a reset); batches of 16 calls at 0/20/100 ms of added RTT against a slow
# login shell (creates the user pi-slowrc); one rpc process serving up to
# 200 hosts (creates pi-fastrc too); a keystroke to the screen in the
# terminal interface, long session and 8 running tools against empty
# (needs tmux). Needs sshd
# and ssh (apt-get install openssh-server openssh-client ripgrep fd-find
# tmux); runs as root or as the user sshd logs in. Writes
# docs/bench-ssh.md, docs/bench-rpc.md, docs/bench-reattach.md,
# docs/bench-batches.md, docs/bench-hosts.md and docs/bench-tui.md;
# `bash scripts/bench.sh bench-hosts` makes that one only.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs

# Arguments, if any, name the reports to make (e.g. bench-hosts); by
# default every one, after the soak tier (README, "Tests"): the test suite
# with its long soaks and the whole host matrix, which a release (and so a
# new set of figures) must pass.
only=("$@")
if [ "${#only[@]}" -eq 0 ]; then
	PI_REMOTE_SOAK=1 bash scripts/test.sh
fi

# The time this machine takes to start a process (sh forking and
# executing true), in ms: a command on an SSH host costs about ten of them
# on the host's side, so figures made on different machines compare
# through it.
spawn=$(sh -c 'start=$(date +%s%N); i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done; echo "$start $(date +%s%N)"' |
	awk '{ printf "%.1f", ($2 - $1) / 300 / 1e6 }')

# report DOC VAR BENCHMARK TITLE DESCRIPTION runs one benchmark of
# integration/, which writes its tables to the file named by $VAR, and
# writes DOC: a title, how and where it was made, the description, the
# tables.
report() {
	local doc=$1 var=$2 bench=$3 title=$4 description=$5 tmp name
	name=$(basename "$doc" .md)
	if [ "${#only[@]}" -gt 0 ] && ! printf '%s\n' "${only[@]}" | grep -qx "$name"; then
		return
	fi
	tmp=$(mktemp)
	env "$var=$tmp" go test -run '^$' -bench "$bench" -benchtime 1x -timeout 30m ./integration/ >/dev/null
	{
		echo "# $title"
		echo
		echo "Made by \`bash scripts/bench.sh\` on $(date -u +%Y-%m-%d) — $(nproc) cores, $(uname -sr), $(/usr/sbin/sshd -V 2>&1 | head -1); starting a process took $spawn ms."
		echo "$description"
		echo
		cat "$tmp"
	} >"$doc"
	rm -f "$tmp"
	cat "$doc"
}

report docs/bench-ssh.md PI_REMOTE_BENCH_OUT BenchmarkRemoteTools "SSH backend benchmark" \
	"One sshd on a loopback port, same fixtures for every column; times are wall clock per tool call
(pi-remote: through the tool layer on a warm connection; OpenSSH: \`ssh host <equivalent command>\`)."

# RPC: sequential reads through pi-remote rpc against a ControlMaster.
report docs/bench-rpc.md PI_REMOTE_BENCH_RPC_OUT BenchmarkRPCReads "RPC benchmark" \
	"One sshd on a loopback port; the rpc client sends a command and waits for its response line before the next."

# Durable commands at 20 ms RTT: bash true against a bare round trip, and
# how soon a running command's output flows again after a reset.
report docs/bench-reattach.md PI_REMOTE_BENCH_REATTACH_OUT BenchmarkReattach "Durable commands benchmark" \
	"One sshd behind a proxy on loopback that adds 20 ms of round-trip time; pi-remote's own client."

# Batches of 16 tool calls, in-process and through rpc, at 0/20/100 ms of
# added RTT, against a user whose login shell sleeps 0.5 s (needs root).
report docs/bench-batches.md PI_REMOTE_BENCH_BATCH_OUT BenchmarkBatches "Batch benchmark" \
	"One sshd on loopback, reached through a proxy that adds the round-trip time shown; the user's ~/.bashrc sleeps 0.5 s (pyenv, nvm or conda make real ones that slow). The rows \"read, 16 files\" are where the speed of reads beyond the pool is measured: the test suite (TestReadsBeyondThePoolOpenNoSession) checks only that they open no session and wait for no login shell."

# One rpc process serving 1, 50 and 200 hosts (an sshd each, named in an
# ssh_config), with fast and slow login shells (needs root).
report docs/bench-hosts.md PI_REMOTE_BENCH_HOSTS_OUT BenchmarkManyHosts "Many hosts benchmark" \
	"One \`pi-remote rpc\` process; each host is an sshd of its own on a loopback port of this machine, all named in one ssh_config file."

# The terminal interface (needs tmux): how soon a keystroke reaches the
# screen in sessions of 500 and 800 messages, and with 8 tools running at
# 80×24, against an empty session in the same run. (A bound on it was
# part of the test suite, where a loaded machine could miss it; the test
# keeps the behaviour, this report the figure.)
report docs/bench-tui.md PI_REMOTE_BENCH_TUI_OUT BenchmarkTerminalUIKeystroke "Terminal interface benchmark" \
	"\`pi-remote run\` in a 100×30 tmux window (80×24 where the row says so), a scripted model; 20 keys (the Greek letters α to υ, which no other redraw shows) typed one at a time through tmux's control mode, each timed from tmux being told to type it to the redraw showing it reaching tmux. In the last row the model runs 8 bash loops that each print a line every 0.5 s while the keys are typed, then the run is aborted and the row checks that the scrollback holds no copy of the live part. The test suite checks that the keys reach the screen (TestTerminalUIKeystrokesInALongSession), not how soon: that figure is this report's. This report alone: \`bash scripts/bench.sh bench-tui\` (the table only: \`PI_REMOTE_BENCH_TUI_OUT=FILE go test -run '^\$' -bench BenchmarkTerminalUIKeystroke -benchtime 1x ./integration/\`)."
