# shellcheck shell=sh disable=SC2034,SC2154
#
# serve.sh: the server's start (serve), its request loop and dispatch
# (serve_request: $requests, the names a request may give), the answer's end
# (finish), the file functions' wrapper (call) and the fence (fence_start,
# fence_in, fence_out). Serves: serve, and every request's framing.
#
# The command server: the POSIX sh program pi-remote runs on a remote host,
# one per SSH session channel, in modules (this one and the other .sh files
# here). server.go sends them as one text (hostproto.Program: the modules in
# the order of their names, comment lines and indentation dropped) after the
# bootstrap command, followed by a call of serve; from then on it sends one
# request per line:
#
#   <marker><function> <word>...
#
# The marker is a random token of this server. Words are quoted by
# internal/shellquote.QuoteLine, which writes a newline inside a word as
# "$nl", so a request is always one line, read in linear time. Lines that do
# not start with the marker are ignored: that is what a late cancel line
# (below) becomes once its job has ended.
#
# The answer to a request is what its function prints on stdout, followed by
# <marker><status> and a newline. The marker cannot occur in output (it is
# random), so everything before it belongs to the request. Every request
# is answered: one that names no function of $requests, or whose words the
# shell cannot parse, gets the status "!PROTOCOL unknown request" or
# "!PROTOCOL malformed request" (the client then closes the connection: it
# and this server no longer agree).
#
# run_jobs starts commands, one (a batch of one) or a batch of them, and
# answers for them in frames; attach_jobs follows commands started before,
# in the same frames (see there).
#
# Commands (run_jobs) and reads (open_file) run in the background while a
# watcher reads the request stream for control lines (see read_control):
# "k" kills them; "r" renews a command's lease; "s" streams its output from
# then on; "d" lets go of it. At the end of the stream (the client is gone)
# a read is killed, and a command goes on, to be attached to again. Nothing
# else is read while they run: the client sends its next request only
# after the marker.
#
# Functions are POSIX (no "local"): every variable is global, and its
# name says whose it is (TestVariablesKeepToTheirOwners checks it):
#
#   _xx_name       private: one function's alone (xx, most often its
#                  initials; a subshell or background block of it counts
#                  as that function). "_" alone is read's throwaway.
#   FUNCTION_name  a result FUNCTION leaves for its caller (job_info_pid,
#                  gone_status): only FUNCTION sets it.
#   GROUP_name     shared state of functions that work together (sv_ the
#                  waiter's, rj_ what requests leave to remove, rs_ a
#                  batch's, wr_ a write's, jw_ remove_files'): only the
#                  functions its comment
#                  "# group GROUP_: FUNCTION..." lists use it.
#   anything else  the server's own: set as it starts (serve, read_host,
#                  user_scope) or kept as it runs (seq, fifos, events,
#                  answered, read_control's ctl...).
#
# Anything else one function gives another is an argument. The file
# functions run in a subshell (see call), under the same rule.
#
# The server's own processes are stopped with SIGKILL: a child forked a
# moment ago may still run the server's TERM trap, which would wait for a
# blocking read to end.

nl='
'

# requests: the functions a client may name in a request, as NAME for one
# that ends its own answer (finish), as call:NAME for one the client sends
# as "call NAME WORD..." (the file functions: call ends their answer).
# Nothing else is run (see serve_request).
requests='run_jobs attach_jobs read_head open_file
call:list_jobs call:stop_job call:cancel_job call:forget call:probe_host
call:stat_path call:list_dir call:resolve_path call:make_dirs
call:create_temp call:write_inline call:commit_temp call:settle_write
call:diagnose_write call:receive_temp call:remove_temp'

# acts: the requests of $requests that change something, fenced as a whole
# (see fence_in). (run_jobs fences its jobs' starts.)
acts='call:stop_job call:cancel_job call:forget call:make_dirs call:create_temp
call:write_inline call:commit_temp call:settle_write call:remove_temp'

# The files a job may have in the jobs directory, JOB.<suffix>, in the
# order they are removed: its output first (the job is gone for
# attach_jobs), then its lease (no longer running for job_running). A job
# has four: out, lease, status (empty while it runs) and server (who
# started it and its pids, see job_info); killed when stop_job killed it,
# script for a long script (see exec_command). (pid, size, saved, waiter,
# label, started and relay.pid: jobs of earlier versions of this script.)
job_files='out lease status pid waiter server label lease.watched lease.check size killed saved script fifo fifo.left started relay.pid'
# make_job_words sets job_words, the same as words for eval in
# remove_files: "$jobs/$jw_id.SUFFIX" for each, jw_id being the job ID
# remove_files has come to (a job's 17 files join the list in one step,
# not one step each: every step copies the whole list, and a request
# forgetting 16 jobs took dash 22 ms that way). Run once, as the program
# is read.
#
# group jw_: make_job_words remove_files
make_job_words() {
	job_words=
	for _mjw_suffix in $job_files; do job_words="$job_words \"\$jobs/\$jw_id.$_mjw_suffix\""; done
}
make_job_words

# serve MARKER GRACE SETSID SUFFIX [CLIENT EPOCH]: the server's main loop.
# GRACE is how long (seconds) a command's background children may go on
# writing output after the command exits; SETSID (yes/no) says whether
# commands get their own session when the host has setsid; SUFFIX (hex)
# names the private directory. CLIENT (hex) names the client, EPOCH
# (a number) its connection: see fence_start.
serve() {
	marker=$1
	grace=$2
	setsid_cmd=
	if [ "$3" = yes ] && command -v setsid >/dev/null 2>&1; then
		setsid_cmd=setsid
	fi
	case $4 in '' | *[!0-9a-f]*)
		printf '%sFAIL the private directory suffix is not hex\n' "$marker"
		exit 1
		;;
	esac
	# (A TMPDIR, or a cache directory, that is not absolute is not used:
	# a path starting with "-" would be an option to every program.)
	tmp=${TMPDIR:-/tmp}
	case $tmp in /*) ;; *) tmp=/tmp ;; esac
	read_host
	# One id for both numbers ("uid=N(name) gid=N(name) ...", POSIX), and
	# in the same process (no fork of its own) ls of the jobs directory and
	# its parent (see use_jobs_dir), made first when missing (once: two
	# forks saved on every later start).
	_s_cache=${XDG_CACHE_HOME:-$HOME/.cache}
	case $_s_cache in /*) ;; *) _s_cache=$HOME/.cache ;; esac
	jobs=$_s_cache/pi-remote/jobs
	case $jobs in /*) ;; *) jobs= ;; esac
	if [ -n "$jobs" ] && ! [ -d "$jobs" ]; then
		(umask 077 && mkdir -p -- "$jobs") 2>/dev/null
	fi
	_s_ls=$(
		id
		if [ -n "$jobs" ] && [ ! -L "$jobs" ] && [ ! -L "${jobs%/*}" ] && [ -O "$jobs" ] && [ -O "${jobs%/*}" ]; then
			LC_ALL=C ls -ldn -- "${jobs%/*}" "$jobs" 2>/dev/null
		fi
	)
	uid_gid=${_s_ls%%"$nl"*}
	_s_ls=${_s_ls#"$uid_gid"}
	_s_gid=${uid_gid#* gid=}
	uid_gid=${uid_gid#uid=}
	uid=${uid_gid%%[!0-9]*}
	uid_gid=$uid:${_s_gid%%[!0-9]*}
	sweep_private_dirs
	private=$tmp/.pi-remote.$$.$4
	if ! (umask 077 && mkdir -- "$private") 2>/dev/null; then
		printf '%sFAIL cannot create %s\n' "$marker" "$private"
		exit 1
	fi
	# Which host made it: another host sharing TMPDIR leaves it alone.
	printf '%s\n' "$host_id" >"$private/host"
	# Jobs outlive this server (and its connection): their directories are
	# the user's own, outside the private directory. A jobs directory that
	# is not proven the user's alone (use_jobs_dir) is not used: another
	# user could plant jobs there, or swap their files.
	if ! use_jobs_dir "$_s_ls"; then
		jobs=$private/jobs
		mkdir "$jobs"
	fi
	# This host's own directory in there, for this boot: the FIFOs made
	# ahead for jobs, and the marks of the sweeps (see sweep_jobs). Made
	# once a boot.
	host_dir=$jobs/.host.$boot_id.$host_name
	[ -d "$host_dir" ] || mkdir -m 700 -- "$host_dir" 2>/dev/null
	user_scope
	fence=
	if [ -n "$5" ]; then
		if ! hex "$5" || ! digits "$6"; then
			rm -rf -- "$private"
			printf '%sFAIL the client or connection is malformed\n' "$marker"
			exit 1
		fi
		fence=$host_dir/client.$5
		epoch=$6
		if ! fence_start; then
			# (Its exit trap is not set yet.)
			rm -rf -- "$private"
			printf '%sFAIL a newer connection of this client took over\n' "$marker"
			exit 1
		fi
	fi
	sweep_jobs </dev/null >/dev/null 2>&1 &
	# run_jobs' FIFO, once made (held open on fd 6).
	events=
	# The numbers of the FIFOs made ahead for batches of one (see
	# run_jobs) and not used yet.
	fifos=
	# What the requests answered left (see remove_done); the answer in
	# progress, if any (see leave_answer).
	rj_done_fifos=
	rj_done_seqs=
	rj_done_ids=
	rs_state=
	trap 'leave_answer; remove_fifos; stop_private_jobs; remove_private "$private"' EXIT
	trap 'exit 129' HUP
	trap 'exit 141' PIPE
	trap 'exit 143' TERM
	# Whether sleep takes a fraction of a second (the pauses of the
	# streams, a job's grace, see supervise): "yes" or "no".
	frac_sleep=no
	! sleep 0.001 2>/dev/null || frac_sleep=yes
	# bash sources ~/.bashrc when it thinks sshd started it as a top-level
	# shell (SSH_CLIENT set, SHLVL below 2 after its own increment).
	# Commands here are not top-level: give them the level a login shell
	# would.
	if ! [ "${SHLVL:-0}" -ge 1 ] 2>/dev/null; then
		SHLVL=1
		export SHLVL
	fi
	seq=0
	fifo_n=0
	sync_file=
	if sync "$private" 2>"$private/err" && ! [ -s "$private/err" ]; then
		sync_file=yes
	fi
	# Requests arrive on fd 3. Background processes of a non-interactive
	# shell get /dev/null as stdin whatever it was, so the job watcher
	# could not read fd 0; and nothing the server starts should.
	exec 3<&0 </dev/null
	pgid=$$
	signal_group 0 "$$" || pgid=0
	_s_jobs=durable
	[ "$jobs" != "$private/jobs" ] || _s_jobs=private
	printf '%sREADY %s %s %s\n' "$marker" "$pgid" "${setsid_cmd:--}" "$_s_jobs"
	# From here on the shell's complaints are noise: dash, for one, reports
	# every helper it kills ("Killed").
	exec 2>/dev/null
	while IFS= read -r request <&3; do
		case $request in
		"$marker"*) serve_request "${request#"$marker"}" ;;
		esac
	done
	exit 0
}

# fence_start, as a server starts for connection EPOCH of its client
# (serve's CLIENT), fences off the client's earlier connections: a
# connection the client declared dead may still deliver requests that were
# on their way (the kernel sends what it holds once a partition heals, and
# sshd never saw the connection end), and such a request must not act
# after the client settled or retried it on the new connection. The
# client's directory $fence holds epoch.N for each connection N that
# started a server, and busy.N.PID for each of its servers (see fence_in).
# A server of an epoch that is not the newest exits at once. Every other
# marks its epoch, then waits for the servers of earlier epochs that are
# busy with an act to finish it (at most about 5 s in all: an act is a
# rename, a mkdir, a fork; past that, the act may still land). From then
# on every server of an earlier epoch sees the newer one before it acts
# (fence_in), and exits. Each writes its own mark before it reads the
# other's, so one of them sees both. (A server's own mark is made by its
# first act, once its exit trap would remove it.)
fence_start() {
	[ -d "$fence" ] || mkdir -m 700 -- "$fence" 2>/dev/null
	[ -d "$fence" ] && newest_epoch || return 1
	[ -e "$fence/epoch.$epoch" ] || : >"$fence/epoch.$epoch" || return 1
	_fs_tries=0
	for _fs_busy in "$fence"/busy.*; do
		_fs_pid=${_fs_busy##*/busy.}
		_fs_epoch=${_fs_pid%%.*}
		_fs_pid=${_fs_pid#*.}
		digits "$_fs_epoch" "$_fs_pid" || continue
		[ "$_fs_epoch" -lt "$epoch" ] || continue
		while [ "$_fs_tries" -lt 100 ]; do
			_fs_state=
			read -r _fs_state <"$_fs_busy" 2>/dev/null
			if [ "$_fs_state" != b ] || ! pid_alive "$_fs_pid"; then break; fi
			sleep 0.05 2>/dev/null || sleep 1
			_fs_tries=$((_fs_tries + 1))
		done
	done
	return 0
}

# newest_epoch: true unless the client has a connection newer than this
# server's (an epoch.N in $fence with N above $epoch).
newest_epoch() {
	for _ne_file in "$fence"/epoch.*; do
		_ne_n=${_ne_file##*/epoch.}
		digits "$_ne_n" || continue
		[ "$_ne_n" -le "$epoch" ] || return 1
	done
}

# fence_in marks this server busy with an act (a write's commit, a job's
# start...) and makes sure no newer connection of its client has started
# (see fence_start); false if one has: this server belongs to a
# connection the client gave up on, and must exit without acting.
# fence_out marks the act done. Without a client (a client of an earlier
# version) both do nothing.
fence_in() {
	[ -n "$fence" ] || return 0
	printf b 1<>"$fence/busy.$epoch.$$"
	newest_epoch && return 0
	printf i 1<>"$fence/busy.$epoch.$$"
	return 1
}

fence_out() {
	[ -z "$fence" ] || [ ! -e "$fence/busy.$epoch.$$" ] || printf i 1<>"$fence/busy.$epoch.$$"
}

# serve_request LINE runs a request (its line without the marker) when it
# names a function of $requests, and otherwise answers "!PROTOCOL unknown
# request"; a request whose words the shell cannot parse runs nothing and
# is answered "!PROTOCOL malformed request" (eval under "command" returns
# from a syntax error instead of ending the shell).
serve_request() {
	_sr_name=${1%%[[:space:]]*}
	if [ "$_sr_name" = call ]; then
		_sr_name=${1#call[[:space:]]}
		_sr_name=call:${_sr_name%%[[:space:]]*}
	fi
	case $_sr_name in
	'' | call: | *[!a-z_:]*) ;;
	*)
		case " $requests " in
		*[[:space:]]"$_sr_name"[[:space:]]*)
			answered=
			# (The requests that act are fenced, see fence_in: those of
			# $acts as a whole, the jobs' starts in run_jobs and add_job.
			# The others only read, or wait for data, as receive_temp,
			# which only fills a temporary file: an old connection's
			# would hold the fence up for nothing.)
			case " $acts " in *[[:space:]]"$_sr_name"[[:space:]]*) fence_in || exit 0 ;; esac
			command eval "$1"
			fence_out
			[ -n "$answered" ] || finish '!PROTOCOL malformed request'
			return
			;;
		esac
		;;
	esac
	finish '!PROTOCOL unknown request'
}

# read_control reads the next line of the request stream (fd 3) for a
# watcher: the control lines, one grammar for every request that reads the
# stream while it runs (run_jobs, attach_jobs, open_file). A letter
# means the same wherever it comes; ID, where a line takes one, names one
# job of the answer, and without it the line is about every job of the
# answer:
#
#   k [ID]  kill the job (open_file: the read)
#   d [ID]  let go of the job: it runs on, to be followed elsewhere
#           (run_jobs: "X ID !DETACHED"; attach_jobs, with no ID: the
#           answer ends "!DETACHED")
#   s [ID]  stream the job's output from now on
#   r       renew the lease of every job of the answer
#   e       end the answer (run_jobs, once each job has its verdict)
#   a WORDS add a job to the answer (attach_jobs, see attach_watcher)
#
# A request honours the lines it needs (docs/host-protocol.md, section 5)
# and ignores others. A line of none of these forms is ignored, as each
# watcher ignored it when it compared whole lines: a trailing blank or
# word, an ID that is not hex, an ID after "r" or "e" (so a stray "k " is
# no kill of every job, and "k x/ID" never reaches job ID). Sets ctl (the
# first word: the letter, or all of a line that has no blank; empty for a
# line ignored), ctl_id (the ID), ctl_args (all after the letter and its
# blank) and ctl_line (the line). False at the end of the stream. (No
# fork: read is a builtin, and takes a pipe a byte at a time, never past
# its line.)
read_control() {
	IFS= read -r ctl_line <&3 || return
	ctl=${ctl_line%% *}
	ctl_args=
	ctl_id=
	case $ctl_line in *' '*)
		ctl_args=${ctl_line#* }
		ctl_id=${ctl_args%% *}
		# (Only k, d and s take an ID; a takes its words.)
		if [ "$ctl" = k ] || [ "$ctl" = d ] || [ "$ctl" = s ]; then
			[ "$ctl_id" = "$ctl_args" ] && hex "$ctl_id" || ctl=
		elif [ "$ctl" != a ]; then
			ctl=
		fi
		;;
	esac
}

# finish STATUS ends the answer to a request (and says it has one, see
# serve_request).
finish() {
	answered=yes
	printf '%s%s\n' "$marker" "$1"
}

# call FUNCTION WORD...: runs one of the file functions below in a
# subshell with the C locale (so error messages can be recognised) and its
# stray stderr discarded; the function prints its own status line ("OK ..."
# or "E CODE message") and payload.
call() {
	(
		LC_ALL=C
		export LC_ALL
		"$@"
	) 2>/dev/null
	finish "$?"
}

# read_host sets host_name (the host's name, a word: "-" when unknown)
# and boot_id (the id of its current boot, "-" when unknown), read without
# a fork where /proc has them; host_id (both, as servers and jobs record
# them, see host_of); procfs (yes when /proc shows this process: pids
# can be proven there, see job_process); and keeper (yes when a job's
# command needs a keeper, see keep: without /proc, and in bash, whose wait
# interrupted by a trap on CHLD loses the child's status).
read_host() {
	host_name=
	read -r host_name </proc/sys/kernel/hostname 2>/dev/null || host_name=$(uname -n)
	case $host_name in *[!A-Za-z0-9._-]*) host_name=$(printf %s "$host_name" | tr -c A-Za-z0-9._- _) ;; esac
	host_name=${host_name:--}
	boot_id=
	read -r boot_id </proc/sys/kernel/random/boot_id 2>/dev/null
	case $boot_id in '' | *[!0-9a-f-]*) boot_id=- ;; esac
	host_id="$host_name $boot_id"
	procfs=
	[ ! -r "/proc/$$/stat" ] || procfs=yes
	keeper=
	[ -n "$procfs" ] && [ -z "${BASH_VERSION-}" ] || keeper=yes
}

# host_of NAME BOOT sets host_of_where to who may judge the pids of a server
# or job of the host NAME in its boot BOOT (as recorded; NAME empty: by an
# earlier version, taken as this host's): "here" (this host, this boot),
# "gone" (this host before it rebooted: none of them is left) or "elsewhere"
# (another host sharing the directory, as hosts sharing an NFS home do, or
# one that cannot be told apart: its pids mean nothing here).
host_of() {
	if [ -z "$1" ] || [ "$1 $2" = "$host_id" ]; then
		host_of_where=here
	elif [ "$1" = "$host_name" ] && [ "$2" != - ] && [ "$boot_id" != - ]; then
		host_of_where=gone
	else
		host_of_where=elsewhere
	fi
}

# use_jobs_dir LS: true when $jobs may hold this user's jobs: it and its
# parent (where nothing but it is made) are directories of this user's,
# not symbolic links (tested before LS was made), that neither the group
# nor others may write to, with no ACL. LS is ls -ldn of both. Nobody
# else may read or search $jobs either (the jobs' files are made under
# the login's umask): one made so by hand, or by another program, is made
# 0700. (Nobody but the user can replace it meanwhile: its parent is
# the user's, and others may not write to it.)
use_jobs_dir() {
	[ -n "$jobs" ] && [ -w "$jobs" ] || return 1
	_ujd_n=0
	_ujd_open=
	while read -r _ujd_mode _ _ujd_uid _ujd_rest; do
		case ${_ujd_mode%[.@]}:$_ujd_uid in
		d????-??-?:"$uid") _ujd_n=$((_ujd_n + 1)) ;;
		*) continue ;;
		esac
		case $_ujd_rest in
		*/jobs) [ "${_ujd_mode%[.@]}" = drwx------ ] || _ujd_open=yes ;;
		esac
	done <<EOF
$1
EOF
	[ "$_ujd_n" = 2 ] || return 1
	[ -z "$_ujd_open" ] || chmod 700 -- "$jobs" 2>/dev/null
}

# hex WORD: true when WORD is a job ID (hex digits, 64 at most): what may
# be joined to $jobs.
hex() {
	case $1 in '' | *[!0-9a-f]*) return 1 ;; esac
	[ "${#1}" -le 64 ]
}

# digits WORD...: true when every WORD is a decimal number (what may
# reach arithmetic: bash evaluates a name with a subscript there, and runs
# what the subscript holds).
digits() {
	for _dg_word in "$@"; do
		case $_dg_word in '' | *[!0-9]*) return 1 ;; esac
	done
}
