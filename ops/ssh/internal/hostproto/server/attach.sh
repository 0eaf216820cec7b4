# shellcheck shell=sh disable=SC2034,SC2154
#
# attach.sh: attach_jobs, several jobs followed in one answer, in frames,
# and its watcher of the control lines (attach_watcher).

# attach_jobs TTL ID OFFSET SAVE SAVE_BYTES SAVE_LINES [ID OFFSET ...]
# attaches to several jobs in one request: the calls of a client whose
# connection came back. It sends their output from each OFFSET on, as it
# comes, in frames: the line "D ID N", then N bytes of job ID's output (at
# most 1 MiB, so that no job holds up the others for long); and the line
# "X ID STATUS" once job ID has ended and all its output went (STATUS as
# run_jobs', or "!NOJOB"). Once every job has ended the answer ends
# with the status "OK". Meanwhile "k ID" kills job ID, "r" renews every
# lease (to TTL seconds), and "a ID OFFSET SAVE_BYTES SAVE_LINES SAVE" adds
# a job (one its client let go of on another server, see run_jobs' "d"):
# one added as the answer ends is left out, and its client, which sees no
# "X" for it, attaches to it elsewhere. "d" ends the answer early, with the
# status "!DETACHED": the client wants this server for something else, and
# attaches again later. At the end of the request stream the jobs go on
# and this server ends, as in run_jobs.
#
# The jobs' sizes come from one ls per look, paced as run_jobs' streams
# (see pace), and at once again while a job has more than a frame
# waiting; the frames are send_output's.
attach_jobs() {
	# (Anything else is a client that does not speak this protocol.)
	if ! attach_words "$@"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	seq=$((seq + 1))
	_aj_dir=$private/attach.$seq
	if ! mkdir "$_aj_dir"; then
		finish "!EIO cannot create $_aj_dir"
		return
	fi
	_aj_ttl=$1
	shift
	while [ "$#" -ge 5 ]; do
		if [ -e "$jobs/$1.out" ]; then
			# The job's state: offset reached, then SAVE's words.
			printf '%s\n' "$2" "$3" "$4" "$5" >"$_aj_dir/$1"
			[ -s "$jobs/$1.status" ] || renew "$jobs/$1" "$_aj_ttl"
		elif gone "$jobs/$1"; then
			echo "X $1 !GONE $gone_status"
		else
			echo "X $1 !NOJOB"
		fi
		shift 5
	done
	attach_watcher "$_aj_dir" "$_aj_ttl" &
	_aj_watcher=$!
	_aj_idle=0
	_aj_rounds=0
	_aj_end=OK
	while :; do
		_aj_rounds=$((_aj_rounds + 1))
		# (A job with no server for seconds, 60 rounds, may be judged
		# unstarted: see unstarted.)
		_aj_waited=
		[ "$_aj_rounds" -lt 60 ] || _aj_waited=waited
		if [ -e "$_aj_dir.stop" ]; then
			_aj_end='!DETACHED'
			break
		fi
		# Which jobs have ended is seen before their sizes: the size of
		# an ended job is final.
		_aj_outs=
		_aj_ended=' '
		for _aj_state in "$_aj_dir"/*; do
			[ -f "$_aj_state" ] || continue
			_aj_id=${_aj_state##*/}
			_aj_job=$jobs/$_aj_id
			if [ -s "$_aj_job.status" ]; then
				_aj_ended="$_aj_ended$_aj_id "
			elif [ ! -e "$_aj_job.out" ]; then
				if gone "$_aj_job"; then
					echo "X $_aj_id !GONE $gone_status"
				else
					echo "X $_aj_id !NOJOB"
				fi
				rm -f "$_aj_state"
				continue
			else
				job_info "$_aj_job"
				if job_lost "$_aj_job"; then
					echo "X $_aj_id !EIO the job ended without a status (its waiter was killed)"
					rm -f "$_aj_state"
					continue
				fi
				if [ -z "$job_info_waiter" ] && unstarted "$_aj_job" "$_aj_waited"; then
					echo "X $_aj_id !NOJOB"
					rm -f "$_aj_state"
					continue
				fi
			fi
			_aj_outs="$_aj_outs $_aj_id.out"
		done
		[ -n "$_aj_outs" ] || break
		_aj_news=
		_aj_full=
		# shellcheck disable=SC2086 # job IDs are hex
		_aj_sizes=$(cd "$jobs" && ls -lnL -- $_aj_outs)
		while read -r _ _ _ _ _aj_size _aj_rest; do
			_aj_id=${_aj_rest##* }
			_aj_id=${_aj_id%.out}
			_aj_state=$_aj_dir/$_aj_id
			{ read -r _aj_off && read -r _aj_save && read -r _aj_bytes && read -r _aj_lines; } <"$_aj_state" || continue
			if [ "$_aj_size" -gt "$_aj_off" ]; then
				# (The file held open first: a frame promises its bytes,
				# and the job's files may go meanwhile, collected by
				# another server or swept.)
				command exec 7<"$jobs/$_aj_id.out" || continue
				send_output "$_aj_id" "$_aj_off" "$_aj_size" 1048576
				exec 7<&-
				[ "$send_output_off" = "$_aj_size" ] || _aj_full=yes
				printf '%s\n' "$send_output_off" "$_aj_save" "$_aj_bytes" "$_aj_lines" >"$_aj_state"
				_aj_news=yes
			else
				case $_aj_ended in
				*" $_aj_id "*)
					job_result "$jobs/$_aj_id" "$_aj_save" "$_aj_bytes" "$_aj_lines"
					echo "X $_aj_id $job_result_status"
					rm -f "$_aj_state"
					_aj_news=yes
					;;
				esac
			fi
		done <<EOF
$_aj_sizes
EOF
		# (More than a frame waits: at once.)
		[ -z "$_aj_full" ] || continue
		pace "$_aj_news" "$_aj_idle"
		_aj_idle=$pace_idle
		sleep "$pace_nap" 2>/dev/null || sleep 1
	done
	stop_watcher "$_aj_watcher" "$_aj_dir"
	rm -rf "$_aj_dir" "$_aj_dir.stop" "$_aj_dir.ending" "$_aj_dir.killing"
	finish "$_aj_end"
}

# attach_words TTL [ID OFFSET SAVE SAVE_BYTES SAVE_LINES]...: true when
# these words of attach_jobs are what it takes (SAVE is one line: the
# state file of the job holds it as one).
attach_words() {
	digits "$1" || return 1
	shift
	while [ "$#" -ge 5 ]; do
		hex "$1" && digits "$2" "${4:-0}" "${5:-0}" || return 1
		case $3 in *"$nl"*) return 1 ;; esac
		shift 5
	done
	[ "$#" = 0 ]
}

# attach_watcher DIR TTL reads the request stream while attach_jobs runs
# (read_control): "k ID" kills job ID, "k" each job in DIR, "r" renews the
# lease of each job in DIR, "a ..." adds a job to DIR, "d" lets go of them
# all: the answer stops (see attach_jobs). At the end of the stream (the
# client is gone) it ends this server; the jobs go on.
attach_watcher() {
	while read_control; do
		case $ctl in
		r)
			for _aw_state in "$1"/*; do
				[ ! -f "$_aw_state" ] || renew "$jobs/${_aw_state##*/}" "$2"
			done
			;;
		k)
			_aw_ids=$ctl_id
			if [ -z "$_aw_ids" ]; then
				for _aw_state in "$1"/*; do
					[ ! -f "$_aw_state" ] || _aw_ids="$_aw_ids ${_aw_state##*/}"
				done
			fi
			# shellcheck disable=SC2086 # job IDs (hex)
			watcher_kills "$1" '' $_aw_ids
			;;
		d) [ -n "$ctl_id" ] || : >"$1.stop" ;;
		a)
			# a ID OFFSET SAVE_BYTES SAVE_LINES SAVE: one more job (SAVE,
			# the rest of the line, may hold spaces). Its state file is
			# renamed into place: the main loop reads it whole or not at all.
			_aw_rest=$ctl_args
			_aw_id=${_aw_rest%% *}
			_aw_rest=${_aw_rest#* }
			_aw_off=${_aw_rest%% *}
			_aw_rest=${_aw_rest#* }
			_aw_bytes=${_aw_rest%% *}
			_aw_rest=${_aw_rest#* }
			_aw_lines=${_aw_rest%% *}
			_aw_rest=${_aw_rest#* }
			if ! hex "$_aw_id" || ! digits "$_aw_off" "${_aw_bytes:-0}" "${_aw_lines:-0}"; then
				continue
			fi
			printf '%s\n' "$_aw_off" "$_aw_rest" "$_aw_bytes" "$_aw_lines" >"$1/.$_aw_id" &&
				mv -f "$1/.$_aw_id" "$1/$_aw_id"
			;;
		esac
	done
	kill -s TERM $$
}
