# shellcheck shell=sh disable=SC2034,SC2154
#
# batches.sh: run_jobs, the jobs of a batch started and answered for in
# frames, and its watcher (group_watcher), which runs the add_job lines
# that start them.

# group rs_: run_jobs group_watcher add_job group_fifo leave_group_fifo
#
# The batch at hand: rs_dir (the state files of its jobs), rs_ttl and
# rs_cap (run_jobs' TTL and CAP, for add_job, whose words are the
# client's), rs_fifos (the FIFOs its answer removes), rs_spare and
# rs_fifo_n (see group_fifo).

# run_jobs TTL CAP FORGET runs the jobs of a batch that found no server of
# their own: the client sends each one, while the answer runs, as the
# request line "<marker>add_job ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES
# LABEL" (SAVE without a newline), and the answer gives each one's whole
# output and status in attach_jobs' frames once it has ended: "D ID N" and
# N bytes, then "X ID STATUS" (as attach_job's, or "!ENOENT", "!ENOTDIR",
# "!EACCES" or "!EIO ..." for one that could not start, "!ATTACH" for one
# started before, which the client attaches to). Meanwhile "k ID" kills job
# ID; "r" renews every lease (to TTL seconds); "d ID" lets go of job ID,
# "X ID !DETACHED" while it runs (its client follows it with attach_jobs,
# streaming); "e" ends the answer with the status "OK" (the client has
# every result it waits for). FORGET and CAP as run_job's. At the end of
# the request stream the jobs go on and this server ends.
#
# Each job's waiter says when it has ended, on a FIFO the answer reads
# (events): no polling, and no process of the server's per job. The jobs'
# FIFOs are made ahead, eight at a time (group_fifo), and go with the
# answer's last rm once their jobs have ended; the FIFO of a job that runs
# on is left to its waiter (see leave_fifo).
run_jobs() {
	if ! digits "$1" "${2:-0}"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	set -f
	# shellcheck disable=SC2086 # job IDs (not globbed)
	[ -z "$3" ] || remove_files bg -- $3
	set +f
	seq=$((seq + 1))
	rs_dir=$private/group.$seq
	rs_ttl=$1
	rs_cap=$2
	if [ -z "$events" ]; then
		if ! mkfifo "$private/events" 2>/dev/null; then
			finish "!EIO cannot create $private/events"
			return
		fi
		exec 6<>"$private/events"
		events=$private/events
	fi
	if ! mkdir "$rs_dir"; then
		finish "!EIO cannot create $rs_dir"
		return
	fi
	group_watcher &
	_rs_watcher=$!
	# The jobs answered for (their state files stay: no rm for each).
	# (A job's "x" may come from an earlier answer of this server: one
	# whose job it let go of. There is no state file for it here.)
	_rs_done=' '
	# The FIFOs to remove (numbers, see group_fifo).
	rs_fifos=
	while IFS= read -r _rs_event <&6; do
		case $_rs_event in
		e) break ;;
		q) exit 129 ;;
		"f "*) echo "X ${_rs_event#f }" ;;
		"u "*) rs_fifos="$rs_fifos ${_rs_event#u }" ;;
		"x "* | "d "*)
			_rs_id=${_rs_event#? }
			_rs_state=$rs_dir/$_rs_id
			[ -f "$_rs_state" ] || continue
			case $_rs_done in *" $_rs_id "*) continue ;; esac
			_rs_done="$_rs_done$_rs_id "
			_rs_job=$jobs/$_rs_id
			_rs_fifo=
			{ read -r _rs_save && read -r _rs_bytes && read -r _rs_lines && read -r _rs_fifo; } <"$_rs_state"
			if [ ! -s "$_rs_job.status" ]; then
				echo "X $_rs_id !DETACHED"
				leave_group_fifo "$_rs_job" "$_rs_fifo"
				continue
			fi
			rs_fifos="$rs_fifos $_rs_fifo"
			# (The file held open first: see attach_jobs.)
			if command exec 7<"$_rs_job.out"; then
				output_size "$_rs_job"
				_rs_size=$output_size_bytes
				# (A size from wc by name, the file gone meanwhile: none.
				# An empty $(( )) would end the shell.)
				if [ -z "$_rs_size" ]; then
					_rs_size=$(wc -c <"$_rs_job.out" 2>/dev/null)
					_rs_size=${_rs_size##*[!0-9]}
					_rs_size=${_rs_size:-0}
				fi
				if [ "$_rs_size" -gt 0 ]; then
					echo "D $_rs_id $_rs_size"
					head -c "$_rs_size" <&7
				fi
				exec 7<&-
			fi
			job_result "$_rs_job" "$_rs_save" "$_rs_bytes" "$_rs_lines"
			echo "X $_rs_id $job_result_status"
			;;
		esac
	done
	wait "$_rs_watcher"
	# The ends of jobs let go of that came meanwhile are read now, up to
	# a mark of this request's own: none is left to fill the FIFO.
	echo z >&6
	while IFS= read -r _rs_event <&6 && [ "$_rs_event" != z ]; do :; done
	# (Jobs whose clients gave up waiting for the kill run on.)
	for _rs_state in "$rs_dir"/*; do
		case $_rs_done in *" ${_rs_state##*/} "*) continue ;; esac
		[ -f "$_rs_state" ] || continue
		_rs_fifo=
		{ read -r _rs_fifo && read -r _rs_fifo && read -r _rs_fifo && read -r _rs_fifo; } <"$_rs_state"
		leave_group_fifo "$jobs/${_rs_state##*/}" "$_rs_fifo"
	done
	set --
	for _rs_fifo in $rs_fifos; do
		set -- "$@" "$host_dir/fifo-$$-g$seq-$_rs_fifo"
		case $_rs_fifo in *.left) ;; *) set -- "$@" "$host_dir/fifo-$$-g$seq-$_rs_fifo.dd" "$host_dir/fifo-$$-g$seq-$_rs_fifo.k" ;; esac
	done
	rm -rf "$rs_dir" "$@"
	finish OK
}

# leave_group_fifo JOB N leaves FIFO N of run_jobs (group_fifo), the
# FIFO of JOB, which runs on, to the job's waiter (as leave_fifo), or adds
# it to those the answer removes when the job has ended meanwhile.
leave_group_fifo() {
	[ -n "$2" ] || return 0
	: >"$host_dir/fifo-$$-g$seq-$2.left"
	[ -s "$1.status" ] && rs_fifos="$rs_fifos $2 $2.left"
}

# group_watcher reads the request stream while run_jobs runs
# (read_control): it starts the jobs added (add_job lines) and passes what
# the answer must hear on to it through the events FIFO (fd 6), in order:
# "k [ID]" kills, "d [ID]" lets go of the job, or of every job of the
# answer; "r" renews; "e" ends the answer.
group_watcher() {
	rs_spare=
	rs_fifo_n=0
	while read_control; do
		case $ctl_line in
		"$marker"'add_job '*)
			if ! fence_in; then
				echo q >&6
				return
			fi
			command eval "${ctl_line#"$marker"}"
			fence_out
			continue
			;;
		esac
		case $ctl in
		r)
			# (Those answered for too: they are few, and a lease of an
			# ended job is not looked at.)
			for _gw_state in "$rs_dir"/*; do
				[ ! -e "$jobs/${_gw_state##*/}.lease" ] || renew "$jobs/${_gw_state##*/}" "$rs_ttl"
			done
			;;
		k | d)
			# (Without an ID: each job of this request.)
			if [ -n "$ctl_id" ]; then set -- "$ctl_id"; else set -- "$rs_dir"/*; fi
			for _gw_id; do
				_gw_id=${_gw_id##*/}
				hex "$_gw_id" || continue
				if [ "$ctl" = k ]; then kill_running "$_gw_id"; else echo "d $_gw_id" >&6; fi
			done
			;;
		e)
			# The FIFOs made ahead and not used go with the answer's rm.
			[ -z "$rs_spare" ] || echo "u $rs_spare" >&6
			echo e >&6
			return
			;;
		esac
	done
	# The client is gone: the jobs go on, their waiters holding their
	# leases.
	echo q >&6
}

# add_job ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES LABEL starts job ID of
# run_jobs, as run_job would (in its watcher): its end comes as the event
# "x ID"; a job that cannot start comes as "f ID STATUS".
add_job() {
	hex "$1" || return
	if ! digits "${5:-0}" "${6:-0}"; then
		echo "f $1 !EIO malformed request" >&6
		return
	fi
	_gj_job=$jobs/$1
	if [ -n "$3" ]; then
		if [ ! -d "$3" ]; then
			if [ -e "$3" ]; then echo "f $1 !ENOTDIR" >&6; else echo "f $1 !ENOENT" >&6; fi
			return
		fi
		if [ ! -x "$3" ]; then
			echo "f $1 !EACCES" >&6
			return
		fi
	fi
	# (The FIFO first, as in run_job: from the job's first file to
	# JOB.server, the job has no server that an attacher could see die.)
	if ! group_fifo; then
		printf 'f %s !EIO cannot create a job in %s\n' "$1" "$jobs" >&6
		return
	fi
	if gone "$_gj_job"; then
		echo "f $1 !GONE $gone_status" >&6
		return
	fi
	# noclobber: of two starts of one job, one creates it.
	set -C
	{ command : >"$_gj_job.out"; } 2>/dev/null
	_gj_made=$?
	set +C
	if [ "$_gj_made" != 0 ]; then
		echo "f $1 !ATTACH" >&6
		return
	fi
	if ! { echo "$rs_ttl" >"$_gj_job.lease"; } 2>/dev/null; then
		rm -f -- "$_gj_job".*
		printf 'f %s !EIO cannot create a job in %s\n' "$1" "$jobs" >&6
		return
	fi
	printf '%s %s\n%s\n' "$$" "$host_id" "${7%%"$nl"*}" >"$_gj_job.server"
	printf '%s\n' "$4" "$5" "$6" "${rs_spare%% *}" >"$rs_dir/$1"
	start_job "$_gj_job" "$2" "$3" "$host_dir/fifo-$$-g$seq-${rs_spare%% *}" "$rs_cap" "$rs_ttl" "$events"
	case $rs_spare in
	*' '*) rs_spare=${rs_spare#* } ;;
	*) rs_spare= ;;
	esac
}

# group_fifo makes sure a FIFO made ahead for run_jobs' jobs is there: the
# first number of rs_spare, which names $host_dir/fifo-PID-gSEQ-N (in the
# jobs directory, as run_job's: a job may open it after this server is
# gone). They are made eight at a time: one mkfifo for eight jobs.
group_fifo() {
	[ -z "$rs_spare" ] || return 0
	set --
	while [ "$#" -lt 8 ]; do
		rs_fifo_n=$((rs_fifo_n + 1))
		set -- "$@" "$host_dir/fifo-$$-g$seq-$rs_fifo_n"
		rs_spare="$rs_spare $rs_fifo_n"
	done
	rs_spare=${rs_spare# }
	mkfifo "$@" 2>/dev/null && return 0
	rs_spare=
	rm -f "$@"
	return 1
}
