# shellcheck shell=sh disable=SC2034,SC2154
#
# start.sh: a job's start, for run_jobs (batch_start): the waiter
# (start_job), the command (exec_command, keep) and the user's systemd
# scope (user_scope, scope_wrapper). Serves no request of its own.
#
# A job belongs to no SSH channel. Its files, JOB.* in the jobs directory
# (the user's alone), are its output (JOB.out), a lease file, JOB.server
# (lines: the pid of the server that started it and the host it runs on,
# its label, the pid of its waiter, the pid of its command; see job_info)
# and its status (empty while it runs). The waiter, a subshell that
# ignores HUP and PIPE and talks to nothing but files and FIFOs, starts
# the command with sh -c in DIR (the home directory when empty), stdin
# /dev/null, in its own session when the host has setsid, with stdout and
# stderr into a FIFO; a relay drains the FIFO into out at disk speed, so
# a slow or absent client never holds the command up. When the command
# exits, its background children get GRACE seconds to finish writing
# before the relay stops (they then get SIGPIPE, as they would locally);
# then the status is written, atomically. Losing the connection reaches
# none of them. A job whose lease is not renewed for TTL seconds (a client
# that never came back) is killed (its waiter holds the lease from the
# start, see supervise); so is one whose output passes CAP.

# start_job JOB SCRIPT DIR FIFO CAP TTL EVENTS [NEWS [HAND]] starts the
# waiter of a new job (see batch_start) and sets start_job_waiter to its
# pid.
# With HAND, the waiter removes what the server's last requests left (see
# remove_done) as it ends, or as it runs on (see tell_long). With NEWS, the
# server's fd 8 is open on the news FIFO, which the waiter writes to (see
# supervise) and closes as it ends; others do not get it. The waiter starts
# the keeper (see keep) and the relay, supervises them (see supervise) and
# writes the job's status, one short write of a whole line: readers wait for
# the file to be non-empty. It then writes "x ID" to EVENTS (the FIFO of
# run_jobs), unless it had NEWS and never said "long" there: the server
# waits for this waiter then (see run_jobs).
start_job() {
	(
		# The job's status file, made here (empty until the job ends),
		# is the waiter's claim: an attacher that found this job's server
		# dead may have given up on the job first (see unstarted), and a
		# job's tombstone is that file (see bury). Then the waiter only
		# removes what it was given to (see below).
		set -C
		if ! { command : >"$1.status"; } 2>/dev/null; then
			[ -z "$9" ] || remove_done exec
			exit 0
		fi
		set +C
		# (A claim that came after an attacher gave up on the job and
		# removed its files, output first, is no claim.)
		if [ ! -e "$1.out" ]; then
			[ -z "$9" ] || remove_done exec "$1.status"
			exec rm -f "$1.status"
		fi
		trap '' HUP PIPE
		# The waiter's pid, the third line of JOB.server (see job_info),
		# written by the waiter itself: the command's pid, which the
		# waiter (or its keeper) adds once the command runs, comes after
		# it.
		own_pid
		echo "$sv_self" >>"$1.server"
		# (Judged lost meanwhile, had this waiter stopped here for a
		# minute, see job_lost: the command never runs.)
		[ ! -s "$1.status" ] || exit 0
		# The command is the waiter's own child (see supervise), or a
		# keeper's where it needs one (see keep). (Closed by exec in the
		# child: a redirection of a function's call, as "keep 8>&-", keeps
		# a copy of the fd in dash, to restore after the call, which would
		# hold the news FIFO open.) No open of the FIFO waits for another
		# process, which may be killed meanwhile: the waiter holds it open
		# read-write (fd 5, which never waits) while the child opens it to
		# write and the waiter to read, and the child closes its copy
		# once its output is open. The waiter then holds the reading end
		# (see start_relay).
		exec 5<>"$4"
		if [ -z "$keeper" ]; then
			(
				exec 5>&- 8>&-
				exec_command "$1" "$2" "$3"
			) >"$4" 2>&1 &
			_sj_child=$!
			echo "$_sj_child" >>"$1.server"
			_sj_keeper=
		else
			(
				exec 5>&- 8>&-
				keep "$1" "$2" "$3" "$4.k"
			) >"$4" 2>&1 &
			_sj_child=$!
			_sj_keeper=$_sj_child
		fi
		exec 4<"$4" 5>&-
		supervise "$1" "$_sj_child" "$_sj_keeper" "$5" "$6" "$8" "$4" "$9"
		# (A kill by stop_job says so in JOB.killed; the waiter's own, in
		# sv_reason.)
		_sj_reason=$sv_reason
		[ ! -e "$1.killed" ] || read -r _sj_reason <"$1.killed"
		# (A kill that came as the command ended on its own did not end
		# it: its status is its own.)
		case $_sj_reason in lease | killed) [ "$sv_status" = 137 ] || _sj_reason= ;; esac
		# Output cut at the cap: the command, writing on, got SIGPIPE
		# (141), or an error it may have ignored (whatever its status,
		# its output is not all there).
		if [ -z "$_sj_reason" ] && [ -n "$sv_capped" ]; then
			_sj_reason=capped
		fi
		# The status, then the size of the output when the relay knew it
		# (see output_size): one short write.
		_sj_size=
		[ "$sv_output" != all ] || _sj_size=$sv_size
		echo "$sv_status${_sj_reason:+ $_sj_reason}$nl$_sj_size" >"$1.status"
		# Opened read-write, the FIFO never blocks: its server may be gone
		# (and then so is the FIFO, or nobody reads what is written).
		[ -n "$sv_news" ] || echo "x ${1##*/}" 1<>"$7"
		# The FIFO goes with the server's next files, unless that
		# server let go of the job (see leave_batch_fifo). The waiter
		# of a batch of one (HAND, until tell_long did: sv_hand)
		# removes what the server's last requests left, with the rm it
		# becomes: no fork for it.
		exec 8>&-
		if [ -e "$4.left" ]; then set -- "$4" "$4.left" "$4.dd" "$4.k"; else set --; fi
		if [ -n "$sv_hand" ]; then
			remove_done exec "$@"
		elif [ "$#" != 0 ]; then
			exec rm -f "$@"
		fi
	) </dev/null >/dev/null 2>&1 3<&- 6<&- &
	start_job_waiter=$!
}

# own_pid sets sv_self to the pid of the shell that runs it (a
# subshell's $$ is its parent's).
own_pid() {
	if [ -n "$procfs" ]; then
		read -r sv_self _ </proc/self/stat
	else
		sv_self=$(exec sh -c 'echo "$PPID"')
	fi
}

# exec_command JOB SCRIPT DIR, in the job's child, becomes SCRIPT run with
# sh -c in DIR (the home directory when empty), in its own session when
# the host has setsid.
exec_command() {
	# The command gets the signal dispositions of any other (the waiter's
	# ignored HUP and PIPE are its own).
	trap - HUP PIPE
	# (A DIR "-" would be $OLDPWD to cd, even after "--".)
	case $3 in
	'') ;;
	-*) cd "./$3" || exit 126 ;;
	*) cd "$3" || exit 126 ;;
	esac
	_ec_job=$1
	_ec_script=$2
	shift 3
	# In a scope of its own, named after the job, where the user's
	# systemd has scopes (see user_scope and scope_wrapper).
	if [ -n "$scope" ]; then
		set -- sh -c "$scope_wrapper" sh "pi-remote-${_ec_job##*/}"
	fi
	# One argument may not exceed 128 KiB on Linux: a longer script is
	# read from a file (it then sees that file as $0). The limit is in
	# bytes, and bash and BusyBox count characters in a UTF-8 locale, of
	# up to 4 bytes each: a script of more than 16,384 is counted by wc.
	_ec_bytes=${#_ec_script}
	if [ "$_ec_bytes" -gt 16384 ]; then
		_ec_bytes=$(printf %s "$_ec_script" | wc -c)
		_ec_bytes=${_ec_bytes##*[!0-9]}
		digits "$_ec_bytes" || _ec_bytes=65537
	fi
	if [ "$_ec_bytes" -le 65536 ]; then
		exec $setsid_cmd "$@" sh -c "$_ec_script"
	fi
	printf '%s\n' "$_ec_script" >"$_ec_job.script" || exit 126
	# shellcheck disable=SC2016 # expanded by the inner sh
	exec $setsid_cmd "$@" sh -c '. "$0"' "$_ec_job.script"
}

# keep JOB SCRIPT DIR FILE, the keeper, where the waiter cannot wait for
# the command itself (see read_host): runs the command (exec_command),
# adds its pid to JOB.server (the fourth line, see job_info) and waits for
# it, then writes its exit status in FILE (beside the job's FIFO, and gone
# with it, see remove_done). A plain wait, with no trap set,
# reports an exit status right in every shell. The waiter's waits are cut
# short by its trap on CHLD: bash then loses the status of the child it
# reaped; and without /proc, the waiter cannot tell its timers' zombies
# from the living, and so calls jobs, which makes dash forget the status
# of a child it reaped (see supervise).
keep() {
	exec_command "$1" "$2" "$3" &
	echo "$!" >>"$1.server"
	# (The output is the command's: what the shell says of it, as
	# "Killed", is not.)
	exec >/dev/null 2>&1
	wait "$!"
	echo "$?" >"$4"
}

# user_scope sets scope when every job's processes can be held in a
# scope of the user's systemd of its own (see exec_command and kill_job):
# its manager runs (its private socket, in an XDG_RUNTIME_DIR that is the
# user's own) and lingers (loginctl enable-linger: without it the
# manager, and every scope in it, stops seconds after the user's last
# login ends, and a job would not outlive a lost connection), and
# systemd-run makes a scope there: tried once a boot, the answer kept in
# the host's directory (a yes gone stale costs a job a failed try, see
# scope_wrapper). Not for private jobs, which end with their server
# anyway. It sets scope_kill wherever the manager runs, linger or not: a
# job another server started may have a scope (see kill_job).
user_scope() {
	scope=
	scope_kill=
	case ${XDG_RUNTIME_DIR-} in /*) ;; *) return 0 ;; esac
	[ -S "$XDG_RUNTIME_DIR/systemd/private" ] && [ -O "$XDG_RUNTIME_DIR" ] || return 0
	command -v systemctl >/dev/null 2>&1 || return 0
	scope_kill=yes
	# (A manager that hangs would hold a kill up for minutes.)
	scope_timeout=
	! command -v timeout >/dev/null 2>&1 || scope_timeout='timeout 5'
	[ "$jobs" != "$private/jobs" ] || return 0
	_us_user=${USER:-${LOGNAME-}}
	case $_us_user in '' | */* | .*) return 0 ;; esac
	[ -e "/var/lib/systemd/linger/$_us_user" ] || return 0
	_us_known=
	[ ! -f "$host_dir/scope" ] || read -r _us_known <"$host_dir/scope"
	case $_us_known in
	yes)
		scope=yes
		return 0
		;;
	no) return 0 ;;
	esac
	if systemd-run --user --scope --quiet --collect -- true >/dev/null 2>&1; then
		scope=yes
	fi
	echo "${scope:-no}" >"$host_dir/scope" 2>/dev/null
}

# scope_wrapper, run as sh -c "$scope_wrapper" sh UNIT COMMAND..., runs
# COMMAND in a new scope UNIT of the user's systemd: systemd-run, its
# child, registers the scope and becomes COMMAND, which first writes "x"
# to the shell (the command substitution's pipe) and takes back its
# output and errors (fds 4 and 5). A systemd-run that could not make the
# scope (its manager gone or hung, the answer of user_scope stale) never
# wrote it: COMMAND then runs here, without a scope, never twice. The
# shell exits with COMMAND's status. (COMMAND does not see the variable
# systemd sets in a unit's processes, INVOCATION_ID: its environment is
# the one it has elsewhere.)
# shellcheck disable=SC2016 # expanded by the shell that runs it
scope_wrapper='_sw_unit=$1
shift
exec 4>&1 5>&2
_sw_began=$(systemd-run --user --scope --quiet --collect "--unit=$_sw_unit" -- \
	sh -c "printf x; exec >&4 2>&5 4>&- 5>&-; unset INVOCATION_ID; exec \"\$@\"" sh "$@" 2>/dev/null)
_sw_status=$?
[ -z "$_sw_began" ] || exit "$_sw_status"
exec 4>&- 5>&-
exec "$@"'

