# shellcheck shell=sh disable=SC2034,SC2154
#
# kill.sh: judging a job (job_info, job_lost, job_process, unstarted)
# and killing one (kill_job, kill_running). Serves stop_job and cancel_job.

# job_info JOB reads JOB.server (lines: the pid of the server that started
# the job with the host it runs on, as host_id; its label; the pid of its
# waiter, once it has one; the pid of its command, once it runs) into
# job_info_server, job_info_host, job_info_label, job_info_waiter and
# job_info_pid (the pids empty when missing or not numbers), and sets
# job_info_where to who may judge the job's processes (see host_of). (A job
# of an earlier version of this script has its command's pid in JOB.pid.)
job_info() {
	job_info_server=
	job_info_host=
	_ji_boot=
	job_info_label=
	job_info_waiter=
	job_info_pid=
	{ read -r job_info_server job_info_host _ji_boot && IFS= read -r job_info_label && read -r job_info_waiter && read -r job_info_pid; } <"$1.server" 2>/dev/null
	case $job_info_server in *[!0-9]*) job_info_server= ;; esac
	case $job_info_waiter in *[!0-9]*) job_info_waiter= ;; esac
	if [ -z "$job_info_pid" ] && [ -n "$job_info_waiter" ] && [ -e "$1.pid" ]; then
		read -r job_info_pid <"$1.pid"
	fi
	case $job_info_pid in *[!0-9]*) job_info_pid= ;; esac
	host_of "$job_info_host" "$_ji_boot"
	job_info_where=$host_of_where
}

# job_lost JOB (after job_info): true for a job that will never have a
# status: its host rebooted since it started, or its waiter (on this host,
# this boot) is gone without writing one (killed). A job of another host
# is never judged here.
job_lost() {
	case $job_info_where in
	gone) ;;
	here)
		if [ -n "$job_info_waiter" ]; then
			! pid_alive "$job_info_waiter" || return 1
		else
			# A waiter killed between its claim and its pid, a moment
			# (see start_job), with its server: the claim is a minute
			# old, the server gone. (Its command never began.)
			[ -e "$1.status" ] && [ -n "$job_info_server" ] && ! pid_alive "$job_info_server" &&
				[ -n "$(find "$1.status" -prune -mmin +1 2>/dev/null)" ] || return 1
		fi
		;;
	*) return 1 ;;
	esac
	# (Looked at again: the waiter writes the status, then ends.)
	[ ! -s "$1.status" ]
}

# job_process JOB [OWN] sets job_process_pid to the pid of job JOB's command
# when it is proven the job's, the only pid a kill for the job may go to:
# the job has no status and runs on this host (this boot), its waiter is
# alive, and the pid's parent is the waiter (/proc/PID/stat, read without a
# fork: a child's pid is not reused before its parent has reaped it, and the
# waiter writes the status a moment after), or, where the command has a
# keeper (see keep), the waiter's child. A job that is starting (no waiter
# or pid yet) is waited for, up to about 5 seconds. Otherwise it fails, and
# job_process_why says why: "ended" (its command has, or the job has a
# status), "lost" (nothing of it runs any more: its files may go),
# "starting" (no pid after the wait), "elsewhere" (another host's: nothing
# may be killed here for it) or "unproven" (this host has neither /proc nor
# a ps that takes -o and -p, as in a chroot: only the waiter this server
# started and waits for, OWN, vouches for the pid it wrote, for it is this
# server's child until the server's wait has reaped it).
job_process() {
	_jp_own=$2
	job_process_pid=
	job_process_why=ended
	_jp_tries=0
	while [ ! -s "$1.status" ]; do
		job_info "$1"
		case $job_info_where in
		gone) job_process_why=lost ;;
		elsewhere) job_process_why=elsewhere ;;
		esac
		[ "$job_info_where" = here ] || return 1
		if [ -z "$job_info_waiter" ]; then
			job_lost "$1" && job_process_why=lost && return 1
			unstarted "$1" && job_process_why=lost && return 1
		elif ! pid_alive "$job_info_waiter"; then
			[ -s "$1.status" ] || job_process_why=lost
			return 1
		else
			job_process_pid=$job_info_pid
			[ -z "$job_process_pid" ] || break
		fi
		_jp_tries=$((_jp_tries + 1))
		if [ "$_jp_tries" -gt 500 ]; then
			job_process_why=starting
			return 1
		fi
		sleep 0.01 2>/dev/null || sleep 1
	done
	[ -n "$job_process_pid" ] || return 1
	if [ -n "$procfs" ]; then
		parent_of "$job_process_pid"
		[ "$parent_of_pid" != "$job_info_waiter" ] || return 0
		parent_of "$parent_of_pid"
		[ "$parent_of_pid" != "$job_info_waiter" ] || return 0
	else
		# No /proc (macOS, a chroot): ps, where it takes -o and -p (a
		# process, on a kill only), says "PID PPID" for the pid if it
		# understood.
		_jp_stat=$(ps -o pid= -o ppid= -p "$job_process_pid" 2>/dev/null)
		# shellcheck disable=SC2086 # the two numbers
		set -- $_jp_stat
		if [ "$#" = 2 ] && [ "$1" = "$job_process_pid" ]; then
			[ "$2" != "$job_info_waiter" ] || return 0
			_jp_stat=$(ps -o ppid= -p "$2" 2>/dev/null)
			# shellcheck disable=SC2086 # a number
			set -- $_jp_stat
			[ "$1" != "$job_info_waiter" ] || return 0
		elif [ -n "$_jp_own" ] && [ "$job_info_waiter" = "$_jp_own" ]; then
			return 0
		else
			job_process_why=unproven
		fi
	fi
	job_process_pid=
	return 1
}

# parent_of PID sets parent_of_pid to the parent of process PID, read from
# /proc/PID/stat ("PID (NAME) STATE PPID ...": the name may hold anything,
# and ends with the last ") "); empty when there is no such process.
parent_of() {
	parent_of_pid=
	read -r parent_of_pid <"/proc/$1/stat" 2>/dev/null
	parent_of_pid=${parent_of_pid##*) }
	parent_of_pid=${parent_of_pid#* }
	parent_of_pid=${parent_of_pid%% *}
}

# unstarted JOB [WAITED] (after job_info): true, with the job's files
# gone, for a job whose server died after creating it and before its
# waiter began (its pid, in JOB.server, is gone, or JOB.server never came
# and the caller WAITED; or the host rebooted since): the
# client starts it again. Of this and the waiter, whoever creates
# JOB.status first decides; the waiter runs the command only if it does. Another
# host's job is never judged here.
unstarted() {
	case $job_info_where in
	here)
		if [ -z "$job_info_server" ]; then
			# (A server killed between the job's first file and
			# JOB.server, a moment, leaves no pid: a caller that saw none
			# for seconds, WAITED, judges it as one killed later.)
			[ "$2" = waited ] || return 1
		else
			! pid_alive "$job_info_server" || return 1
		fi
		;;
	gone) ;;
	*) return 1 ;;
	esac
	set -C
	{ command : >"$1.status"; } 2>/dev/null
	_un_mine=$?
	set +C
	[ "$_un_mine" = 0 ] || return 1
	# (Its output first: the job is gone for attach_jobs at once.)
	rm -f -- "$1.out" "$1".*
}

# kill_job PID JOB kills job JOB, whose command is PID: where commands
# get their own session, its process group is frozen first (SIGSTOP:
# nobody in it forks, exits or leaves it meanwhile, so no child is
# re-parented away from the tree); where the user's systemd manager runs,
# the job's scope (see user_scope) is killed, every process in it, a
# double fork's too (the manager kills a cgroup's processes until none is
# left); then the process tree is walked, each process stopped as found,
# and killed with the groups they lead (a descendant that took a session
# of its own, and its children); then the group. Without sessions of
# their own (the server shares their group), the scope and the tree.
# Without a scope, a process that left the tree (a double fork: its
# parent gone before the walk) escapes, as it does locally without
# cgroups; docs/tools.md says so.
kill_job() {
	if [ -n "$setsid_cmd" ]; then
		signal_group STOP "$1"
		kill_scope "$2"
		kill_tree "$1" "$1"
		signal_group KILL "$1"
	else
		kill_scope "$2"
		kill_tree "$1"
	fi
}

# kill_scope JOB kills the processes of JOB's scope, if it has one.
kill_scope() {
	[ -n "$scope_kill" ] && [ -n "$1" ] || return 0
	$scope_timeout systemctl --user kill --signal=KILL -- "pi-remote-${1##*/}.scope" >/dev/null 2>&1
}

# kill_tree PID [GROUP] kills PID and every process descended from it,
# found with ps (or /proc where ps lacks -o). Each one is stopped as soon
# as it is found, so none forks behind the search; PID is killed last:
# the moment it dies the server's wait returns and the watcher that called
# this may be stopped. With GROUP, the process groups of those found are
# killed too, but GROUP (the caller's to kill last) and this server's.
kill_tree() {
	kill -s STOP "$1" 2>/dev/null
	_kt_all=" $1 "
	_kt_groups=' '
	_kt_more=yes
	while [ -n "$_kt_more" ]; do
		_kt_more=
		_kt_table=$(ps -A -o pid= -o ppid= -o pgid= 2>/dev/null) || _kt_table=
		if [ -z "$_kt_table" ]; then
			_kt_table=$(for _kt_stat in /proc/[0-9]*/stat; do
				read -r _kt_pid _kt_rest <"$_kt_stat" || continue
				_kt_rest=${_kt_rest##*) }
				# shellcheck disable=SC2086 # the fields after the name
				set -- $_kt_rest
				echo "$_kt_pid $2 $3"
			done 2>/dev/null)
		fi
		while read -r _kt_pid _kt_ppid _kt_pgid; do
			case $_kt_all in
			*" $_kt_pid "*) ;;
			*" $_kt_ppid "*)
				kill -s STOP "$_kt_pid" 2>/dev/null
				_kt_all="$_kt_all$_kt_pid "
				_kt_more=yes
				case $_kt_groups in *" $_kt_pgid "*) ;; *) _kt_groups="$_kt_groups$_kt_pgid " ;; esac
				;;
			esac
		done <<EOF
$_kt_table
EOF
	done
	# shellcheck disable=SC2086 # a list of pids
	kill -s KILL ${_kt_all#" $1 "} 2>/dev/null
	if [ -n "$2" ]; then
		for _kt_pgid in $_kt_groups; do
			case $_kt_pgid in "$2" | "$pgid" | 0 | 1 | *[!0-9]*) continue ;; esac
			signal_group KILL "$_kt_pgid"
		done
	fi
	kill -s KILL "$1" 2>/dev/null
}

# kill_running ID [OWN] kills job ID (the line "k ID" of attach_jobs and
# run_jobs) if there is such a job, it has not ended, and its process is
# proven its own (job_process; OWN as there).
kill_running() {
	hex "$1" || return
	[ -e "$jobs/$1.out" ] && job_process "$jobs/$1" "$2" && kill_job "$job_process_pid" "$jobs/$1"
}

# stop_job ID kills job ID when it runs (its status then says "killed"),
# or buries it (see bury) when it has ended and nobody collected it, or
# when it is lost (see job_process; its status then says "lost"): its
# client, coming back, learns how it ended and never runs it again. "OK
# killed", "OK removed" (a tombstone is left as it is), "E ENOENT" when
# there is no such job, or "E EIO message" when it cannot be killed from
# here (see refused) or is between its command's end and its status.
stop_job() {
	_stj_job=$jobs/$1
	if hex "$1" && gone "$_stj_job"; then
		# (Its tombstone stays: a start or attach of its client, late,
		# learns how it ended instead of running it.)
		echo 'OK removed'
	elif ! hex "$1" || [ ! -e "$_stj_job.out" ]; then
		echo 'E ENOENT no such job'
	elif job_process "$_stj_job"; then
		echo killed >"$_stj_job.killed"
		kill_job "$job_process_pid" "$_stj_job"
		echo 'OK killed'
	elif ! refused "$1"; then
		[ "$job_process_why" != ended ] || wait_status "$_stj_job"
		if [ "$job_process_why" = lost ] || [ -s "$_stj_job.status" ]; then
			[ -s "$_stj_job.status" ] || echo lost >"$_stj_job.status"
			bury "$_stj_job"
			echo 'OK removed'
		else
			echo 'E EIO the job has no process id or no status yet: try again'
		fi
	fi
}

# refused ID (after job_process failed) prints the error line and is true
# when job ID may not be killed from here: it runs on another host sharing
# the jobs directory, or this host has no /proc to prove its process by.
refused() {
	case $job_process_why in
	elsewhere) printf 'E EIO job %s runs on %s, another host sharing the jobs directory\n' "$1" "$job_info_host" ;;
	unproven) echo 'E EIO this host has no /proc (nor ps -o -p) to prove the job'"'"'s process by' ;;
	*) return 1 ;;
	esac
}

# wait_status JOB waits up to about 5 seconds for job JOB's status (or for
# the job to be forgotten).
wait_status() {
	_ws_tries=0
	while [ -e "$1.out" ] && [ ! -s "$1.status" ] && [ "$_ws_tries" -lt 100 ]; do
		sleep 0.05 2>/dev/null || sleep 1
		_ws_tries=$((_ws_tries + 1))
	done
}

# cancel_job ID kills job ID, whose client gave up on it while the
# connection was down, and removes its files once its waiter has written
# the status (within about 5 seconds), or at once when it is lost: "OK".
# A job the host does not have is made one that never runs.
# A job that may not be killed from here (refused) keeps its files, and
# its lease, no longer renewed, ends it on its host: "E EIO message".
cancel_job() {
	if ! hex "$1"; then
		echo 'E ENOENT no such job'
		return
	fi
	# Nothing to kill: it never started here, or its client has its
	# result, or only its tombstone is left, which stays. One that never
	# started gets a tombstone ("lost") that a start arriving late finds
	# ("!GONE lost"): it never runs. (Of a start and this, whoever creates
	# ID.status first decides, as of a waiter and unstarted.)
	if [ ! -e "$jobs/$1.out" ]; then
		set -C
		{ echo lost >"$jobs/$1.status"; } 2>/dev/null
		set +C
		echo OK
		return
	fi
	if job_process "$jobs/$1"; then
		kill_job "$job_process_pid" "$jobs/$1"
	elif refused "$1"; then
		return
	fi
	[ "$job_process_why" = lost ] || wait_status "$jobs/$1"
	forget_jobs "$1"
	echo OK
}
