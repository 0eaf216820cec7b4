#!/usr/bin/env bash
# forks.sh [SERVER_SH...]: the processes a command server forks, and the
# programs it executes, on the host: for a lone `true` (a batch of one;
# run_job in programs from before it), each request naming the job before
# it as collected, as clients do; per job of a batch of 16 run with
# run_jobs and add_job (the request's own forks included); and per second
# of a quiet command whose output streams,
# counted with strace -f on this machine's dash: the server runs 1 job,
# then 9 jobs one after another, and the difference over 8 is the cost of
# one warm job (the server's own start and its sweep cancel out). Each job
# has the output cap clients send by default, 1 GiB (CAP=N bytes for
# another, CAP=none for none). SERVER_SH is a program file (the modules of
# ops/ssh/internal/hostproto/server joined). Default: the program of the
# work tree and the one of the last commit, side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
cap=${CAP:-1073741824}
[ "$cap" != none ] || cap="''"
command -v strace >/dev/null || { echo "forks.sh needs strace (apt-get install strace)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
server=ops/ssh/internal/hostproto/server
if [ "$#" = 0 ]; then
	# The modules in the order of their names, as server.go sends them
	# (a commit from before the split has one ops/ssh/server.sh).
	if git cat-file -e "HEAD:$server" 2>/dev/null; then
		for f in $(git ls-tree --name-only "HEAD:$server" | LC_ALL=C sort | grep '\.sh$'); do
			git show "HEAD:$server/$f"
		done >"$work/committed.sh"
	else
		git show HEAD:ops/ssh/server.sh >"$work/committed.sh"
	fi
	# shellcheck disable=SC2046 # names without blanks
	cat $(printf '%s\n' "$server"/*.sh | LC_ALL=C sort) >"$work/server.sh"
	set -- "$work/committed.sh" "$work/server.sh"
fi
# The bootstrap of server.go: reads the program up to its end mark.
# shellcheck disable=SC2016 # run by the server's shell
boot='n=$(printf "\nx"); n=${n%x}; p=; c=; i=0; while IFS= read -r l; do [ "$l" = "#pi-remote-end" ] && break; c=$c$l$n; i=$((i+1)); [ $i -lt 32 ] || { p=$p$c; c=; i=0; }; done; eval "$p$c"'

# answers: how many jobs the server answered so far (a batch of one ends
# "OK", run_job, of the programs before it, with the job's status).
answers() {
	tr '\036' '\n' <"$work/out" | grep -cE '^M(0|OK)$' || true
}

# start_line ID SCRIPT FORGET: the request that starts job ID alone,
# running SCRIPT (quoted), naming the job FORGET (or '') as collected: a
# batch of one, or run_job for a program from before it ($style).
start_line() {
	if [ "$style" = run_job ]; then
		echo "Mrun_job $1 0 $2 '' '' '' '' 60 $cap label $3"
	else
		echo "Mrun_jobs 60 $cap $3 $1 $2 '' '' '' '' label"
	fi
}

# traced SERVER FEED [ARG...]: "FORKS EXECS" for SERVER run on dash under
# strace, fed its program, a moment to start, then what FEED ARG... prints;
# its answers go to $work/out.
traced() {
	local server=$1 cache tmp
	shift
	cache=$(mktemp -d -p "$work") tmp=$(mktemp -d -p "$work")
	: >"$work/out"
	{
		cat "$server"
		echo "serve M 0.2 yes abcdef 0123456789abcdef 1"
		echo "#pi-remote-end"
		sleep 2
		"$@"
	} | XDG_CACHE_HOME=$cache TMPDIR=$tmp strace --seccomp-bpf -f -qq -e trace=clone,clone3,fork,vfork,execve -o "$work/trace" dash -c "$boot" >"$work/out" 2>&1
	echo "$(grep -cE 'clone\(|clone3\(|fork\(' "$work/trace") $(grep -E execve "$work/trace" | grep -cE '= 0$')"
}

# lone_jobs N: N lone jobs (start_line), each sent once the one before is
# answered.
lone_jobs() {
	for i in $(seq 1 "$1"); do
		# As a client does, each request names the job before it,
		# whose result the client has: its files go.
		forget="''"
		[ "$i" = 1 ] || forget="$((i - 1))123456789abcde"
		start_line "${i}123456789abcde" true "$forget"
		# Its answer first (at most 30 s), then a moment for the
		# waiter to end.
		for _ in $(seq 1 300); do
			[ "$(answers)" -lt "$i" ] || break
			sleep 0.1
		done
		sleep 0.3
	done
}

# streamed_job SECONDS: one lone job (start_line) of a command that prints a
# line and sleeps SECONDS, whose output the client asks to stream after
# 0.1 s (as clients do), answered once it ends.
streamed_job() {
	start_line 1123456789abcde "'echo start; sleep $1'" "''"
	sleep 0.1
	echo s
	for _ in $(seq 1 $(($1 * 10 + 300))); do
		[ "$(answers)" -lt 1 ] || break
		sleep 0.1
	done
	sleep 0.3
}

# count_streamed SERVER SECONDS: "FORKS EXECS ANSWERS" for a server
# running one streamed job of SECONDS.
count_streamed() {
	echo "$(traced "$1" streamed_job "$2") $(answers)"
}

# count SERVER N: "FORKS EXECS ANSWERS" for a server running N jobs.
count() {
	echo "$(traced "$1" lone_jobs "$2") $(answers)"
}

# batch_answered: true once the server has answered the batch.
batch_answered() {
	tr '\036' '\n' <"$work/out" | grep -q '^MOK$'
}

# ended: how many jobs of the batch ended with 0 so far.
ended() {
	tr '\036' '\n' <"$work/out" | grep -c '^X [0-9a-f]* 0$' || true
}

# batch_jobs N: one run_jobs request of N jobs (none for N=0), ended once
# every job has.
batch_jobs() {
	if [ "$1" -gt 0 ]; then
		echo "Mrun_jobs 60 $cap ''"
		for i in $(seq 1 "$1"); do
			printf 'Madd_job %02d23456789abcde true %s %s %s %s label\n' "$i" "''" "''" "''" "''"
		done
		# The client ends the request once every job has ended.
		for _ in $(seq 1 300); do
			[ "$(ended)" -lt "$1" ] || break
			sleep 0.1
		done
		echo e
		for _ in $(seq 1 300); do
			! batch_answered || break
			sleep 0.1
		done
	fi
	sleep 0.5
}

# count_batch SERVER N: "FORKS EXECS ENDED" for a server that runs one
# batch of N jobs (run_jobs; N=0: the server alone).
count_batch() {
	echo "$(traced "$1" batch_jobs "$2") $(ended)"
}

printf '%-28s %14s %14s %16s %16s %16s\n' "server" "lone forks/job" "lone execs/job" "batch forks/job" "batch execs/job" "stream forks/s"
for server in "$@"; do
	style=run_jobs
	! grep -q '^run_job()' "$server" || style=run_job
	read -r f1 e1 a1 <<<"$(count "$server" 1)"
	read -r f9 e9 a9 <<<"$(count "$server" 9)"
	if [ "$a1" != 1 ] || [ "$a9" != 9 ]; then
		echo "$server: not every job was answered ($a1/1, $a9/9)" >&2
		exit 1
	fi
	read -r b0 x0 _ <<<"$(count_batch "$server" 0)"
	read -r b16 x16 n16 <<<"$(count_batch "$server" 16)"
	if [ "$n16" != 16 ]; then
		echo "$server: not every job of the batch ended with 0 ($n16/16)" >&2
		exit 1
	fi
	# A streamed job of 2 s and one of 12 s: the difference over 10 s is
	# what following a quiet command's output costs per second.
	read -r s2 _ n2 <<<"$(count_streamed "$server" 2)"
	read -r s12 _ n12 <<<"$(count_streamed "$server" 12)"
	if [ "$n2" != 1 ] || [ "$n12" != 1 ]; then
		echo "$server: a streamed job was not answered ($n2/1, $n12/1)" >&2
		exit 1
	fi
	printf '%-28s %14s %14s %16s %16s %16s\n' "$(basename "$server")" "$(echo "scale=2; ($f9 - $f1) / 8" | bc)" "$(echo "scale=2; ($e9 - $e1) / 8" | bc)" \
		"$(echo "scale=2; ($b16 - $b0) / 16" | bc)" "$(echo "scale=2; ($x16 - $x0) / 16" | bc)" "$(echo "scale=2; ($s12 - $s2) / 10" | bc)"
done
