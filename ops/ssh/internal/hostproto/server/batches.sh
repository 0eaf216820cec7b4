# shellcheck shell=sh disable=SC2034,SC2154
#
# batches.sh: run_jobs, every command's request: the jobs of a batch, or
# one job alone (a batch of one), started and answered for in frames; its
# watcher of the control lines (batch_watcher), which runs the add_job
# lines that start a batch's jobs. (Its looks at the jobs that stream,
# batch_look and batch_tick, are in follow.sh.) Serves run_jobs.

# group rs_: serve run_jobs batch_start batch_fails batch_state batch_off batch_set_off batch_end batch_look
# batch_tick batch_watcher add_job group_fifo leave_batch_fifo leave_answer
#
# The answer at hand: rs_state (its jobs' state files are rs_state.ID,
# see batch_start), rs_one (yes for a batch of one), rs_open (its jobs
# without a verdict yet), rs_ttl and rs_cap (run_jobs' TTL and CAP, for
# add_job, whose words are the client's), rs_done (the jobs answered
# for), rs_fifos (the FIFOs to remove once the answer ends, as tokens: see
# batch_start), rs_own (the waiter of a batch of one's job, this server's
# child), rs_ticks and rs_ticker (see batch_tick), rs_spare and
# rs_fifo_n (see group_fifo), rs_offs (see batch_off); batch_state's
# fields: rs_bytes, rs_lines, rs_token and rs_save. serve sets rs_state empty: no answer.

# run_jobs TTL CAP FORGET [ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES
# LABEL] runs jobs and answers for them in frames: for each job, "D ID N"
# and N bytes of its output (as often as its output grows, once it
# streams; else all at its end), then "X ID STATUS": the exit code, then
# " capped", " lease" or " killed" when it was stopped for its output,
# its lease, or by stop_job, then " saved" or " unsaved" when the output
# qualified for SAVE (see job_result); or "!ENOENT", "!ENOTDIR" or
# "!EACCES" when DIR cannot be entered, "!GONE TOMB" for a job that left
# only its tombstone, "!EIO ..." for one that could not start or will
# never have a status, "!ATTACH" for one started before (a start sent
# again: the client follows it with attach_jobs), "!DETACHED" for one
# let go of. A job stays until its client says it has the result
# (FORGET, the IDs of such jobs, space-separated): an answer lost with
# the connection is sent again to a client that attaches again. CAP is
# the most output a job may write (bytes; empty: no cap), TTL its lease
# (seconds).
#
# With the job's words, the answer is a batch of one: the job is started
# at once, and the answer ends with the status "OK" as soon as it has its
# verdict. Without them, the jobs come while the answer runs, as the
# request lines "<marker>add_job ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES
# LABEL" (SAVE without a newline), and "e" ends the answer with "OK" (the
# client has every verdict it waits for).
#
# Meanwhile the control lines (read_control): "k [ID]" kills a job, or
# each; "r" renews every lease (to TTL); "s [ID]" has a job's output, or
# each one's, sent as it grows from then on; "d [ID]" lets go of a job,
# or of each: "X ID !DETACHED" at once, and it runs on, to be followed
# with attach_jobs (its client wants this server for something else). At
# the end of the request stream the jobs go on and this server ends.
#
# A job's waiter says when it has ended, on a FIFO the answer reads
# (events, fd 6): no polling, and no process of the server's per job. A
# batch of one's job says first, on the news FIFO (fd 8), whether it runs
# on past its first moments: most commands do not, and theirs is
# answered with no watcher at all. The jobs' output FIFOs are made ahead,
# eight at a time; a job's goes once it has ended, and is left to its
# waiter when it runs on (see leave_batch_fifo).
run_jobs() {
	case $# in
	3) digits "$1" "${2:-0}" ;;
	10) digits "$1" "${2:-0}" "${8:-0}" "${9:-0}" && hex "$4" ;;
	*) false ;;
	esac || {
		finish '!PROTOCOL malformed request'
		return
	}
	# The jobs whose results the client has go with the next rm (see
	# remove_done).
	rj_done_ids="$rj_done_ids${3:+ }$3"
	seq=$((seq + 1))
	rs_state=$private/job.$seq
	rs_ttl=$1
	rs_cap=$2
	rs_one=
	rs_open=0
	rs_done=' '
	rs_fifos=
	rs_own=
	rs_ticks=0
	rs_ticker=
	rs_offs=' '
	if [ -z "$events" ]; then
		if ! mkfifo "$private/events" 2>/dev/null; then
			finish "!EIO cannot create $private/events"
			return
		fi
		exec 6<>"$private/events"
		events=$private/events
	fi
	_rs_said=long
	if [ "$#" = 10 ]; then
		rs_one=yes
		rs_open=1
		fence_in || exit 0
		[ -n "$fifos" ] || make_fifos
		# The waiter gets the news FIFO open (read-write: that never
		# waits); this server then holds it open for reading only, so
		# that it reads the end of the file once the waiter has closed
		# it, however it ended (nothing else has it open then: the
		# waiter's children never get it), and it serves the next job.
		# Without it, no news: the job is followed as a long one.
		_rs_news=
		if [ -p "$private/news" ] && { command exec 8<>"$private/news"; } 2>/dev/null; then
			_rs_news=news
		fi
		# The waiter removes what the last requests left (see
		# remove_done), with the rm it becomes as it ends.
		_rs_token=${fifos%% *}
		batch_start "$_rs_token" "$_rs_news" hand "$4" "$5" "$6" "$7" "$8" "$9" "${10}"
		fence_out
		# (A FIFO made ahead and gone since is no use: the next start
		# makes new ones.)
		if [ -z "$batch_start_waiter" ] && [ ! -p "$host_dir/fifo-$$-$_rs_token" ]; then
			fifos=
		fi
		if [ -n "$batch_start_waiter" ]; then
			rs_own=$batch_start_waiter
			rj_done_fifos=
			rj_done_seqs=
			rj_done_ids=
			case $fifos in
			*' '*) fifos=${fifos#* } ;;
			*) fifos= ;;
			esac
			if [ -n "$_rs_news" ]; then
				# (Not reopened: no news, followed as a long one.)
				_rs_said=long
				if { command exec 8<"$private/news"; } 2>/dev/null; then
					_rs_said=
					read -r _rs_said <&8
				fi
				exec 8<&-
			fi
		else
			[ -z "$_rs_news" ] || exec 8<&-
			_rs_said=
		fi
	fi
	[ -z "$rj_done_ids$rj_done_fifos$rj_done_seqs" ] || remove_done bg
	_rs_watcher=
	if [ "$_rs_said" = long ]; then
		batch_watcher &
		_rs_watcher=$!
		# The ticker from now on: a waiter killed by someone (the OOM
		# killer, a person) never says "x"; batch_look sees it lost.
		[ -z "$rs_one" ] || batch_tick
	elif [ -n "$batch_start_waiter" ]; then
		# Ended in its first moments (or its waiter was killed).
		wait "$batch_start_waiter"
		batch_end "$4" w
	fi
	while [ -z "$rs_one" ] || [ "$rs_open" -gt 0 ]; do
		IFS= read -r _rs_event <&6 || break
		case $_rs_event in
		e) [ -n "$rs_one" ] || break ;;
		q) exit 129 ;;
		"f "*)
			# (Only this answer's jobs fail: an "f" is written as a job
			# of the answer starts, and read before the answer ends.)
			_rs_id=${_rs_event#f }
			_rs_id=${_rs_id%% *}
			echo "X ${_rs_event#f }"
			rs_done="$rs_done$_rs_id "
			rs_open=$((rs_open - 1))
			;;
		"x "* | "d "*) batch_end "${_rs_event#? }" "${_rs_event%% *}" ;;
		"s "*)
			_rs_id=${_rs_event#s }
			batch_state "$rs_state.$_rs_id" || continue
			case $rs_done in *" $_rs_id "*) continue ;; esac
			batch_off "$_rs_id"
			[ -z "$batch_off_at" ] || continue
			batch_set_off "$_rs_id" 0
			# (The first look at once: the client asked for it.)
			if batch_look && [ -z "$rs_ticker" ]; then batch_tick; fi
			;;
		"t "*)
			_rs_id=${_rs_event#t }
			[ "${_rs_id%% *}" = "$rs_ticks" ] || continue
			[ -n "$rs_ticker" ] || continue
			if ! batch_look; then
				# Every job has its verdict.
				kill -s KILL "$rs_ticker" 2>/dev/null
				rs_ticker=
			elif [ -n "$batch_look_news" ] && [ "${_rs_id#* }" -gt 40 ]; then
				batch_tick
			fi
			;;
		"u "*) rs_fifos="$rs_fifos ${_rs_event#u }" ;;
		esac
	done
	if [ -n "$_rs_watcher" ]; then
		# (A batch's watcher ends by itself, at "e".)
		if [ -n "$rs_one" ]; then
			stop_watcher "$_rs_watcher" "$private/answer.$seq"
		else
			wait "$_rs_watcher" 2>/dev/null
		fi
	fi
	[ -z "$rs_ticker" ] || kill -s KILL "$rs_ticker" 2>/dev/null
	# What came meanwhile (the ends of jobs let go of, a tick) is read
	# now, up to a mark of this request's own: none is left to fill the
	# FIFO.
	echo z >&6
	while IFS= read -r _rs_event <&6 && [ "$_rs_event" != z ]; do :; done
	leave_answer
	# The request's files and its ended jobs' FIFOs: a batch's go now,
	# with one rm; a batch of one's with the rm the next job's waiter
	# becomes (no fork for them), or as the server exits.
	[ -n "$rs_one" ] || remove_done fg
	finish OK
}

# batch_start TOKEN NEWS HAND ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES
# LABEL starts job ID of run_jobs with its output through the FIFO TOKEN
# (made ahead: $host_dir/fifo-PID-TOKEN, in the jobs directory, not the
# private one: the job may open it after this server is gone), writes its
# state file and sets batch_start_waiter to its waiter (empty when it did
# not start: the event "f ID STATUS" says why). NEWS and HAND as
# start_job's. Its end comes as the event "x ID".
batch_start() {
	batch_start_waiter=
	_bs_token=$1
	_bs_news=$2
	_bs_hand=$3
	shift 3
	_bs_job=$jobs/$1
	if gone "$_bs_job"; then
		batch_fails "$1" "!GONE $gone_status"
		return
	fi
	if [ -e "$_bs_job.out" ]; then
		batch_fails "$1" '!ATTACH'
		return
	fi
	if [ -n "$3" ]; then
		if [ ! -d "$3" ]; then
			if [ -e "$3" ]; then batch_fails "$1" '!ENOTDIR'; else batch_fails "$1" '!ENOENT'; fi
			return
		fi
		if [ ! -x "$3" ]; then
			batch_fails "$1" '!EACCES'
			return
		fi
	fi
	# The job's state, written once (the answer keeps what changes,
	# see batch_off): without it the answer would not know the job.
	if ! [ -p "$host_dir/fifo-$$-$_bs_token" ] ||
		! { printf '%s\n' "$5" "$6" "$_bs_token" "$4" >"$rs_state.$1"; } 2>/dev/null; then
		batch_fails "$1" "!EIO cannot create a job in $jobs"
		return
	fi
	# noclobber: of two starts of one job, one creates it.
	set -C
	{ command : >"$_bs_job.out"; } 2>/dev/null
	_bs_made=$?
	set +C
	if [ "$_bs_made" != 0 ]; then
		batch_fails "$1" '!ATTACH'
		return
	fi
	if ! { echo "$rs_ttl" >"$_bs_job.lease"; } 2>/dev/null; then
		rm -f -- "$_bs_job".*
		batch_fails "$1" "!EIO cannot create a job in $jobs"
		return
	fi
	# Who is starting it, where: if this server dies before the job's
	# waiter begins, an attacher sees it (unstarted). The label is one
	# line.
	printf '%s %s\n%s\n' "$$" "$host_id" "${7%%"$nl"*}" >"$_bs_job.server"
	start_job "$_bs_job" "$2" "$3" "$host_dir/fifo-$$-$_bs_token" "$rs_cap" "$rs_ttl" "$events" "$_bs_news" "$_bs_hand"
	batch_start_waiter=$start_job_waiter
}

# batch_fails ID STATUS: job ID of the answer did not start, for STATUS
# (the event "f ID STATUS", which the answer reads before it ends).
# Its state file, if any, is made the empty one: the answer finds
# nothing to follow of the job.
batch_fails() {
	{ : >"$rs_state.$1"; } 2>/dev/null
	printf 'f %s %s\n' "$1" "${2%%"$nl"*}" >&6
}

# batch_state FILE reads a job's state file (batch_start) into rs_bytes,
# rs_lines, rs_token and rs_save (the last, on the lines left: SAVE may
# hold a newline); false when there is none, or it is the empty one of a
# job that did not start.
batch_state() {
	rs_token=
	[ -f "$1" ] || return 1
	{
		read -r rs_bytes && read -r rs_lines && read -r rs_token || return 1
		IFS= read -r rs_save
		while IFS= read -r _bst_line; do rs_save=$rs_save$nl$_bst_line; done
	} <"$1"
	[ -n "$rs_token" ]
}

# batch_off ID sets batch_off_at to the byte job ID's output was sent up
# to, once it streams (empty until then); batch_set_off ID OFFSET records
# it. They are kept in rs_offs, " ID:OFFSET ...", in the answer's shell:
# no file is written as output goes out.
batch_off() {
	case $rs_offs in
	*" $1:"*)
		batch_off_at=${rs_offs#*" $1:"}
		batch_off_at=${batch_off_at%% *}
		;;
	*) batch_off_at= ;;
	esac
}

batch_set_off() {
	case $rs_offs in
	*" $1:"*)
		_bso_rest=${rs_offs#*" $1:"}
		rs_offs="${rs_offs%%" $1:"*} $1:$2 ${_bso_rest#* }"
		;;
	*) rs_offs="$rs_offs$1:$2 " ;;
	esac
}

# batch_end ID HOW answers for job ID of the answer, once: HOW is "x" (its
# waiter says it has ended), "d" (the client lets go of it) or "w" (its
# waiter, waited for, is gone). A job that has not ended is let go of
# ("!DETACHED"), or, for "w", will never have a status; one that has gets
# its output from the byte reached on, then its status.
batch_end() {
	batch_state "$rs_state.$1" || return 0
	case $rs_done in *" $1 "*) return 0 ;; esac
	rs_done="$rs_done$1 "
	rs_open=$((rs_open - 1))
	_be_job=$jobs/$1
	if [ ! -s "$_be_job.status" ]; then
		if [ "$2" = w ]; then
			rs_fifos="$rs_fifos $rs_token"
			echo "X $1 !EIO the job ended without a status (its waiter was killed)"
			return
		fi
		echo "X $1 !DETACHED"
		leave_batch_fifo "$_be_job" "$rs_token"
		return
	fi
	rs_fifos="$rs_fifos $rs_token"
	# (The file held open first: a frame promises its bytes, and the
	# job's files may go meanwhile, collected by another server or
	# swept.)
	if command exec 7<"$_be_job.out"; then
		output_size "$_be_job"
		_be_size=$output_size_bytes
		# (A size from wc by name, the file gone meanwhile: none. An
		# empty $(( )) would end the shell.)
		if [ -z "$_be_size" ]; then
			_be_size=$(wc -c <"$_be_job.out" 2>/dev/null)
			_be_size=${_be_size##*[!0-9]}
			_be_size=${_be_size:-0}
		fi
		batch_off "$1"
		send_output "$1" "${batch_off_at:-0}" "$_be_size" ''
		exec 7<&-
	fi
	job_result "$_be_job" "$rs_save" "$rs_bytes" "$rs_lines"
	echo "X $1 $job_result_status"
}

# leave_batch_fifo JOB TOKEN leaves the FIFO TOKEN (see batch_start) of
# JOB, which runs on, to the job's waiter, which removes it as the job
# ends: the mark ".left" says so. Of this and the waiter, each writes
# its own file (the mark, the status) before it looks for the other's,
# so at least one of them sees both and removes the FIFO.
leave_batch_fifo() {
	[ -n "$2" ] || return 0
	: >"$host_dir/fifo-$$-$2.left"
	[ ! -s "$1.status" ] || rs_fifos="$rs_fifos $2"
}

# leave_answer, as the answer ends or the server exits in the middle of
# it, leaves the FIFOs of the answer's jobs that have no verdict (their
# clients gave up waiting for a kill, or are gone) to their waiters, and
# adds the others, and the answer's state files, to what remove_done
# removes.
leave_answer() {
	[ -n "$rs_state" ] || return 0
	for _la_state in "$rs_state".*; do
		_la_id=${_la_state##*.}
		case $rs_done in *" $_la_id "*) continue ;; esac
		batch_state "$_la_state" || continue
		rs_done="$rs_done$_la_id "
		leave_batch_fifo "$jobs/$_la_id" "$rs_token"
	done
	rj_done_fifos="$rj_done_fifos$rs_fifos"
	rj_done_seqs="$rj_done_seqs $seq"
	rs_fifos=
	rs_state=
}

# batch_watcher reads the request stream while run_jobs runs
# (read_control): it starts the jobs added (add_job lines, in a batch),
# kills ("k"), renews ("r"), and passes what the answer must hear on to
# it through the events FIFO (fd 6), in order: "s ID" streams job ID,
# "d ID" lets go of it, "e" ends the answer, "q" the client is gone.
batch_watcher() {
	rs_spare=
	rs_fifo_n=0
	while read_control; do
		case $ctl_line in
		"$marker"'add_job '*)
			[ -z "$rs_one" ] || continue
			if ! fence_in; then
				echo q >&6
				return
			fi
			command eval "${ctl_line#"$marker"}"
			fence_out
			continue
			;;
		esac
		# (Without an ID: each job of the answer.)
		if [ -n "$ctl_id" ]; then set -- "$rs_state.$ctl_id"; else set -- "$rs_state".*; fi
		case $ctl in
		r)
			# (Those answered for too: they are few, and a lease of an
			# ended job is not looked at.)
			for _bw_state; do
				_bw_id=${_bw_state##*.}
				[ ! -e "$jobs/$_bw_id.lease" ] || renew "$jobs/$_bw_id" "$rs_ttl"
			done
			;;
		k)
			_bw_ids=
			for _bw_state; do
				[ ! -f "$_bw_state" ] || _bw_ids="$_bw_ids ${_bw_state##*.}"
			done
			# shellcheck disable=SC2086 # job IDs (hex)
			watcher_kills "$private/answer.$seq" "$rs_own" $_bw_ids
			;;
		s | d)
			for _bw_state; do
				[ ! -f "$_bw_state" ] || echo "$ctl ${_bw_state##*.}" >&6
			done
			;;
		e)
			[ -z "$rs_one" ] || continue
			# The FIFOs made ahead and not used go with the answer's rm.
			for _bw_n in $rs_spare; do echo "u g$seq-$_bw_n" >&6; done
			echo e >&6
			return
			;;
		esac
	done
	# The client is gone: the jobs go on, their waiters holding their
	# leases.
	echo q >&6
}

# add_job ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES LABEL starts job ID
# of a batch (a request line of run_jobs' stream, run by its watcher),
# as batch_start; a job that cannot start comes as "f ID STATUS".
add_job() {
	hex "$1" || return
	if ! digits "${5:-0}" "${6:-0}"; then
		batch_fails "$1" '!EIO malformed request'
		return
	fi
	# (The FIFO first: from the job's first file to JOB.server, the job
	# has no server that an attacher could see die.)
	if ! group_fifo; then
		batch_fails "$1" "!EIO cannot create a job in $jobs"
		return
	fi
	batch_start "g$seq-${rs_spare%% *}" '' '' "$@"
	[ -n "$batch_start_waiter" ] || return 0
	case $rs_spare in
	*' '*) rs_spare=${rs_spare#* } ;;
	*) rs_spare= ;;
	esac
}

# group_fifo makes sure a FIFO made ahead for a batch's jobs is there: the
# first number of rs_spare, which names $host_dir/fifo-PID-gSEQ-N. They
# are made eight at a time: one mkfifo for eight jobs. (The watcher's
# own: the server's, made for batches of one, are counted in its shell.)
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
