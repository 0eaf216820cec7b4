#!/usr/bin/env bash
# Benchmark of the SSH backend against OpenSSH on this machine: per tool call
# (pi-remote's persistent connection vs a new ssh per call vs a
# ControlMaster), 64 MiB transfers vs scp, and round trips per call at 20 ms
# of added RTT; rpc reads; durable commands (steady cost and re-attach after
# a reset). Needs sshd and ssh (apt-get install openssh-server
# openssh-client ripgrep fd-find); runs as root or as the user sshd logs in.
# Writes docs/bench-ssh.md, docs/bench-rpc.md and docs/bench-reattach.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/bench-ssh.md
mkdir -p docs
tmp=$(mktemp)
PI_REMOTE_BENCH_OUT="$tmp" go test -run '^$' -bench BenchmarkRemoteTools -benchtime 1x -timeout 30m ./integration/ >/dev/null
{
	echo "# SSH backend benchmark"
	echo
	echo "Made by \`bash scripts/bench.sh\` on $(date -u +%Y-%m-%d) — $(nproc) cores, $(uname -sr), $(/usr/sbin/sshd -V 2>&1 | head -1)."
	echo "One sshd on a loopback port, same fixtures for every column; times are wall clock per tool call"
	echo "(pi-remote: through the tool layer on a warm connection; OpenSSH: \`ssh host <equivalent command>\`)."
	echo
	cat "$tmp"
} >"$out"
rm -f "$tmp"
cat "$out"

# RPC: sequential reads through pi-remote rpc against a ControlMaster.
rpc_out=docs/bench-rpc.md
tmp=$(mktemp)
PI_REMOTE_BENCH_RPC_OUT="$tmp" go test -run '^$' -bench BenchmarkRPCReads -benchtime 1x -timeout 30m ./integration/ >/dev/null
{
	echo "# RPC benchmark"
	echo
	echo "Made by \`bash scripts/bench.sh\` on $(date -u +%Y-%m-%d) — $(nproc) cores, $(uname -sr), $(/usr/sbin/sshd -V 2>&1 | head -1)."
	echo "One sshd on a loopback port; the rpc client sends a command and waits for its response line before the next."
	echo
	cat "$tmp"
} >"$rpc_out"
rm -f "$tmp"
cat "$rpc_out"

# Durable commands at 20 ms RTT: bash true against a bare round trip, and
# how soon a running command's output flows again after a reset.
reattach_out=docs/bench-reattach.md
tmp=$(mktemp)
PI_REMOTE_BENCH_REATTACH_OUT="$tmp" go test -run '^$' -bench BenchmarkReattach -benchtime 1x -timeout 30m ./integration/ >/dev/null
{
	echo "# Durable commands benchmark"
	echo
	echo "Made by \`bash scripts/bench.sh\` on $(date -u +%Y-%m-%d) — $(nproc) cores, $(uname -sr), $(/usr/sbin/sshd -V 2>&1 | head -1)."
	echo "One sshd behind a proxy on loopback that adds 20 ms of round-trip time; pi-remote's own client."
	echo
	cat "$tmp"
} >"$reattach_out"
rm -f "$tmp"
cat "$reattach_out"
