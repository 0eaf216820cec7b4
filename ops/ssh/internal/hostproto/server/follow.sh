# shellcheck shell=sh disable=SC2034,SC2154
#
# follow.sh: following a running job for run_job and attach_job
# (wait_job, the offset loop that streams its output), and the watchers of
# the control lines while run_job, attach_job and open_file run
# (watch_for_cancel, wait_child, wake).

# wait_job JOB WAITER OFFSET STREAM TTL waits until the job in JOB has
# ended: for the background process WAITER (its waiter, when this server
# started it), or, without one, until its status file appears (the waiter
# belongs to a server that is gone). With STREAM "yes", or from the moment
# the client asks for it ("s"), it sends the job's output from byte OFFSET
# on as it comes (follow_output), and leaves in wait_job_off the byte
# reached. Meanwhile a watcher reads the request stream: "k" kills the job,
# "r" renews its lease (to TTL seconds), "s" starts the stream, "d" stops
# the wait (the client follows the job elsewhere: this server is wanted for
# other requests). At the end of the stream (the client is gone) the job
# goes on, and the watcher ends this server, whose channel is gone. Returns
# 1 when the job will never have a status (job_lost: the host rebooted, or
# someone killed its waiter), 2 when it never started (unstarted), 3 when
# the wait stopped for "d" with the job still running.
#
# Until the stream starts, a job this server started costs nothing while
# it runs: the wait for its waiter wakes only when it ends, or when the
# watcher signals a "s" or a "d" (see wake). Once it streams, the output
# is looked at as attach_jobs looks at several jobs' (see pace; every
# second where sleep takes whole seconds only), from the offset reached.
wait_job() {
	_wj_job=$1
	_wj_waiter=$2
	wait_job_off=$3
	_wj_stream=$4
	watch_for_cancel "$_wj_job" "$5" "$_wj_waiter" &
	_wj_watcher=$!
	_wj_result=0
	_wj_looks=0
	_wj_idle=0
	# (What the last pause took, in milliseconds: see pace.)
	_wj_ms=0
	_wj_bare=0
	_wj_woke=
	while :; do
		# (The watcher signals this server until it sees that its mark
		# was seen, see wake.)
		if [ -z "$_wj_woke" ] && { [ -e "$private/stream.$seq" ] || [ -e "$private/detach.$seq" ]; }; then
			command : 2>/dev/null >"$private/woke.$seq"
			_wj_woke=yes
		fi
		if [ -e "$private/detach.$seq" ]; then
			[ -s "$_wj_job.status" ] || _wj_result=3
			break
		fi
		[ ! -e "$private/stream.$seq" ] || _wj_stream=yes
		if [ -n "$_wj_waiter" ] && [ -z "$_wj_stream" ] && [ -n "$sig_usr1" ]; then
			# (The watcher's signal ends the wait; anywhere else it is
			# ignored: a read it cut short would end this server.)
			trap : USR1
			wait "$_wj_waiter"
			_wj_waited=$?
			trap '' USR1
			# (Cut short: the waiter still runs, its pid its own until
			# this wait reaps it.)
			if [ "$_wj_waited" -gt 128 ] && kill -s 0 "$_wj_waiter" 2>/dev/null; then continue; fi
			# (A waiter killed by someone wrote no status.)
			[ -s "$_wj_job.status" ] || _wj_result=1
			break
		fi
		# Which way the job went is seen before its size: the size of an
		# ended job is final.
		_wj_ended=
		[ ! -s "$_wj_job.status" ] || _wj_ended=yes
		_wj_news=
		if [ -n "$_wj_stream" ]; then
			follow_output "$_wj_job" "$wait_job_off"
			wait_job_off=$follow_output_off
			_wj_news=$follow_output_news
		fi
		[ -z "$_wj_ended" ] || break
		if [ -n "$_wj_waiter" ]; then
			# (Ended, or killed by someone: it is this server's child,
			# reaped by the wait for any other.)
			if ! kill -s 0 "$_wj_waiter" 2>/dev/null; then
				[ -s "$_wj_job.status" ] || _wj_result=1
				break
			fi
		else
			# (Gone: forgotten or swept meanwhile.)
			if [ ! -e "$_wj_job.out" ]; then
				_wj_result=1
				break
			fi
			job_info "$_wj_job"
			if job_lost "$_wj_job"; then
				_wj_result=1
				break
			fi
			# (No waiter for a moment while the job starts: no server
			# either for about 5 s is one that died.)
			[ -n "$job_info_server" ] || _wj_bare=$((_wj_bare + _wj_ms))
			_wj_waited=
			[ "$_wj_bare" -lt 5000 ] || _wj_waited=waited
			if [ -z "$job_info_waiter" ] && unstarted "$_wj_job" "$_wj_waited"; then
				_wj_result=2
				break
			fi
		fi
		# (The first look comes soon: a job that has just started, or
		# ends.)
		pace "$_wj_news" "$_wj_idle"
		_wj_idle=$pace_idle
		_wj_nap=$pace_nap
		_wj_ms=$pace_ms
		if [ "$_wj_looks" = 0 ]; then
			_wj_nap=0.01
			_wj_ms=10
		fi
		_wj_looks=$((_wj_looks + 1))
		if [ "$frac_sleep" = no ]; then
			_wj_nap=1
			_wj_ms=1000
		fi
		if [ -n "$_wj_waiter" ]; then
			# The pause is a wait for a sleep, which the end of any other
			# child of this server cuts short (the trap on CHLD): the
			# job's waiter ending is seen at once. (Should the waiter end
			# before the wait begins, or CHLD be ignored for good, the
			# pause is as long as the sleep.)
			trap : CHLD
			sleep "$_wj_nap" &
			wait "$!"
			trap - CHLD
		else
			sleep "$_wj_nap"
		fi
	done
	# The watcher goes, unless it is killing the job: cut short, it would
	# leave the job's processes stopped for good (see kill_job). Of the
	# two, whoever marks the request settled first decides; the watcher
	# ends by itself once its kill is done.
	set -C
	if { command : >"$private/settled.$seq"; } 2>/dev/null; then
		kill -s KILL "$_wj_watcher" 2>/dev/null
	fi
	set +C
	wait "$_wj_watcher" 2>/dev/null
	# (A watcher that signals this server until it sees that its mark was
	# seen, see wake: it stops.)
	if [ -z "$_wj_woke" ] && { [ -e "$private/stream.$seq" ] || [ -e "$private/detach.$seq" ]; }; then
		command : 2>/dev/null >"$private/woke.$seq"
	fi
	return "$_wj_result"
}

# pace NEWS IDLE sets pace_nap to the pause before the next look of a
# loop that follows jobs' output (wait_job, attach_jobs): 50 ms, 200 ms
# after 40 looks without NEWS (about two seconds), 500 ms after 180
# (about half a minute); pace_ms is the same in milliseconds. IDLE is the
# count of looks without news so far (0 as the loop starts), pace_idle
# the count with this one, for the loop's next call.
pace() {
	if [ -n "$1" ]; then
		pace_idle=0
	else
		pace_idle=$(($2 + 1))
	fi
	if [ "$pace_idle" -le 40 ]; then
		pace_nap=0.05
		pace_ms=50
	elif [ "$pace_idle" -le 180 ]; then
		pace_nap=0.2
		pace_ms=200
	else
		pace_nap=0.5
		pace_ms=500
	fi
}

# follow_output JOB OFFSET sends the output of the job in JOB from byte
# OFFSET on, up to its size now, and sets follow_output_off to the byte
# reached; follow_output_news is "yes" when there was any.
follow_output() {
	follow_output_news=
	follow_output_off=$2
	_fo_size=$(LC_ALL=C ls -lnL -- "$1.out" 2>/dev/null)
	read -r _ _ _ _ _fo_size _ <<EOT
$_fo_size
EOT
	digits "$_fo_size" || return 0
	[ "$_fo_size" -gt "$2" ] || return 0
	tail -c +$(($2 + 1)) "$1.out" | head -c $((_fo_size - $2))
	follow_output_off=$_fo_size
	follow_output_news=yes
}

# wait_child PID waits for the background process PID (a read's cat) while
# a watcher reads the request stream: "k" (read_control) or its end kills
# it. Sets wait_child_status.
wait_child() {
	(
		while read_control; do
			[ "$ctl_line" = k ] && break
		done
		kill -s KILL "$1" 2>/dev/null
	) &
	_wc_watcher=$!
	wait "$1"
	wait_child_status=$?
	kill -s KILL "$_wc_watcher" 2>/dev/null
	wait "$_wc_watcher" 2>/dev/null
}

# watch_for_cancel JOB TTL WAITER: the watcher of wait_job. It honours
# "k", "r" (to TTL seconds), "s" and "d" (read_control), bare or naming
# JOB. WAITER, the waiter this server started, if any, vouches for the
# job's pid where nothing else can (see job_process).
watch_for_cancel() {
	while read_control; do
		[ -z "$ctl_id" ] || [ "$ctl_id" = "${1##*/}" ] || continue
		case $ctl in
		k)
			# (A job whose process cannot be proven its own is not
			# killed: the watcher goes on, the job ends by itself.)
			if job_process "$1" "$3"; then
				# (See wait_job: a job that ended meanwhile is not
				# killed.)
				set -C
				{ command : >"$private/settled.$seq"; } 2>/dev/null || return
				set +C
				kill_job "$job_process_pid" "$1"
				return
			fi
			;;
		r) renew "$1" "$2" ;;
		s) wake stream ;;
		d) wake detach ;;
		esac
	done
	kill -s TERM $$
}

# wake WHAT, in wait_job's watcher, marks what the client wants of the
# wait ("stream", "detach"), and signals the server (USR1) until it has
# seen the mark: a signal that came before its wait began did not end it.
# Once it has ("woke"), a mark is seen without one ("k" is still heard
# meanwhile).
wake() {
	command : 2>/dev/null >"$private/$1.$seq"
	# (A server that cannot catch it looks for the mark instead.)
	[ -n "$sig_usr1" ] && [ ! -e "$private/woke.$seq" ] || return 0
	# (Until the mark is gone too: the request's files go with one rm,
	# the mark first, see remove_done.)
	(
		while [ -e "$private/$1.$seq" ] && [ ! -e "$private/woke.$seq" ] && kill -s USR1 $$; do
			sleep 0.1 2>/dev/null || sleep 1
		done
	) 3<&- &
}
