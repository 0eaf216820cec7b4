# shellcheck shell=sh disable=SC2034,SC2154
#
# follow.sh: following jobs' output: the frame of a job's output
# (send_output), run_jobs' looks at its streams and their ticker
# (batch_look, batch_tick), the pace of the looks (pace, as attach_jobs'),
# stopping an answer's watcher (stop_watcher, watcher_kills), and the
# watcher of a read (wait_child). Serves no request of its own.

# send_output ID OFFSET SIZE [MAX] sends the output of job ID, open on
# fd 7, from byte OFFSET up to byte SIZE, MAX bytes at most (empty: all
# of it), as a frame: the line "D ID N", then the N bytes. Sets
# send_output_off to the byte reached. It is the one way output goes out
# (run_jobs and attach_jobs): the client reads frames of several jobs on
# one stream, and the N bytes, whatever they hold, stay in step.
send_output() {
	send_output_off=$2
	[ "$3" -gt "$2" ] || return 0
	_sdo_n=$(($3 - $2))
	[ -z "$4" ] || [ "$_sdo_n" -le "$4" ] || _sdo_n=$4
	echo "D $1 $_sdo_n"
	if [ "$2" = 0 ]; then
		head -c "$_sdo_n" <&7
	else
		tail -c +$(($2 + 1)) <&7 | head -c "$_sdo_n"
	fi
	send_output_off=$(($2 + _sdo_n))
}

# batch_look sends what is new of the output of the answer's jobs that
# stream, with one ls for their sizes (at once again while a job has more
# than a frame waiting); batch_look_news is "yes" when there was any. A
# job whose waiter is gone without a status (killed: it will never say
# "x") is answered for (batch_end). False when every job of the answer
# has its verdict.
batch_look() {
	# (A waiter of this server's, killed, is a zombie, alive to job_lost,
	# until the shell reaps it: jobs does, with no fork.)
	[ -z "$rs_own" ] || jobs >/dev/null 2>&1
	_bl_full=yes
	_bl_news=
	while [ -n "$_bl_full" ]; do
		_bl_full=
		_bl_outs=
		_bl_open=
		for _bl_state in "$rs_state".*; do
			_bl_id=${_bl_state##*.}
			case $rs_done in *" $_bl_id "*) continue ;; esac
			batch_state "$_bl_state" || continue
			# (A batch of one's waiter, gone: its "x" may never come, as
			# when it had news nobody read.)
			if [ -n "$rs_own" ] && ! kill -s 0 "$rs_own" 2>/dev/null; then
				batch_end "$_bl_id" w
				continue
			fi
			if [ ! -s "$jobs/$_bl_id.status" ]; then
				job_info "$jobs/$_bl_id"
				if job_lost "$jobs/$_bl_id"; then
					batch_end "$_bl_id" w
					continue
				fi
			fi
			_bl_open=yes
			batch_off "$_bl_id"
			[ -z "$batch_off_at" ] || _bl_outs="$_bl_outs $_bl_id.out"
		done
		[ -n "$_bl_open" ] || return 1
		[ -n "$_bl_outs" ] || break
		# shellcheck disable=SC2086 # job IDs are hex
		_bl_sizes=$(cd "$jobs" && LC_ALL=C ls -lnL -- $_bl_outs 2>/dev/null)
		while read -r _ _ _ _ _bl_size _bl_rest; do
			_bl_id=${_bl_rest##* }
			_bl_id=${_bl_id%.out}
			digits "$_bl_size" || continue
			batch_off "$_bl_id"
			[ "$_bl_size" -gt "${batch_off_at:-0}" ] || continue
			command exec 7<"$jobs/$_bl_id.out" || continue
			send_output "$_bl_id" "$batch_off_at" "$_bl_size" 1048576
			exec 7<&-
			[ "$send_output_off" = "$_bl_size" ] || _bl_full=yes
			batch_set_off "$_bl_id" "$send_output_off"
			_bl_news=yes
		done <<EOF
$_bl_sizes
EOF
	done
	batch_look_news=$_bl_news
}

# batch_tick starts the ticker anew (the one before, if any, is killed):
# a background loop that writes "t N K" to the events FIFO at pace's
# intervals, counted from its start (K, its Kth tick; N, rs_ticks, names
# the ticker: only the last one's ticks count). One fork a tick, its
# sleep's. Its pace slows as a look without news would (see pace): the
# answer starts it anew when news comes once it has slowed. It stops with
# the answer, or once its server or the events FIFO is gone.
batch_tick() {
	[ -z "$rs_ticker" ] || kill -s KILL "$rs_ticker" 2>/dev/null
	rs_ticks=$((rs_ticks + 1))
	{
		_bt_k=0
		while kill -s 0 $$ && [ -p "$events" ]; do
			_bt_k=$((_bt_k + 1))
			pace '' "$_bt_k"
			_bt_nap=$pace_nap
			[ "$frac_sleep" = yes ] || _bt_nap=1
			sleep "$_bt_nap" 6>&-
			echo "t $rs_ticks $_bt_k" >&6
		done
	} </dev/null >/dev/null 2>&1 3<&- &
	rs_ticker=$!
}

# stop_watcher PID MARK stops the watcher PID of an answer that ends
# (run_jobs' batch of one, attach_jobs), but not in the middle of a kill:
# cut short, a kill would leave the job's processes stopped for good (see
# kill_job). The answer marks MARK.ending, the watcher MARK.killing while
# it kills (watcher_kills); each writes its own mark, then looks at the
# other's. (At most about 10 s: a watcher killed by someone leaves its
# mark.)
stop_watcher() {
	: >"$2.ending"
	_stw_tries=0
	while [ -e "$2.killing" ] && [ "$_stw_tries" -lt 200 ]; do
		_stw_tries=$((_stw_tries + 1))
		sleep 0.05 2>/dev/null || sleep 1
	done
	kill -s KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# watcher_kills MARK OWN ID..., in a watcher, kills the jobs ID
# (kill_running, OWN as there) unless its answer is ending (see
# stop_watcher).
watcher_kills() {
	: >"$1.killing"
	if [ ! -e "$1.ending" ]; then
		_wk_mark=$1
		_wk_own=$2
		shift 2
		for _wk_id; do kill_running "$_wk_id" "$_wk_own"; done
		set -- "$_wk_mark"
	fi
	rm -f "$1.killing"
}

# pace NEWS IDLE sets pace_nap to the pause before the next look of a
# loop that follows jobs' output (run_jobs' streams, attach_jobs): 50 ms, 200 ms
# after 40 looks without NEWS (about two seconds), 500 ms after 180
# (about half a minute). IDLE is the
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
	elif [ "$pace_idle" -le 180 ]; then
		pace_nap=0.2
	else
		pace_nap=0.5
	fi
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
