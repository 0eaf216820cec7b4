# shellcheck shell=sh disable=SC2034,SC2154
#
# follow.sh: what the requests that follow jobs share: the frame of a
# job's output (send_output), the pace of their looks at it (pace), and
# the watcher of a read (wait_child). Serves no request of its own.

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
