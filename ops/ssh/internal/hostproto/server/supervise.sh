# shellcheck shell=sh disable=SC2034,SC2154
#
# supervise.sh: the waiter's watch over its command: the relay of its
# output, the lease and its timer, the status (supervise), and the save of
# a long output (save_output). Serves no request of its own.

# group sv_: start_job own_pid supervise tell_long tick on_timer
# command_runs child_alive start_relay start_probe relay_dd read_report
# on_relay
#
# The waiter's state, from start_job to the status it writes: set up by
# supervise (see there), kept by its trap (tick) and the relay's rounds.
# Also sv_self, the waiter's pid (own_pid); sv_hand, whether it still
# removes what its server's last requests left (see start_job); sv_stat,
# child_alive's look at a child, which tick keeps as it found it.

# supervise JOB CHILD KEEPER CAP TTL NEWS FIFO [HAND]: the waiter's work
# while job JOB runs, with fd 4 open on the reading end of the job's FIFO
# (the path FIFO; the keeper's and the relay's reports are beside it,
# FIFO.k and FIFO.dd, and go with it). With NEWS, fd 8 is the news FIFO
# of the server that started the job (see run_jobs): once the command
# runs on past its first moments, the waiter says so there, "long", and
# closes it (see tell_long); with HAND, it then removes what the server's
# last requests left (see start_job). It starts
# the relay (see start_relay), waits for CHILD, its child that is the
# command, or without /proc its KEEPER (see keep), and holds the
# job's lease from the start: every TTL/3 seconds (at least 1, at most 60)
# a timer, the waiter's own child, ends, and the lease file is read; a
# lease whose content has not changed (renew changes it) for TTL seconds
# (up to a period more) is a client that is gone, and the command is
# killed (sv_reason "lease"). Then it waits for the relay, which ends with the
# output a moment after the command, unless children the command left
# behind hold the FIFO open: those get GRACE seconds before the relay is
# stopped (they then get SIGPIPE, as they would locally). Sets sv_status
# to the command's exit status, and sv_size to the size of the output
# when the relay knew it (sv_output "all").
#
# The timers and the relay's rounds are handled by the trap on CHLD
# itself (tick), which runs whenever a child ends, in a wait or between
# commands: no end is missed, and the waits return when what they wait for
# ends whatever the trap did. No sleep outlives its job: the timer is
# killed while proven this waiter's child (child_alive).
#
# The status of the command, its own child, is what a wait for it says
# once no trap came during that wait (one that did may have cut it short;
# a wait again for a command reaped meanwhile says its status). dash
# forgets the status of a child it reaped at its next fork (1 command in 6
# in a test of timers restarted by the trap), or at jobs: from the moment
# the command is reaped until its status is read, the trap does nothing
# (tick), and nothing here forks or calls jobs.
supervise() {
	# (sv_self, the waiter's pid, is set: see start_job.)
	sv_job=$1
	sv_fifo=$7
	sv_reason=
	sv_keeper=$3
	sv_cap=$4
	sv_cmd=
	[ -n "$3" ] || sv_cmd=$2
	sv_ended=
	sv_ttl=$5
	sv_news=$6
	sv_hand=$8
	sv_period=$(($5 / 3))
	[ "$sv_period" -ge 1 ] || sv_period=1
	[ "$sv_period" -le 60 ] || sv_period=60
	sv_silent=0
	sv_seen=
	read -r sv_seen <"$1.lease"
	sv_timer=
	sv_cutting=
	sv_relay=
	sv_output=
	sv_capped=
	sv_probe=
	sv_size=0
	trap tick CHLD
	start_relay $((${4:-0} + 1))
	# A command that ends at once (most do) needs no timer: CHILD is
	# watched for a few milliseconds first. (Its /proc entry's cwd goes
	# with the process, while a zombie keeps its pid; child_alive has the
	# last word.)
	if [ -n "$procfs" ]; then
		_sv_spin=0
		while [ "$_sv_spin" -lt 10000 ] && [ -e "/proc/$2/cwd" ]; do
			_sv_spin=$((_sv_spin + 1))
		done
	fi
	if child_alive "$2"; then
		# (The trap off from the fork to "$!": a trap between them would
		# start the relay's next round, whose pid "$!" would then be.
		# What ended meanwhile, tick finds.)
		trap - CHLD
		sleep "$sv_period" 4<&- 8>&- 9<&- &
		sv_timer=$!
		trap tick CHLD
		tick
		tell_long
	fi
	while child_alive "$2"; do
		wait "$2"
	done
	_sv_pid=$sv_cmd
	sv_status=
	if [ -n "$3" ]; then
		job_info "$1"
		_sv_pid=$job_info_pid
		read -r sv_status <"$7.k"
		# (A keeper killed by someone: the command's status is unknown.)
		digits "$sv_status" || sv_status='255 lost'
	else
		sv_hit=yes
		while [ -n "$sv_hit" ]; do
			sv_hit=
			wait "$2"
			sv_status=$?
		done
	fi
	# (What the trap left undone meanwhile.)
	sv_ended=yes
	tick
	# The relay's end is waited for a few dozen times (jobs reaps the
	# children that ended, or kill -0 would find the relay a zombie;
	# tick looks, in case the trap came before that): only a relay held
	# open by the command's children needs the grace timer. Where the
	# command has a session of its own, its process group tells more: once
	# nobody is left in it, none of the command's processes writes (but
	# one that took a session of its own), and the relay only has what the
	# FIFO holds to copy, however long a busy host makes that take: a timer
	# at GRACE would cut it short (losing output, and forking ps for
	# kill_tree). Then the timer waits for a process that left the group
	# only, and longer.
	_sv_spin=0
	while [ -n "$sv_relay" ] && [ "$_sv_spin" -lt 40 ]; do
		jobs >/dev/null 2>&1
		tick
		_sv_spin=$((_sv_spin + 1))
	done
	if [ -n "$sv_relay" ]; then
		_sv_grace=$grace
		if [ -n "$setsid_cmd" ] && [ -n "$_sv_pid" ] && ! signal_group 0 "$_sv_pid"; then
			_sv_grace=5
		fi
		# (Where sleep takes whole seconds only, a second: a fraction
		# would end the grace at once.)
		case $frac_sleep:$_sv_grace in no:*.*) _sv_grace=1 ;; esac
		# (The trap may run between any two of these: it finds no timer
		# until the grace timer is set, and only then its end stops the
		# relay.)
		_sv_old=$sv_timer
		sv_timer=
		kill_child "$_sv_old"
		tell_long
		trap - CHLD
		sleep "$_sv_grace" 4<&- 8>&- 9<&- &
		sv_timer=$!
		sv_cutting=yes
		trap tick CHLD
		tick
		while [ -n "$sv_relay" ]; do
			wait "$sv_relay"
			tick
		done
	fi
	trap - CHLD
	kill_child "$sv_timer"
	sv_timer=
}

# tell_long tells the server that started the job, if it waits for news
# (see supervise), that the job runs on: it then follows it as a long one.
# What this waiter was to remove as it ends (see start_job) goes now, in
# the background: the files of jobs the client has collected go as soon
# as the client says so, whatever the next command.
tell_long() {
	if [ -n "$sv_news" ]; then
		sv_news=
		echo long >&8
		exec 8>&-
	fi
	if [ -n "$sv_hand" ]; then
		sv_hand=
		remove_done bg
	fi
}

# tick, the waiter's trap on CHLD (see supervise), runs on_relay and
# on_timer. A trap runs between any two commands, also in the middle of a
# function supervise is running (child_alive, kill_child): tick keeps the
# variable it shares with them (child_alive's) as it found it. While tick
# works the trap is off: BusyBox's sh loses the return of a function that
# a trap runs when another trap comes before it returns (the function runs
# on past its return: on_timer then took a timer that had not ended for
# one that had, and killed a command for a lease it held), so no trap may
# come during tick's functions. A child that ends meanwhile brings no
# trap: once the trap is back, a look that calls no function finds it,
# and tick runs again. (A trap that comes during the look runs all of
# tick.) The function uses no return either: it may be run from within
# another function a trap runs.
tick() {
	sv_hit=yes
	# (A command reaped, and its status not read yet: see supervise.)
	if [ -n "$sv_ended" ] || [ -z "$sv_cmd" ] || [ -n "$sv_keeper" ] || kill -s 0 "$sv_cmd" 2>/dev/null; then
		trap - CHLD
		_tk_stat=$sv_stat
		# (Without /proc, a child that ended is a zombie, alive to
		# child_alive, until reaped: the relay's end would wait for the
		# next timer. There is a keeper then, see read_host.)
		[ -n "$procfs" ] || jobs >/dev/null 2>&1
		on_relay
		on_timer
		sv_stat=$_tk_stat
		trap tick CHLD
		# What ended while the trap was off: the timer or the relay
		# gone, or a zombie.
		_tk_more=
		[ -n "$procfs" ] || jobs >/dev/null 2>&1
		for _tk_pid in $sv_timer $sv_relay; do
			if [ -n "$procfs" ]; then
				_tk_stat=
				read -r _tk_stat <"/proc/$_tk_pid/stat" 2>/dev/null
				case ${_tk_stat##*) } in '' | Z* | X*) _tk_more=yes ;; esac
			elif ! kill -s 0 "$_tk_pid" 2>/dev/null; then
				_tk_more=yes
			fi
		done
		[ -z "$_tk_more" ] || tick
	fi
}

# on_timer: when the waiter's timer has ended, reads the lease (while the
# command runs) and starts the next timer, or stops the relay (once the
# grace is over: sv_cutting).
on_timer() {
	[ -n "$sv_timer" ] || return 0
	! child_alive "$sv_timer" || return 0
	sv_timer=
	if [ -n "$sv_cutting" ]; then
		# Output stops now: nobody reads the FIFO any more.
		sv_output=stopped
		exec 4<&-
		kill_child "$sv_relay"
		return 0
	fi
	# (The command's pid, once, while the file is surely there.)
	[ -n "$sv_cmd" ] || command_runs || :
	_ot_lease=
	read -r _ot_lease <"$sv_job.lease" 2>/dev/null
	if [ "$_ot_lease" != "$sv_seen" ]; then
		sv_seen=$_ot_lease
		sv_silent=0
	else
		sv_silent=$((sv_silent + sv_period))
		# (A change seen at a tick came at most a period before it: one
		# tick more makes the silence TTL at least.)
		if [ "$sv_silent" -gt "$sv_ttl" ] && [ -z "$sv_reason" ] && [ ! -e "$sv_job.killed" ] && command_runs; then
			sv_reason=lease
			kill_job "$command_runs_pid" "$sv_job"
		fi
	fi
	# The job's empty status (the waiter's claim: nobody else writes it
	# while the waiter lives) is made new: a sweep of an earlier version
	# of this script, which took an old status for an ended job's, leaves
	# it alone.
	[ -s "$sv_job.status" ] || [ ! -e "$sv_job.out" ] || : >"$sv_job.status"
	sleep "$sv_period" 4<&- 8>&- 9<&- &
	sv_timer=$!
}

# command_runs (in on_timer) sets command_runs_pid to the pid of the job's
# command and is true while the command has not ended: it is the waiter's
# child and alive (child_alive); or, without /proc, the keeper runs and has
# not written its status. The pid is kept once read (sv_cmd): the job's
# files may go while it runs (those of a server's private directory, swept
# after that server was killed), and its lease must hold all the same.
command_runs() {
	command_runs_pid=$sv_cmd
	if [ -z "$sv_keeper" ]; then
		[ -z "$sv_ended" ] && child_alive "$sv_cmd"
		return
	fi
	if [ -z "$sv_cmd" ]; then
		job_info "$sv_job"
		sv_cmd=$job_info_pid
	fi
	_cr_status=
	[ ! -e "$sv_fifo.k" ] || read -r _cr_status <"$sv_fifo.k"
	[ -n "$sv_cmd" ] && [ -z "$_cr_status" ] || return 1
	command_runs_pid=$sv_cmd
	child_alive "$sv_keeper"
}

# child_alive PID: true while PID, a child of the waiter (its timer or
# relay), has not ended: kill -0 finds it, and where there is /proc, its
# parent is the waiter (sv_self; a pid reaped a moment ago may already be
# another's) and it is no zombie.
child_alive() {
	# (BusyBox's builtins say 128+N when the trap's signal comes as they
	# run, kill -0 and test included: asked again. A read cut short comes
	# back empty, and is made again: a child's stat stays until the
	# waiter reaps it.)
	_cal_tries=0
	while :; do
		kill -s 0 "$1" 2>/dev/null
		_cal_rc=$?
		_cal_tries=$((_cal_tries + 1))
		case $_cal_rc in 0 | [0-9] | [0-9][0-9] | 1[01][0-9] | 12[0-7]) break ;; esac
		case $_cal_tries in 100) break ;; esac
	done
	case $_cal_rc in 0) ;; *) return 1 ;; esac
	[ -n "$procfs" ] || return 0
	sv_stat=
	_cal_tries=0
	while :; do
		read -r sv_stat <"/proc/$1/stat" 2>/dev/null
		_cal_tries=$((_cal_tries + 1))
		case $sv_stat in '') ;; *) break ;; esac
		case $_cal_tries in 100) break ;; esac
	done
	# (None after all: not proven this waiter's child.)
	sv_stat=${sv_stat##*) }
	case $sv_stat in '' | Z* | X*) return 1 ;; esac
	sv_stat=${sv_stat#* }
	case ${sv_stat%% *} in "$sv_self") return 0 ;; esac
	return 1
}

# kill_child PID kills the waiter's timer PID if it has not ended.
kill_child() {
	[ -n "$1" ] && child_alive "$1" || return 0
	kill -s KILL "$1" 2>/dev/null
	return 0
}

# signal_group SIGNAL PGID sends SIGNAL to the process group PGID; fails
# when the group is gone ("0": whether a process of it is alive). dash's
# kill takes a negative pid after "--" only, BusyBox's refuses "--".
signal_group() {
	kill -s "$1" -- "-$2" 2>/dev/null || kill -s "$1" "-$2" 2>/dev/null
}

# start_relay BYTES starts the relay, the waiter's child that appends
# what the job writes into its FIFO (fd 4) to JOB.out as it comes: with a
# CAP, a dd that copies at most BYTES (by less than a block of 64 KiB);
# without, a cat that copies it all, and the waiter closes its end of the
# FIFO at once. dd copies a block per read (as it comes: a dd told to fill
# its blocks, or to count bytes, would hold back what a command wrote until
# a block is full); its count bounds the bytes, and its report in FIFO.dd
# (POSIX: "FULL+PARTIAL records in") tells, as it ends, the end of the
# output, read fewer times than counted, from a stop at the count (see
# on_relay). Meanwhile the waiter holds the FIFO's reading end: a command
# that writes on is never without a reader between two rounds.
#
# The waiter opens the report (fd 9) before dd writes it: a sweep may
# remove the file's name while the job runs (its server gone, the file
# older than a minute, see sweep_jobs), and the report is read all the
# same.
start_relay() {
	if [ -z "$sv_cap" ]; then
		cat <&4 >>"$sv_job.out" 4<&- 8>&- 9<&- &
		sv_relay=$!
		sv_size=
		exec 4<&-
		return
	fi
	sv_count=$((($1 + 65535) / 65536))
	relay_dd 65536 "$sv_count" "$sv_job.out"
}

# start_probe starts the relay's last round once the output has reached
# the CAP: one byte more, thrown away. It comes if the command writes on
# (its output is cut: sv_capped); the end of the output comes if it had
# written everything already, by less than a block past the CAP, which
# then went all to JOB.out (not cut).
start_probe() {
	sv_probe=yes
	relay_dd 1 1 /dev/null
}

# relay_dd BS COUNT OUT starts the relay's dd: COUNT reads of at most BS
# bytes from the FIFO (fd 4), appended to OUT, its report in FIFO.dd,
# which the waiter holds open on fd 9 (see start_relay).
relay_dd() {
	: >"$sv_fifo.dd"
	command exec 9<"$sv_fifo.dd"
	dd bs="$1" count="$2" <&4 >>"$3" 2>"$sv_fifo.dd" 4<&- 8>&- 9<&- &
	sv_relay=$!
}

# read_report sets read_report_reads to the reads dd made, "" when its
# report says nothing of them, and read_report_bytes to the bytes it copied
# when it says (GNU: "N bytes ... copied"), from fd 9 (see start_relay),
# then from FIFO.dd while it is there. (GNU dd may warn about partial reads
# first. A read cut short by a signal, as BusyBox's is, comes back with
# nothing: the report is read again, up to three times, before it is taken
# as none.)
read_report() {
	read_report_reads=
	_rl_tries=0
	while [ -z "$read_report_reads" ] && [ "$_rl_tries" -lt 3 ]; do
		_rl_tries=$((_rl_tries + 1))
		read_report_bytes=
		if [ "$_rl_tries" = 1 ]; then
			command exec 7<&9 9<&- || continue
		else
			command exec 7<"$sv_fifo.dd" || break
		fi
		while IFS= read -r _rl_line; do
			case $_rl_line in
			[0-9]*+[0-9]*' records in')
				_rl_line=${_rl_line%% *}
				read_report_reads=$((${_rl_line%+*} + ${_rl_line#*+}))
				;;
			[0-9]*' byte'*)
				read_report_bytes=${_rl_line%% *}
				case $read_report_bytes in *[!0-9]*) read_report_bytes= ;; esac
				;;
			esac
		done <&7
		exec 7<&-
	done
}

# on_relay (in tick): once the relay has ended, reads dd's report: at the
# end of the output the output is done (sv_output, and the waiter's end
# of the FIFO closed: a command writing on gets SIGPIPE); at the count
# short of the CAP, the next round starts; at the CAP, the probe (see
# start_probe), and then the output is done. A dd that does not report
# leaves the rest to cat, without a cap. Where dd reports the bytes it
# copied, sv_size adds them up: the size of the whole output, which
# job_result then needs no wc for.
on_relay() {
	[ -n "$sv_relay" ] || return 0
	! child_alive "$sv_relay" || return 0
	sv_relay=
	# (Stopped, or a cat: that was all.)
	if [ -n "$sv_output" ] || [ -z "$sv_cap" ]; then
		sv_output=${sv_output:-all}
		return 0
	fi
	read_report
	if [ -n "$sv_probe" ]; then
		# (No report: the output passed the CAP, cut or not.)
		[ "${read_report_reads:-1}" = 0 ] || sv_capped=yes
		sv_output=all
		exec 4<&-
		return 0
	fi
	if [ -z "$read_report_reads" ]; then
		sv_cap=
		start_relay
		return 0
	fi
	if [ -n "$read_report_bytes" ] && [ -n "$sv_size" ]; then
		sv_size=$((sv_size + read_report_bytes))
	else
		sv_size=
	fi
	if [ "$read_report_reads" -lt "$sv_count" ]; then
		sv_output=all
		exec 4<&-
		return 0
	fi
	# (The output gone meanwhile, its job forgotten by a late cancel: no
	# size, and the relay goes on to its end. An empty $(( )) would end
	# this waiter, and leave the command running without its lease.)
	_or_size=$(wc -c <"$sv_job.out" 2>/dev/null)
	_or_size=${_or_size##*[!0-9]}
	_or_left=$((sv_cap + 1 - ${_or_size:-0}))
	if [ "$_or_left" -gt 0 ]; then
		start_relay "$_or_left"
	else
		start_probe
	fi
}

# output_size JOB sets output_size_bytes to the size of the ended job's
# output as its waiter wrote it (the second line of JOB.status), or to ""
# when it did not know it.
output_size() {
	output_size_bytes=
	{ read -r _ && read -r output_size_bytes; } <"$1.status"
	case $output_size_bytes in *[!0-9]*) output_size_bytes= ;; esac
}

# renew JOB TTL renews the lease of job JOB: a line that differs from
# every one written before (this server, its request, a count), which the
# job's waiter compares with the last it read (see supervise), the TTL first
# (what the sweep reads).
renew() {
	_rn=$((${_rn:-0} + 1))
	echo "$2 $$ $seq $_rn" >"$1.lease"
}

# save_output FILE DEST BYTES LINES moves FILE to DEST when it is longer
# than BYTES bytes or LINES lines (a last line without a newline counts);
# sets save_output_saved to " saved", " unsaved" (the move failed) or ""
# (not needed).
save_output() {
	save_output_saved=
	# (Saved already: FILE is the link to DEST. Moved again, it would
	# take DEST's place, a link to itself.)
	if [ -L "$1" ]; then
		save_output_saved=' saved'
		return
	fi
	_so_counts=$(wc -lc <"$1") || return
	# shellcheck disable=SC2086 # "lines bytes"
	set -- "$1" "$2" "$3" "$4" $_so_counts
	if [ "$5" -eq "$4" ] && [ -n "$(tail -c 1 "$1")" ]; then
		set -- "$1" "$2" "$3" "$4" $(($5 + 1)) "$6"
	fi
	if [ "$6" -gt "$3" ] || [ "$5" -gt "$4" ]; then
		if chmod 600 "$1" && mv -f -- "$1" "$2" 2>/dev/null; then save_output_saved=' saved'; else save_output_saved=' unsaved'; fi
	fi
}
