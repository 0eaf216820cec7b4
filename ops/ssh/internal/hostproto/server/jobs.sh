# shellcheck shell=sh disable=SC2034,SC2154
#
# jobs.sh: what requests leave to remove (remove_done), the FIFOs made
# ahead for jobs (make_fifos, remove_fifos), a job's status as answered
# (job_result). Serves list_jobs.

# group rj_: serve run_jobs leave_answer remove_done remove_fifos
#
# What the requests answered leave to remove, until the next job's waiter
# removes it, or the next batch does, or the server as it exits (see
# remove_done): rj_done_fifos, rj_done_seqs and rj_done_ids. serve sets
# them empty.

# remove_done MODE [FILE...] removes, with one rm, the FILEs, the files of
# the jobs whose results the client has (rj_done_ids, see forget_jobs)
# and what the requests answered since the last time left: the FIFOs of
# the jobs they started (rj_done_fifos, tokens as in batch_start) and
# their jobs' state files and marks (rj_done_seqs, the requests' numbers,
# see run_jobs). MODE: "bg", the rm in the background; "exec", the rm
# replaces this shell (a waiter's last act, see start_job); "fg", the rm
# runs and this goes on.
remove_done() {
	_rd_mode=$1
	shift
	for _rd_token in $rj_done_fifos; do
		_rd_fifo=$host_dir/fifo-$$-$_rd_token
		set -- "$@" "$_rd_fifo" "$_rd_fifo.dd" "$_rd_fifo.k" "$_rd_fifo.left"
	done
	for _rd_n in $rj_done_seqs; do set -- "$@" "$private/job.$_rd_n".* "$private/answer.$_rd_n.ending" "$private/answer.$_rd_n.killing"; done
	set -f
	# shellcheck disable=SC2086 # job IDs (not globbed)
	set -- "$@" -- $rj_done_ids
	set +f
	rj_done_fifos=
	rj_done_seqs=
	rj_done_ids=
	remove_files "$_rd_mode" "$@"
}

# make_fifos adds eight new FIFOs to $fifos (batches of one take theirs
# from there, see run_jobs), and makes the news FIFO if there is none.
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

# remove_fifos removes the FIFOs made ahead and not used, and what the
# last requests left (as the server exits, see remove_done).
remove_fifos() {
	set --
	for _rf_n in $fifos; do set -- "$@" "$host_dir/fifo-$$-$_rf_n"; done
	[ -z "$fence" ] || set -- "$@" "$fence/busy.$epoch.$$"
	remove_done fg "$@"
}

# job_result JOB SAVE SAVE_BYTES SAVE_LINES sets job_result_status to the
# status of the ended job in JOB as run_jobs and attach_jobs send it, saving its output
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
# per job not forgotten yet: ID, status (as run_jobs', "running", or
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
