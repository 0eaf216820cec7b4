# shellcheck shell=sh disable=SC2034,SC2154
#
# jobs.sh: one command. Serves run_job (start a job, or attach to it)
# and attach_job (follow a job to its end and answer its status), and
# list_jobs; the FIFOs made ahead for jobs and what a request leaves to
# remove (remove_done, done_with).

# group rj_: serve run_job run_job_fails attach_job done_with remove_done
# leave_fifo
#
# What run_job leaves for the attach_job it runs, and what requests leave
# to remove: rj_waiter (the waiter run_job started), rj_news (that waiter
# says on fd 8 whether it runs on), rj_used and rj_used_job (the FIFO of
# the job this server started, and the job), rj_done_fifos, rj_done_seqs
# and rj_done_ids (see remove_done). serve sets them empty.

# run_job ID OFFSET SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES TTL CAP LABEL
# FORGET runs SCRIPT as the durable job ID, or, when job ID exists already
# (a start sent again after a lost connection, or a client coming back),
# attaches to it (attach_job): its output from byte OFFSET on, then its
# status. "!ENOENT", "!ENOTDIR" or "!EACCES" when DIR cannot be entered;
# "!NOJOB" for an OFFSET past 0 and no such job. CAP is the most output
# the job may write (bytes; empty: no cap); LABEL, what it is, for
# list_jobs; FORGET, the IDs (space-separated) of jobs whose results the
# client has: their files go (forget_jobs).
#
# A job belongs to no SSH channel. Its files, JOB.* in the jobs directory
# (the user's alone), are its output (JOB.out), its pid, a lease file,
# JOB.server (lines: the pid of the server that started it and the host
# it runs on, its label, the pid of its waiter; see job_info) and, once it
# has ended, its status. The waiter, a subshell that ignores HUP and PIPE
# and talks to nothing but files, starts the command with sh -c in DIR
# (the home directory when empty), stdin /dev/null, in its own session when
# the host has setsid, with stdout and stderr into a FIFO; a relay drains
# the FIFO into out at disk speed, so a slow or absent client never holds
# the command up. When the command exits, its background children get
# GRACE seconds to finish writing before the relay stops (they then get
# SIGPIPE, as they would locally); then the status is written, atomically.
# Losing the connection reaches none of them. A job whose lease is not
# renewed for TTL seconds (a client that never came back) is killed
# (its waiter holds the lease from the start, see supervise); so is one
# whose output passes CAP.
run_job() {
	# (Anything else is a client that does not speak this protocol.)
	if ! hex "$1" || ! digits "$2" "$8" "${6:-0}" "${7:-0}" "${9:-0}"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	# What the last requests left (their claims, their jobs' FIFOs) and
	# the jobs whose results the client has go with one rm: the one the
	# waiter of the job this request starts ends with (no fork for it,
	# see start_job), or one in the background.
	rj_done_ids="$rj_done_ids${11:+ }${11}"
	_rj_job=$jobs/$1
	rj_waiter=
	rj_news=
	fence_in || exit 0
	if gone "$_rj_job"; then
		run_job_fails "!GONE $gone_status"
		return
	fi
	if [ ! -e "$_rj_job.out" ]; then
		if [ "$2" != 0 ]; then
			run_job_fails '!NOJOB'
			return
		fi
		if [ -n "$4" ]; then
			if [ ! -d "$4" ]; then
				if [ -e "$4" ]; then run_job_fails '!ENOTDIR'; else run_job_fails '!ENOENT'; fi
				return
			fi
			if [ ! -x "$4" ]; then
				run_job_fails '!EACCES'
				return
			fi
		fi
		# The job's output goes through a FIFO in this host's directory
		# among the jobs (the user's alone, umask 077), not in the private
		# one: this server may go (its connection lost) before the job has
		# opened it. They are made eight at a time, with the news FIFO
		# (see attach_job) the first time: one mkfifo for eight
		# jobs. (Made before the job's first file: from that file to
		# JOB.server, the job has no server that an attacher could see
		# die; one killed meanwhile is judged later, see unstarted.)
		[ -n "$fifos" ] || make_fifos
		# noclobber: of two starts of one job, one creates it (the other
		# attaches to it).
		set -C
		{ command : >"$_rj_job.out"; } 2>/dev/null
		_rj_made=$?
		set +C
		if [ "$_rj_made" = 0 ]; then
			_rj_fifo=$host_dir/fifo-$$-${fifos%% *}
			case $fifos in
			*' '*) fifos=${fifos#* } ;;
			*) fifos= ;;
			esac
			if ! [ -p "$_rj_fifo" ] || ! { echo "$8" >"$_rj_job.lease"; } 2>/dev/null; then
				rm -f -- "$_rj_job".* "$_rj_fifo"
				run_job_fails "!EIO cannot create a job in $jobs"
				return
			fi
			# Who is starting it, where: if this server dies before the
			# job's waiter begins, an attacher sees it (unstarted). The
			# label is one line.
			printf '%s %s\n%s\n' "$$" "$host_id" "${10%%"$nl"*}" >"$_rj_job.server"
			# The waiter gets the news FIFO open (read-write: that never
			# waits); this server then holds it open for reading only, so
			# that it reads the end of the file once the waiter has closed
			# it, however it ended. Nothing else has it open then (the
			# waiter's children never get it), and it serves the next job.
			# (Without it, no news: attach_job follows the job as a long
			# one at once.)
			if [ -p "$private/news" ] && { command exec 8<>"$private/news"; } 2>/dev/null; then
				start_job "$_rj_job" "$3" "$4" "$_rj_fifo" "$9" "$8" "" news hand
				rj_news=yes
				if ! { command exec 8<"$private/news"; } 2>/dev/null; then
					exec 8<&-
					rj_news=
				fi
			else
				start_job "$_rj_job" "$3" "$4" "$_rj_fifo" "$9" "$8" "" "" hand
			fi
			rj_waiter=$start_job_waiter
			rj_done_fifos=
			rj_done_seqs=
			rj_done_ids=
			rj_used=$_rj_fifo
			rj_used_job=$_rj_job
		fi
	fi
	[ -z "$rj_done_ids$rj_done_fifos$rj_done_seqs" ] || remove_done bg
	fence_out
	attach_job "$1" "$2" "$5" "$6" "$7" "$8"
}

# run_job_fails STATUS answers a run_job that starts no job and attaches to
# none with STATUS, what the last requests left going in the background
# (see remove_done).
run_job_fails() {
	[ -z "$rj_done_ids$rj_done_fifos$rj_done_seqs" ] || remove_done bg
	finish "$1"
}

# remove_done MODE [FILE...] removes, with one rm, the FILEs, the files of
# the jobs whose results the client has (rj_done_ids, see forget_jobs)
# and what the requests answered since the last time left: the FIFOs of
# the jobs they started (rj_done_fifos, numbers as in $fifos) and their
# streams' files (rj_done_seqs, the requests' numbers, see attach_job).
# MODE: "bg", the rm in the background; "exec", the rm replaces this shell
# (a waiter's last act, see start_job); "fg", the rm runs and this goes
# on.
remove_done() {
	_rd_mode=$1
	shift
	for _rd_n in $rj_done_fifos; do set -- "$@" "$host_dir/fifo-$$-$_rd_n" "$host_dir/fifo-$$-$_rd_n.dd" "$host_dir/fifo-$$-$_rd_n.k"; done
	for _rd_n in $rj_done_seqs; do set -- "$@" "$private/stream.$_rd_n" "$private/detach.$_rd_n" "$private/woke.$_rd_n" "$private/settled.$_rd_n"; done
	set -f
	# shellcheck disable=SC2086 # job IDs (not globbed)
	set -- "$@" -- $rj_done_ids
	set +f
	rj_done_fifos=
	rj_done_seqs=
	rj_done_ids=
	remove_files "$_rd_mode" "$@"
}

# done_with NUMBER adds the files of the request NUMBER (its stream's,
# when it had one) and its job's FIFO to what remove_done removes.
done_with() {
	[ -z "$1" ] || rj_done_seqs="$rj_done_seqs $1"
	if [ -n "$rj_used" ]; then
		rj_done_fifos="$rj_done_fifos ${rj_used##*-}"
		rj_used=
	fi
}

# make_fifos adds eight new FIFOs to $fifos, and makes the news FIFO
# (see attach_job) if there is none.
make_fifos() {
	set --
	for _mf_n in 1 2 3 4 5 6 7 8; do
		set -- "$@" "$host_dir/fifo-$$-$((fifo_n + _mf_n))"
		fifos="$fifos${fifos:+ }$((fifo_n + _mf_n))"
	done
	fifo_n=$((fifo_n + 8))
	[ -p "$private/news" ] || set -- "$@" "$private/news"
	mkfifo "$@" 2>/dev/null
}

# leave_fifo leaves the FIFO of the job this server started, if any, to
# the job's waiter, which removes it as the job ends (the server lets go
# of the job, or exits): the mark ".left" says so. Of this and the
# waiter, each writes its own file (the mark, the status) before it
# looks for the other's, so at least one of them sees both and removes
# the FIFO.
leave_fifo() {
	[ -n "$rj_used" ] || return 0
	: >"$rj_used.left"
	[ ! -s "$rj_used_job.status" ] || rm -f "$rj_used" "$rj_used.left" "$rj_used.dd" "$rj_used.k"
	rj_used=
}

# remove_fifos removes the FIFOs made ahead and not used, and what the
# last requests left (as the server exits, see remove_done).
remove_fifos() {
	set --
	for _rf_n in $fifos; do set -- "$@" "$host_dir/fifo-$$-$_rf_n"; done
	[ -z "$fence" ] || set -- "$@" "$fence/busy.$epoch.$$"
	remove_done fg "$@"
}

# attach_job ID OFFSET SAVE SAVE_BYTES SAVE_LINES TTL sends the output of
# job ID from byte OFFSET on, following it until the job ends, then its
# status: the exit code, then " capped", " lease" or " killed" when it was
# stopped for its output, its lease, or by stop_job, then " saved" or
# " unsaved" when the output qualified for SAVE (see save_output). "!NOJOB"
# when there is no such job. The job stays until its client says it has
# the result (forget_jobs): an answer lost with the connection is sent
# again to a client that attaches again.
#
# Most commands end in their first moments, and their output goes out in
# one piece. The output of one that runs on streams once the client asks
# for it (see wait_job), at once for a job that was running already (a
# client coming back); the rest goes at the end.
attach_job() {
	# A job this server just started says on the news FIFO (fd 8, see
	# run_job) whether it runs on past its first moments ("long"); most
	# commands do not, and the waiter ends without a word (the end of the
	# FIFO).
	_atj_said=none
	if [ -n "$rj_news" ]; then
		_atj_said=
		read -r _atj_said <&8
		exec 8<&-
		rj_news=
	fi
	if ! hex "$1" || ! digits "$2" "${4:-0}" "${5:-0}" "$6"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	_atj_job=$jobs/$1
	if gone "$_atj_job"; then
		finish "!GONE $gone_status"
		return
	fi
	if [ ! -e "$_atj_job.out" ]; then
		finish '!NOJOB'
		return
	fi
	seq=$((seq + 1))
	# (A client coming back renews the lease at once.)
	[ -s "$_atj_job.status" ] || renew "$_atj_job" "$6"
	# A job this server just started said whether it runs on (see
	# above): one that ended goes out in one piece, with no watcher.
	# (Control lines sent meanwhile are left to the request loop, which
	# ignores them: the job has ended.)
	if [ -z "$_atj_said" ] && [ -n "$rj_waiter" ]; then
		wait "$rj_waiter"
		if [ -s "$_atj_job.status" ]; then
			rj_waiter=
			tail -c +$(($2 + 1)) "$_atj_job.out"
			job_result "$_atj_job" "$3" "$4" "$5"
			finish "$job_result_status"
			done_with
			return
		fi
	fi
	_atj_status=
	_atj_stream=
	[ -n "$rj_waiter" ] || [ -s "$_atj_job.status" ] || _atj_stream=yes
	wait_job "$_atj_job" "$rj_waiter" "$2" "$_atj_stream" "$6"
	case $? in
	1) _atj_status='!EIO the job ended without a status (its waiter was killed)' ;;
	2) _atj_status='!NOJOB' ;;
	3) _atj_status='!DETACHED' ;;
	esac
	rj_waiter=
	[ "$_atj_status" = '!DETACHED' ] || tail -c +$((wait_job_off + 1)) "$_atj_job.out"
	if [ -z "$_atj_status" ]; then
		job_result "$_atj_job" "$3" "$4" "$5"
		_atj_status=$job_result_status
	fi
	finish "$_atj_status"
	# The job's FIFO goes with the rest (see run_job), unless the job
	# runs on.
	[ "$_atj_status" != '!DETACHED' ] || leave_fifo
	done_with "$seq"
}

# job_result JOB SAVE SAVE_BYTES SAVE_LINES sets job_result_status to the
# status of the ended job in JOB as attach_job sends it, saving its output
# first when it qualifies (see save_output). JOB.status has the status, the
# size of the output (see output_size) and, once the output was looked at
# for SAVE, " saved" or " unsaved".
job_result() {
	job_result_status=
	_jr_saved=
	# (The line that starts with a space, wherever it is: a status of an
	# earlier version of this script has no size.)
	_jr_n=0
	while IFS= read -r _jr_line; do
		_jr_n=$((_jr_n + 1))
		case $_jr_n:$_jr_line in
		1:*) job_result_status=$_jr_line ;;
		*:' '*) _jr_saved=$_jr_line ;;
		esac
	done <"$1.status"
	# A lost job's tombstone, being written as this looked (see
	# sweep_jobs, stop_job): no exit status.
	if [ "$job_result_status" = lost ]; then
		job_result_status='!EIO the job ended without a status (its waiter was killed)'
		return
	fi
	# (A job of an earlier version of this script says it in JOB.saved.)
	if [ -z "$_jr_saved" ] && [ -n "$2" ] && [ -e "$1.saved" ]; then
		read -r _jr_saved <"$1.saved"
		_jr_saved=" $_jr_saved"
	fi
	if [ -n "$_jr_saved" ]; then
		# Sent before (that answer was lost): saved then.
		:
	elif [ -n "$2" ]; then
		# An output no longer than either limit, in bytes, has no more
		# lines than that either (a line takes a byte at least): no wc
		# for it when the relay knew its size.
		output_size "$1"
		_jr_size=$output_size_bytes
		[ -n "$_jr_size" ] || _jr_size=$(($3 + 1))
		if [ "$_jr_size" -gt "$3" ] || [ "$_jr_size" -gt "$4" ]; then
			save_output "$1.out" "$2" "$3" "$4"
			_jr_saved=$save_output_saved
		fi
		if [ -n "$_jr_saved" ]; then
			echo "$_jr_saved" >>"$1.status"
			# The output is sent again from there, if need be.
			if [ "$_jr_saved" = ' saved' ]; then ln -s -- "$2" "$1.out"; fi
		fi
	fi
	job_result_status=$job_result_status$_jr_saved
}

# list_jobs: "OK", the host's time (seconds since the epoch), then a line
# per job not forgotten yet: ID, status (as attach_job's, "running", or
# "lost" for a job that will never have one, see job_lost; a job of
# another host sharing the directory is "running" until it has a status)
# and label, separated by tabs; then
# "T SECONDS PATH" lines, when stat -c works, for when each job started
# (the time of its JOB.server, written as its waiter started).
list_jobs() {
	echo OK
	date +%s
	for _lj_out in "$jobs"/*.out; do
		[ -e "$_lj_out" ] || continue
		_lj_job=${_lj_out%.out}
		_lj_status=
		read -r _lj_status <"$_lj_job.status"
		job_info "$_lj_job"
		if [ -z "$_lj_status" ]; then
			_lj_status=running
			! job_lost "$_lj_job" || _lj_status=lost
		fi
		printf '%s\t%s\t%s\n' "${_lj_job##*/}" "$_lj_status" "$job_info_label"
	done
	stat -c 'T %Y %n' -- "$jobs"/*.server
}
