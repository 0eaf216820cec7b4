# shellcheck shell=sh disable=SC2034,SC2154
#
# sweep.sh: what the server removes: other servers' private directories
# (sweep_private_dirs), its own at exit (remove_private,
# stop_private_jobs), ended and lost jobs (sweep_jobs, bury), a job's files
# (remove_files). Serves forget.

# private_jobs_run DIR: true when a job in DIR (a dead server's private
# jobs, see serve) has a waiter alive and no status yet.
private_jobs_run() {
	for _pjr_job in "$1"/*.server; do
		[ -e "$_pjr_job" ] || continue
		_pjr_job=${_pjr_job%.server}
		[ ! -s "$_pjr_job.status" ] || continue
		job_info "$_pjr_job"
		[ -z "$job_info_waiter" ] || ! pid_alive "$job_info_waiter" || return 0
	done
	return 1
}

# sweep_private_dirs removes the private directories of servers that died
# without cleaning up (SIGKILL, a crash of the host): their names hold the
# pid of the server, and a pid that no longer exists is gone. Only
# directories proven this user's are touched (a private directory lists
# files that remove_private removes): not a symbolic link, owned by this
# user, mode 0700 (nobody else may add to it), in a TMPDIR where nobody
# else may rename it (sticky, or writable by its owner only; owned by this
# user or root); and made on this host (its "host" file), this boot, or
# before this host rebooted. A pid that exists but is another user's (kill
# -0 fails with EPERM) is alive. What needs a process (the kill's
# complaint, ls) is only done for a directory of this user's whose server
# is gone: rare.
sweep_private_dirs() {
	for _spd_dir in "$tmp"/.pi-remote.*; do
		if [ -L "$_spd_dir" ] || [ ! -d "$_spd_dir" ] || [ ! -O "$_spd_dir" ]; then
			continue
		fi
		_spd_pid=${_spd_dir##*/.pi-remote.}
		_spd_pid=${_spd_pid%%.*}
		_spd_host=
		_spd_boot=
		read -r _spd_host _spd_boot <"$_spd_dir/host" 2>/dev/null
		host_of "$_spd_host" "$_spd_boot"
		case $host_of_where:$_spd_pid in
		here: | here:*[!0-9]* | elsewhere:*) continue ;;
		here:*) ! pid_alive "$_spd_pid" || continue ;;
		esac
		# (Jobs it kept there, its jobs directory unusable, whose waiters
		# still run: their files are their lease's and status's.)
		if [ "$host_of_where" = here ] && private_jobs_run "$_spd_dir/jobs"; then continue; fi
		# The directory itself, entered (what is checked is what is
		# removed), and TMPDIR.
		_spd_ok=0
		while read -r _spd_mode _ _spd_uid _spd_rest; do
			case ${_spd_rest##* }:${_spd_mode%[.@]}:$_spd_uid in
			.:drwx------:"$uid" | ..:d????????[tT]:0 | ..:d????-??-?:0 | ..:d????????[tT]:"$uid" | ..:d????-??-?:"$uid")
				_spd_ok=$((_spd_ok + 1))
				;;
			esac
		done <<EOF
$(cd -P -- "$_spd_dir" && LC_ALL=C ls -ldn . ..)
EOF
		[ "$_spd_ok" != 2 ] || remove_private "$_spd_dir" 2>/dev/null
	done
}

# pid_alive PID: true unless there is no process PID. kill -0 also fails
# for a process of another user (EPERM): that one is alive. Only a kill
# that failed pays a fork, to read its complaint in the C locale.
pid_alive() {
	kill -s 0 "$1" 2>/dev/null && return 0
	case $(
		LC_ALL=C
		export LC_ALL
		kill -s 0 "$1" 2>&1
	) in
	*'No such process'*) return 1 ;;
	esac
	return 0
}

# remove_private DIR removes a server's private directory, and first what
# the writes it created and never committed left (a client that lost its
# connection, or crashed, between create_temp and commit_temp):
# DIR/temp.SUFFIX holds the temporary file of each and the inode number of
# its directory. Only a file of the shape create_temp makes for SUFFIX, in
# a directory that passes enter_temp's checks (this user's and 0700, or
# one only root and this user may change; the same inode; not reached
# through a link), is removed, when it is this user's, and then its
# private directory.
remove_private() {
	for _rmp_temp in "$1"/temp.*; do
		[ -f "$_rmp_temp" ] || continue
		_rmp_suffix=${_rmp_temp##*/temp.}
		_rmp_path=
		_rmp_inode=
		{ IFS= read -r _rmp_path && IFS= read -r _rmp_inode; } <"$_rmp_temp"
		if ! hex "$_rmp_suffix" || ! digits "$_rmp_inode"; then continue; fi
		case ${_rmp_path##*/} in
		.?*".pi-remote-$_rmp_suffix") (enter_temp "$_rmp_path" "$_rmp_inode" >/dev/null && remove_if_ours) ;;
		esac
	done
	rm -rf "$1"
}

# stop_private_jobs, as the server exits, kills the jobs it keeps in its
# private directory (the jobs directory could not be used, see serve):
# their files go with that directory, so no client could collect them,
# and a client that lost its connection would not know whether they ran.
# The client reports them stopped with their connection (READY says
# "private").
stop_private_jobs() {
	[ "$jobs" = "$private/jobs" ] || return 0
	for _spj_out in "$jobs"/*.out; do
		[ -e "$_spj_out" ] || continue
		! job_process "${_spj_out%.out}" || kill_job "$job_process_pid" "${_spj_out%.out}"
	done
}

# sweep_jobs buries the jobs nobody will collect (see bury): those that
# will never have a status (job_lost: their waiter was killed, or the host
# rebooted; their status says "lost"), and those that ended longer ago
# than their TTL (the lease file's first word; by steps: a minute for a
# TTL up to a minute, 31 for one up to 30 minutes, a day for any) with no
# client back for them. Tombstones go two days after their job ended; so
# do the FIFOs made ahead by servers of this host that died, and the
# directories of this host's earlier boots (see host_dir). Another host's jobs that
# share the directory (an NFS home) are that host's to judge. It runs in
# the background, a few finds in all, however many jobs there are.
sweep_jobs() {
	# At most once a minute on this host, by one server at a time: a
	# sweep of many jobs costs, and many servers may start at once (a
	# claim older than ten minutes is one a killed sweep left). The stamp
	# and the claim are in this host's directory: each host sweeps what it
	# alone may judge.
	[ -z "$(find "$host_dir/swept" -mmin -1 2>/dev/null)" ] || return 0
	if ! mkdir "$host_dir/sweeping" 2>/dev/null; then
		[ -n "$(find "$host_dir/sweeping" -prune -mmin +10 2>/dev/null)" ] || return 0
	fi
	: >"$host_dir/swept"
	for _sj_job in "$jobs"/*.server; do
		_sj_job=${_sj_job%.server}
		[ ! -s "$_sj_job.status" ] || continue
		job_info "$_sj_job"
		if job_lost "$_sj_job"; then
			echo lost >"$_sj_job.status"
			bury "$_sj_job"
		fi
	done
	for _sj_dir in "$jobs"/.host.*; do
		[ "$_sj_dir" != "$host_dir" ] || continue
		_sj_tag=${_sj_dir##*/.host.}
		if [ "${_sj_tag#*.}" = "$host_name" ] && [ "${_sj_tag%%.*}" != - ] && [ "$boot_id" != - ]; then
			rm -rf -- "$_sj_dir"
		fi
	done
	# (Their jobs have them open, if they got that far.)
	find "$host_dir" -name 'fifo-*' -mmin +1 | while IFS= read -r _sj_fifo; do
		_sj_pid=${_sj_fifo##*/fifo-}
		pid_alive "${_sj_pid%%-*}" || rm -f -- "$_sj_fifo"
	done
	# The fences of clients (see fence_start): the marks of servers that
	# died, then a client's directory a day after its last server went.
	for _sj_busy in "$host_dir"/client.*/busy.*; do
		_sj_pid=${_sj_busy##*.}
		digits "$_sj_pid" || continue
		pid_alive "$_sj_pid" || rm -f -- "$_sj_busy"
	done
	find "$host_dir"/client.* -prune -mmin +1440 2>/dev/null | while IFS= read -r _sj_dir; do
		for _sj_busy in "$_sj_dir"/busy.*; do
			[ -e "$_sj_busy" ] || rm -rf -- "$_sj_dir"
			break
		done
	done
	# The whole outputs of long commands, kept for the model to page
	# through (see save_output): a week after they were written. Only
	# regular files of this user's, of that name.
	find "$tmp"/pi-remote-bash-*.log -prune -type f -user "$uid" -mtime +7 -exec rm -f -- {} + 2>/dev/null
	# The FIFOs of earlier versions, beside the jobs, which name no host:
	# by age alone.
	find "$jobs" -name '.fifo-*' -mmin +1440 -exec rm -f -- {} +
	for _sj_step in 1:60 31:1800 1441:; do
		find "$jobs" -name '*.status' -mmin +"${_sj_step%:*}" | while IFS= read -r _sj_job; do
			# (Empty: the job runs, see start_job.)
			[ -s "$_sj_job" ] || continue
			_sj_job=${_sj_job%.status}
			! gone "$_sj_job" || continue
			# (Another host's client collects its jobs there.)
			job_info "$_sj_job"
			[ "$job_info_where" != elsewhere ] || continue
			_sj_ttl=
			read -r _sj_ttl _ <"$_sj_job.lease"
			case $_sj_ttl in '' | *[!0-9]*) _sj_ttl=86400 ;; esac
			if [ -z "${_sj_step#*:}" ] || [ "$_sj_ttl" -le "${_sj_step#*:}" ]; then
				bury "$_sj_job"
			fi
		done
	done
	find "$jobs" -name '*.status' -mmin +2880 | while IFS= read -r _sj_job; do
		! gone "${_sj_job%.status}" || rm -f -- "$_sj_job" "${_sj_job%.status}.pid" "${_sj_job%.status}.server"
	done
	rmdir "$host_dir/sweeping"
}

# bury JOB removes the files of job JOB but its tombstone: its status,
# which says how it ended, and keeps a start of the job that comes late
# from running it (it is the waiter's claim, see start_job). Requests for
# the job are answered "!GONE STATUS" from then on (see gone), never as
# for a job that never started.
bury() {
	_bu_job=$1
	set -- "$_bu_job.out"
	for _bu_suffix in $job_files; do
		case $_bu_suffix in out | status) ;; *) set -- "$@" "$_bu_job.$_bu_suffix" ;; esac
	done
	rm -f -- "$@"
}

# gone JOB: true when job JOB has left only its tombstone (see bury);
# gone_status is its status.
gone() {
	gone_status=
	if [ -e "$1.out" ] || [ -L "$1.out" ]; then return 1; fi
	read -r gone_status <"$1.status" 2>/dev/null
	[ -n "$gone_status" ]
}

# forget_jobs ID... removes the files of ended jobs whose client has
# their results: no start of theirs will come again.
forget_jobs() {
	remove_files fg -- "$@"
}

# remove_files MODE FILE... [-- ID...] removes the FILEs (empty words
# aside) and the files of the jobs ID (forget_jobs), with one rm. MODE:
# "fg", the rm runs and this goes on; "bg", the rm in the background;
# "exec", the rm replaces this shell.
remove_files() {
	_rmf_mode=$1
	shift
	_rmf_ids=
	for jw_id in "$@"; do
		shift
		if [ -n "$_rmf_ids" ]; then
			case $jw_id in
			*[!0-9a-f]* | '') ;;
			# Named, not globbed: a glob reads the whole directory, which
			# holds the files of every job in flight (on a host serving
			# many, a read per job forgotten adds up). Its output first:
			# the job is gone for attach_jobs at once.
			*) eval "set -- \"\$@\" $job_words" ;;
			esac
		elif [ "$jw_id" = -- ]; then
			_rmf_ids=yes
		elif [ -n "$jw_id" ]; then
			set -- "$@" "$jw_id"
		fi
	done
	case $_rmf_mode in
	exec) [ "$#" = 0 ] || exec rm -f "$@" ;;
	bg) [ "$#" = 0 ] || rm -f "$@" 3<&- & ;;
	*) [ "$#" = 0 ] || rm -f "$@" ;;
	esac
}

# forget ID...: forget_jobs as a request of its own (a client closing):
# "OK".
forget() {
	forget_jobs "$@"
	echo OK
}
