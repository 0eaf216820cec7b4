# shellcheck shell=sh
#
# spawn.sh: the wrapper of a process started by Spawn (ops/ssh/spawn.go),
# on a session channel of its own. It is not part of the command server's
# program: spawn.go sends it after the same bootstrap, as the variable
# spawn_program and its eval, then the line "spawn WORD...", then the end
# mark; what the client writes after that is the process's stdin.
#
# The process (PROGRAM ARG..., run as it is, no shell in between) gets
# the channel's stdout and stderr, and for its stdin a pipe fed by a relay
# (cat) from the channel's stdin: a FIFO, opened at both ends by the
# wrapper and removed at once, in a directory of its own (0700) under
# TMPDIR. Everything runs in the process group the wrapper leads: sshd
# makes the session's process one, and where the server does not
# (dropbear), the wrapper first makes itself one with setsid. So the
# group is the wrapper's for as long as any of it runs, and a kill of
# "group 0" from inside it reaches its own processes and nothing else,
# whenever it is sent.
#
# The end of the channel's stdin (the client closed it, or sshd closed the
# channel, its connection gone) closes the process's stdin: it has GRACE
# seconds to exit, then the group gets SIGTERM, and SIGKILL GRACE seconds
# later (the relay does it, ignoring SIGTERM itself). When the process
# exits, what is left of its group gets SIGTERM at once and SIGKILL GRACE
# seconds later, and the wrapper exits with the process's status (the
# channel's exit status). The wrapper ignores SIGTERM once the process
# runs: it outlives the group's SIGTERM to report the status. A client
# that kills the process sends the channel the signal KILL, which OpenSSH
# delivers to the whole group.
#
# It leaves no file anywhere (but its directory, should it be killed in
# the moment between making it and removing it). Its only output before
# the process's own is one line, MARKER then READY PID (the group) or
# FAIL CODE WORDS, CODE being notfound (PROGRAM), nodir (DIR), env (a
# malformed variable), fifo (no pipe could be made) or nogroup (no group
# of its own to be had).

# The call's words may hold a newline as "$nl" (shellquote.QuoteLine).
# shellcheck disable=SC2034 # used by the call's words
nl='
'

# spawn MARKER SUFFIX GRACE DIR [NAME=VALUE...] -- PROGRAM [ARG...]:
# SUFFIX (hex) names the FIFO's directory.
spawn() {
	_sp_marker=$1
	_sp_suffix=$2
	_sp_grace=$3
	_sp_dir=$4
	shift 4
	case $_sp_suffix$_sp_grace in '' | *[!0-9a-f]*)
		printf '%sFAIL args malformed suffix or grace\n' "$_sp_marker"
		exit 1
		;;
	esac
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
		case ${1%%=*} in
		"$1" | '' | [0-9]* | *[!A-Za-z0-9_]*)
			printf '%sFAIL env malformed variable\n' "$_sp_marker"
			exit 1
			;;
		esac
		# shellcheck disable=SC2163 # NAME=VALUE, checked above
		export "$1"
		shift
	done
	shift
	if ! kill -s 0 -- "-$$" 2>/dev/null && ! kill -s 0 "-$$" 2>/dev/null; then
		# Not the leader of a process group: become one (setsid does not
		# fork for a process that leads no group, so the channel's
		# process stays this one), or fail. The variables, exported
		# above, go on in the environment, never as words: anyone on
		# the host may read a process's words (ps), only its owner its
		# environment.
		if [ -z "${spawn_again-}" ] && command -v setsid >/dev/null 2>&1; then
			spawn_again=yes
			export spawn_again
			# shellcheck disable=SC2154 # set by the line before the call
			exec setsid /bin/sh -c "$spawn_program
spawn \"\$@\"" sh "$_sp_marker" "$_sp_suffix" "$_sp_grace" "$_sp_dir" -- "$@"
		fi
		printf '%sFAIL nogroup no process group of its own\n' "$_sp_marker"
		exit 1
	fi
	unset spawn_again
	case $_sp_dir in
	'') ;;
	-*) cd "./$_sp_dir" ;;
	*) cd "$_sp_dir" ;;
	esac 2>/dev/null || {
		printf '%sFAIL nodir %s\n' "$_sp_marker" "$_sp_dir"
		exit 1
	}
	case $1 in
	-*) _sp_found= ;;
	*) _sp_found=$(command -v "$1" 2>/dev/null) ;;
	esac
	if [ -z "$_sp_found" ]; then
		printf '%sFAIL notfound %s\n' "$_sp_marker" "$1"
		exit 127
	fi
	# (A TMPDIR that is not absolute is not used: a path starting with
	# "-" would be an option.)
	_sp_tmp=${TMPDIR:-/tmp}
	case $_sp_tmp in /*) ;; *) _sp_tmp=/tmp ;; esac
	_sp_fifo=$_sp_tmp/.pi-remote-spawn.$$.$_sp_suffix
	# Opened read-write first (fd 5), the FIFO opens at each end without
	# waiting for the other. ("command": a failed redirection of exec
	# must not end the shell.)
	# shellcheck disable=SC2094 # both ends of a FIFO, on purpose
	if ! (umask 077 && mkdir -- "$_sp_fifo" && mkfifo -- "$_sp_fifo/in") 2>/dev/null ||
		! { command exec 5<>"$_sp_fifo/in" 6<"$_sp_fifo/in" 7>"$_sp_fifo/in" 5>&-; } 2>/dev/null; then
		rm -rf -- "$_sp_fifo"
		printf '%sFAIL fifo cannot make a pipe in %s\n' "$_sp_marker" "$_sp_tmp"
		exit 1
	fi
	rm -rf -- "$_sp_fifo"
	printf '%sREADY %s\n' "$_sp_marker" "$$"
	# The relay (the stdin of a background list is /dev/null unless
	# given, hence fd 3). After the end of the channel's stdin it lets go
	# of the process's, and ends the group unless the process goes first
	# (the wrapper then ends the relay with the group's SIGTERM, which it
	# ignores only from the end of its input on).
	exec 3<&0
	{
		cat <&3 >&7
		exec 3<&- 7>&-
		trap '' TERM
		sleep "$_sp_grace"
		kill -s TERM 0
		sleep "$_sp_grace"
		kill -s KILL 0
	} </dev/null >/dev/null 2>&1 6<&- &
	"$@" <&6 3<&- 6<&- 7>&- &
	_sp_child=$!
	exec 3<&- 6<&- 7>&- </dev/null 2>/dev/null
	trap '' TERM
	wait "$_sp_child"
	_sp_status=$?
	kill -s TERM 0
	{
		sleep "$_sp_grace"
		kill -s KILL 0
	} </dev/null >/dev/null 2>&1 &
	exit "$_sp_status"
}
