#!/usr/bin/env bash
# forks.sh [SERVER_SH...]: the processes a command server forks, and the
# programs it executes, on the host for a lone `true` run with run_job,
# counted with strace -f on this machine's dash: the server runs 1 job,
# then 9 jobs one after another, and the difference over 8 is the cost of
# one warm job (the server's own start and its sweep cancel out). Default:
# ops/ssh/server.sh and the one of the last commit, side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "forks.sh needs strace (apt-get install strace)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$#" = 0 ]; then
	git show HEAD:ops/ssh/server.sh >"$work/committed.sh"
	set -- "$work/committed.sh" ops/ssh/server.sh
fi
# The bootstrap of server.go: reads the program up to its end mark.
# shellcheck disable=SC2016 # run by the server's shell
boot='n=$(printf "\nx"); n=${n%x}; p=; c=; i=0; while IFS= read -r l; do [ "$l" = "#pi-remote-end" ] && break; c=$c$l$n; i=$((i+1)); [ $i -lt 32 ] || { p=$p$c; c=; i=0; }; done; eval "$p$c"'

# answers: how many jobs the server answered so far.
answers() {
	tr '\036' '\n' <"$work/out" | grep -c '^M0$' || true
}

# count SERVER N: "FORKS EXECS ANSWERS" for a server running N jobs.
count() {
	local cache tmp
	cache=$(mktemp -d -p "$work") tmp=$(mktemp -d -p "$work")
	: >"$work/out"
	{
		cat "$1"
		echo "serve M 0.2 yes abcdef 0123456789abcdef 1"
		echo "#pi-remote-end"
		sleep 2
		for i in $(seq 1 "$2"); do
			echo "Mrun_job ${i}123456789abcde 0 true '' '' '' '' 60 '' label ''"
			# Its answer first (at most 30 s), then a moment for the
			# waiter to end.
			for _ in $(seq 1 300); do
				[ "$(answers)" -lt "$i" ] || break
				sleep 0.1
			done
			sleep 0.3
		done
	} | XDG_CACHE_HOME=$cache TMPDIR=$tmp strace -f -qq -e trace=clone,clone3,fork,vfork,execve -o "$work/trace" dash -c "$boot" >"$work/out" 2>&1
	echo "$(grep -cE 'clone\(|clone3\(|fork\(' "$work/trace") $(grep -E execve "$work/trace" | grep -cE '= 0$') $(answers)"
}

printf '%-28s %12s %12s\n' "server" "forks/job" "execs/job"
for server in "$@"; do
	read -r f1 e1 a1 <<<"$(count "$server" 1)"
	read -r f9 e9 a9 <<<"$(count "$server" 9)"
	if [ "$a1" != 1 ] || [ "$a9" != 9 ]; then
		echo "$server: not every job was answered ($a1/1, $a9/9)" >&2
		exit 1
	fi
	printf '%-28s %12s %12s\n' "$(basename "$server")" "$(echo "scale=2; ($f9 - $f1) / 8" | bc)" "$(echo "scale=2; ($e9 - $e1) / 8" | bc)"
done
