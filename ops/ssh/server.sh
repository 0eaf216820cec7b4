# shellcheck shell=sh
#
# The command server: the POSIX sh program pi-remote runs on a remote host,
# one per SSH session channel. server.go sends this text (comment lines and
# indentation dropped) after the bootstrap command, followed by a call of
# serve; from then on it sends one request per line:
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
# attach_jobs serves several jobs in one answer, in frames (see there);
# run_jobs starts the jobs of a batch and answers for them the same way.
#
# Commands (run_job) and reads (open_file) run in the background while a
# watcher reads the request stream: the line "k" kills them; "r" renews a
# command's lease; "s" streams its output from then on. At the end of the
# stream (the client is gone) a read is killed, and a command goes on, to
# be attached to again. Nothing else is read while they run: the client
# sends its next request only after the marker.
#
# Functions are POSIX (no "local"): helpers that run in the server's own
# shell prefix their variables with their initials. The file functions run
# in a subshell (see call) and may set what they like.
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
requests='run_job attach_job attach_jobs run_jobs read_head open_file
call:list_jobs call:stop_job call:cancel_job call:forget call:probe_host
call:stat_path call:list_dir call:resolve_path call:make_dirs
call:create_temp call:write_inline call:commit_temp call:settle_write
call:diagnose_write call:receive_temp call:remove_temp'

# acts: the requests of $requests that change something, fenced as a whole
# (see fence_in). (run_job and run_jobs fence their jobs' starts.)
acts='call:stop_job call:cancel_job call:forget call:make_dirs call:create_temp
call:write_inline call:commit_temp call:settle_write call:remove_temp'

# The files a job may have in the jobs directory, JOB.<suffix>, in the
# order they are removed: its output first (the job is gone for
# attach_job), then its lease (no longer running for job_running). A job
# has four: out, lease, status (empty while it runs) and server (who
# started it and its pids, see job_info); killed when stop_job killed it,
# script for a long script (see exec_command). (pid, size, saved, waiter,
# label, started and relay.pid: jobs of earlier versions of this script.)
job_files='out lease status pid waiter server label lease.watched lease.check size killed saved script fifo fifo.left started relay.pid'
# The same as words for eval in remove_files: "$jobs/$_rmf_arg.SUFFIX" for
# each (a job's 17 files join the list in one step, not one step each:
# every step copies the whole list, and a request forgetting 16 jobs took
# dash 22 ms that way).
job_words=
for _jw_suffix in $job_files; do job_words="$job_words \"\$jobs/\$_rmf_arg.$_jw_suffix\""; done

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
	# The numbers of the FIFOs made ahead for jobs (see run_job) and not
	# used yet.
	fifos=
	# The FIFO of the job this server started and waits for, if any; the
	# files the last request left, removed by the next run_job.
	_rj_used=
	_rj_done_fifos=
	_rj_done_seqs=
	_rj_done_ids=
	_sj_hand=
	_rj_news=
	trap 'leave_fifo; remove_fifos; stop_private_jobs; remove_private "$private"' EXIT
	trap 'exit 129' HUP
	trap 'exit 141' PIPE
	trap 'exit 143' TERM
	# The client wants the stream of the job it waits for, or lets go of
	# it (see wake): the signal ends wait_job's wait, and is ignored
	# anywhere else. (A job's command gets it back, see exec_command.) A
	# shell cannot trap a signal that was ignored as it started (its
	# parent's choice): sig_usr1 is "yes" when this one can be caught, and
	# wait_job does without it when it cannot.
	sig_usr1=
	trap 'sig_usr1=yes' USR1
	kill -s USR1 $$
	trap '' USR1
	# Whether sleep takes a fraction of a second (the pauses of wait_job,
	# a job's grace, see supervise): "yes" or "no".
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

# user_scope sets scope when every job's processes can be held in a
# scope of the user's systemd of its own (see exec_command and kill_job):
# its manager runs (its private socket, in an XDG_RUNTIME_DIR that is the
# user's own) and lingers (loginctl enable-linger: without it the
# manager, and every scope in it, stops seconds after the user's last
# login ends, and a job would not outlive a lost connection), and
# systemd-run makes a scope there: tried once a boot, the answer kept in
# the host's directory (a yes gone stale costs a job a failed try, see
# scope_wrapper). Not for private jobs, which end with their server
# anyway. It sets scope_kill wherever the manager runs, linger or not: a
# job another server started may have a scope (see kill_job).
user_scope() {
	scope=
	scope_kill=
	case ${XDG_RUNTIME_DIR-} in /*) ;; *) return 0 ;; esac
	[ -S "$XDG_RUNTIME_DIR/systemd/private" ] && [ -O "$XDG_RUNTIME_DIR" ] || return 0
	command -v systemctl >/dev/null 2>&1 || return 0
	scope_kill=yes
	# (A manager that hangs would hold a kill up for minutes.)
	scope_timeout=
	! command -v timeout >/dev/null 2>&1 || scope_timeout='timeout 5'
	[ "$jobs" != "$private/jobs" ] || return 0
	_us_user=${USER:-${LOGNAME-}}
	case $_us_user in '' | */* | .*) return 0 ;; esac
	[ -e "/var/lib/systemd/linger/$_us_user" ] || return 0
	_us_known=
	[ ! -f "$host_dir/scope" ] || read -r _us_known <"$host_dir/scope"
	case $_us_known in
	yes)
		scope=yes
		return 0
		;;
	no) return 0 ;;
	esac
	if systemd-run --user --scope --quiet --collect -- true >/dev/null 2>&1; then
		scope=yes
	fi
	echo "${scope:-no}" >"$host_dir/scope" 2>/dev/null
}

# scope_wrapper, run as sh -c "$scope_wrapper" sh UNIT COMMAND..., runs
# COMMAND in a new scope UNIT of the user's systemd: systemd-run, its
# child, registers the scope and becomes COMMAND, which first writes "x"
# to the shell (the command substitution's pipe) and takes back its
# output and errors (fds 4 and 5). A systemd-run that could not make the
# scope (its manager gone or hung, the answer of user_scope stale) never
# wrote it: COMMAND then runs here, without a scope, never twice. The
# shell exits with COMMAND's status. (COMMAND does not see the variable
# systemd sets in a unit's processes, INVOCATION_ID: its environment is
# the one it has elsewhere.)
# shellcheck disable=SC2016 # expanded by the shell that runs it
scope_wrapper='_sw_unit=$1
shift
exec 4>&1 5>&2
_sw_began=$(systemd-run --user --scope --quiet --collect "--unit=$_sw_unit" -- \
	sh -c "printf x; exec >&4 2>&5 4>&- 5>&-; unset INVOCATION_ID; exec \"\$@\"" sh "$@" 2>/dev/null)
_sw_status=$?
[ -z "$_sw_began" ] || exit "$_sw_status"
exec 4>&- 5>&-
exec "$@"'

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
			# $acts as a whole, the jobs' starts in run_job and add_job.
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

# host_of NAME BOOT sets _ho to who may judge the pids of a server or job
# of the host NAME in its boot BOOT (as recorded; NAME empty: by an
# earlier version, taken as this host's): "here" (this host, this boot),
# "gone" (this host before it rebooted: none of them is left) or
# "elsewhere" (another host sharing the directory, as hosts sharing an NFS
# home do, or one that cannot be told apart: its pids mean nothing here).
host_of() {
	if [ -z "$1" ] || [ "$1 $2" = "$host_id" ]; then
		_ho=here
	elif [ "$1" = "$host_name" ] && [ "$2" != - ] && [ "$boot_id" != - ]; then
		_ho=gone
	else
		_ho=elsewhere
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

# private_jobs_run DIR: true when a job in DIR (a dead server's private
# jobs, see serve) has a waiter alive and no status yet.
private_jobs_run() {
	for _pjr_job in "$1"/*.server; do
		[ -e "$_pjr_job" ] || continue
		_pjr_job=${_pjr_job%.server}
		[ ! -s "$_pjr_job.status" ] || continue
		job_info "$_pjr_job"
		[ -z "$_ji_waiter" ] || ! pid_alive "$_ji_waiter" || return 0
	done
	return 1
}

# sweep_private_dirs removes the private directories of servers that died
# without cleaning up (SIGKILL, a crash of the host): their names hold the
# pid of the server, and a pid that no longer exists is gone. Only
# directories proven this user's are touched (a private directory lists
# files that remove_private removes): not a symbolic link, owned by this
# user, mode 0700 (nobody else may add to it), in a TMPDIR where nobody
# else may rename it (sticky, or writable by its owner only; owned by this
# user or root); and made on this host (its "host" file), this boot, or
# before this host rebooted. A pid that exists but is another user's (kill
# -0 fails with EPERM) is alive. What needs a process (the kill's
# complaint, ls) is only done for a directory of this user's whose server
# is gone: rare.
sweep_private_dirs() {
	for _spd_dir in "$tmp"/.pi-remote.*; do
		if [ -L "$_spd_dir" ] || [ ! -d "$_spd_dir" ] || [ ! -O "$_spd_dir" ]; then
			continue
		fi
		_spd_pid=${_spd_dir##*/.pi-remote.}
		_spd_pid=${_spd_pid%%.*}
		_spd_host=
		_spd_boot=
		read -r _spd_host _spd_boot <"$_spd_dir/host" 2>/dev/null
		host_of "$_spd_host" "$_spd_boot"
		case $_ho:$_spd_pid in
		here: | here:*[!0-9]* | elsewhere:*) continue ;;
		here:*) ! pid_alive "$_spd_pid" || continue ;;
		esac
		# (Jobs it kept there, its jobs directory unusable, whose waiters
		# still run: their files are their lease's and status's.)
		if [ "$_ho" = here ] && private_jobs_run "$_spd_dir/jobs"; then continue; fi
		# The directory itself, entered (what is checked is what is
		# removed), and TMPDIR.
		_spd_ok=0
		while read -r _spd_mode _ _spd_uid _spd_rest; do
			case ${_spd_rest##* }:${_spd_mode%[.@]}:$_spd_uid in
			.:drwx------:"$uid" | ..:d????????[tT]:0 | ..:d????-??-?:0 | ..:d????????[tT]:"$uid" | ..:d????-??-?:"$uid")
				_spd_ok=$((_spd_ok + 1))
				;;
			esac
		done <<EOF
$(cd -P -- "$_spd_dir" && LC_ALL=C ls -ldn . ..)
EOF
		[ "$_spd_ok" != 2 ] || remove_private "$_spd_dir" 2>/dev/null
	done
}

# pid_alive PID: true unless there is no process PID. kill -0 also fails
# for a process of another user (EPERM): that one is alive. Only a kill
# that failed pays a fork, to read its complaint in the C locale.
pid_alive() {
	kill -s 0 "$1" 2>/dev/null && return 0
	case $(
		LC_ALL=C
		export LC_ALL
		kill -s 0 "$1" 2>&1
	) in
	*'No such process'*) return 1 ;;
	esac
	return 0
}

# remove_private DIR removes a server's private directory, and first what
# the writes it created and never committed left (a client that lost its
# connection, or crashed, between create_temp and commit_temp):
# DIR/temp.SUFFIX holds the temporary file of each and the inode number of
# its directory. Only a file of the shape create_temp makes for SUFFIX, in
# a directory that passes enter_temp's checks (this user's and 0700, or
# one only root and this user may change; the same inode; not reached
# through a link), is removed, when it is this user's, and then its
# private directory.
remove_private() {
	for _rmp_temp in "$1"/temp.*; do
		[ -f "$_rmp_temp" ] || continue
		_rmp_suffix=${_rmp_temp##*/temp.}
		_rmp_path=
		_rmp_inode=
		{ IFS= read -r _rmp_path && IFS= read -r _rmp_inode; } <"$_rmp_temp"
		if ! hex "$_rmp_suffix" || ! digits "$_rmp_inode"; then continue; fi
		case ${_rmp_path##*/} in
		.?*".pi-remote-$_rmp_suffix") (enter_temp "$_rmp_path" "$_rmp_inode" >/dev/null && remove_if_ours) ;;
		esac
	done
	rm -rf "$1"
}

# stop_private_jobs, as the server exits, kills the jobs it keeps in its
# private directory (the jobs directory could not be used, see serve):
# their files go with that directory, so no client could collect them,
# and a client that lost its connection would not know whether they ran.
# The client reports them stopped with their connection (READY says
# "private").
stop_private_jobs() {
	[ "$jobs" = "$private/jobs" ] || return 0
	for _spj_out in "$jobs"/*.out; do
		[ -e "$_spj_out" ] || continue
		! job_process "${_spj_out%.out}" || kill_job "$_jp_pid" "${_spj_out%.out}"
	done
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

# wait_job JOB WAITER OFFSET STREAM waits until the job in JOB has ended:
# for the background process WAITER (its waiter, when this server started
# it), or, without one, until its status file appears (the waiter belongs
# to a server that is gone). With STREAM "yes", or from the moment the
# client asks for it ("s"), it sends the job's output from byte OFFSET on
# as it comes (follow_output), and leaves in _wj_off the byte reached.
# Meanwhile a watcher reads the request stream: "k" kills the job, "r"
# renews its lease, "s" starts the stream, "d" stops the wait (the client
# follows the job elsewhere: this server is wanted for other requests). At
# the end of the stream (the client is gone) the job goes on, and the
# watcher ends this server, whose channel is gone. Returns 1 when the job
# will never have a status (job_lost: the host rebooted, or someone killed
# its waiter), 2 when it never started (unstarted), 3 when the wait
# stopped for "d" with the job still running.
#
# Until the stream starts, a job this server started costs nothing while
# it runs: the wait for its waiter wakes only when it ends, or when the
# watcher signals a "s" or a "d" (see wake). Once it streams, the output
# is looked at as attach_jobs looks at several jobs' (see pace; every
# second where sleep takes whole seconds only), from the offset reached.
wait_job() {
	_wj_job=$1
	_wj_waiter=$2
	_wj_off=$3
	_wj_stream=$4
	# (The watcher's: the waiter this server started vouches for the
	# job's pid where nothing else can, see job_process.)
	_jp_own=$_wj_waiter
	watch_for_cancel "$_wj_job" &
	_wj_watcher=$!
	_jp_own=
	_wj_result=0
	_wj_looks=0
	_pc_idle=0
	# (What the last pause took, in milliseconds: see pace.)
	_pc_ms=0
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
		_fo_news=
		if [ -n "$_wj_stream" ]; then
			follow_output "$_wj_job" "$_wj_off"
			_wj_off=$_fo_off
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
			[ -n "$_ji_server" ] || _wj_bare=$((_wj_bare + _pc_ms))
			_wj_waited=
			[ "$_wj_bare" -lt 5000 ] || _wj_waited=waited
			if [ -z "$_ji_waiter" ] && unstarted "$_wj_job" "$_wj_waited"; then
				_wj_result=2
				break
			fi
		fi
		# (The first look comes soon: a job that has just started, or
		# ends.)
		pace "$_fo_news"
		if [ "$_wj_looks" = 0 ]; then
			_pc_nap=0.01
			_pc_ms=10
		fi
		_wj_looks=$((_wj_looks + 1))
		if [ "$frac_sleep" = no ]; then
			_pc_nap=1
			_pc_ms=1000
		fi
		if [ -n "$_wj_waiter" ]; then
			# The pause is a wait for a sleep, which the end of any other
			# child of this server cuts short (the trap on CHLD): the
			# job's waiter ending is seen at once. (Should the waiter end
			# before the wait begins, or CHLD be ignored for good, the
			# pause is as long as the sleep.)
			trap : CHLD
			sleep "$_pc_nap" &
			wait "$!"
			trap - CHLD
		else
			sleep "$_pc_nap"
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

# pace NEWS sets _pc_nap to the pause before the next look of a loop that
# follows jobs' output (wait_job, attach_jobs): 50 ms, 200 ms after 40
# looks without NEWS (about two seconds), 500 ms after 180 (about half a
# minute); _pc_ms is the same in milliseconds. _pc_idle counts the looks
# without news: 0 as the loop starts.
pace() {
	if [ -n "$1" ]; then
		_pc_idle=0
	else
		_pc_idle=$((_pc_idle + 1))
	fi
	if [ "$_pc_idle" -le 40 ]; then
		_pc_nap=0.05
		_pc_ms=50
	elif [ "$_pc_idle" -le 180 ]; then
		_pc_nap=0.2
		_pc_ms=200
	else
		_pc_nap=0.5
		_pc_ms=500
	fi
}

# follow_output JOB OFFSET sends the output of the job in JOB from byte
# OFFSET on, up to its size now, and sets _fo_off to the byte reached;
# _fo_news is "yes" when there was any.
follow_output() {
	_fo_news=
	_fo_off=$2
	_fo_size=$(LC_ALL=C ls -lnL -- "$1.out" 2>/dev/null)
	read -r _ _ _ _ _fo_size _ <<EOT
$_fo_size
EOT
	digits "$_fo_size" || return 0
	[ "$_fo_size" -gt "$2" ] || return 0
	tail -c +$(($2 + 1)) "$1.out" | head -c $((_fo_size - $2))
	_fo_off=$_fo_size
	_fo_news=yes
}

# job_info JOB reads JOB.server (lines: the pid of the server that
# started the job with the host it runs on, as host_id; its label; the pid
# of its waiter, once it has one; the pid of its command, once it runs)
# into _ji_server, _ji_host, _ji_label, _ji_waiter and _ji_pid (the pids
# empty when missing or not numbers), and sets _ji_where to who may judge
# the job's processes (see host_of). (A job of an earlier version of this
# script has its command's pid in JOB.pid.)
job_info() {
	_ji_server=
	_ji_host=
	_ji_boot=
	_ji_label=
	_ji_waiter=
	_ji_pid=
	{ read -r _ji_server _ji_host _ji_boot && IFS= read -r _ji_label && read -r _ji_waiter && read -r _ji_pid; } <"$1.server" 2>/dev/null
	case $_ji_server in *[!0-9]*) _ji_server= ;; esac
	case $_ji_waiter in *[!0-9]*) _ji_waiter= ;; esac
	if [ -z "$_ji_pid" ] && [ -n "$_ji_waiter" ] && [ -e "$1.pid" ]; then
		read -r _ji_pid <"$1.pid"
	fi
	case $_ji_pid in *[!0-9]*) _ji_pid= ;; esac
	host_of "$_ji_host" "$_ji_boot"
	_ji_where=$_ho
}

# job_lost JOB (after job_info): true for a job that will never have a
# status: its host rebooted since it started, or its waiter (on this host,
# this boot) is gone without writing one (killed). A job of another host
# is never judged here.
job_lost() {
	case $_ji_where in
	gone) ;;
	here)
		if [ -n "$_ji_waiter" ]; then
			! pid_alive "$_ji_waiter" || return 1
		else
			# A waiter killed between its claim and its pid, a moment
			# (see start_job), with its server: the claim is a minute
			# old, the server gone. (Its command never began.)
			[ -e "$1.status" ] && [ -n "$_ji_server" ] && ! pid_alive "$_ji_server" &&
				[ -n "$(find "$1.status" -prune -mmin +1 2>/dev/null)" ] || return 1
		fi
		;;
	*) return 1 ;;
	esac
	# (Looked at again: the waiter writes the status, then ends.)
	[ ! -s "$1.status" ]
}

# job_process JOB sets _jp_pid to the pid of job JOB's command when it is
# proven the job's, the only pid a kill for the job may go to: the job has
# no status and runs on this host (this boot), its waiter is alive, and
# the pid's parent is the waiter (/proc/PID/stat, read without a fork: a
# child's pid is not reused before its parent has reaped it, and the
# waiter writes the status a moment after), or, where the command has a
# keeper (see keep), the waiter's child. A job that is starting (no
# waiter or pid yet) is waited for, up to about 5 seconds. Otherwise it
# fails, and _jp_why says why: "ended" (its command has, or the job has a
# status), "lost" (nothing of it runs any more: its files may go),
# "starting" (no pid after the wait), "elsewhere" (another host's: nothing
# may be killed here for it) or "unproven" (this host has neither /proc
# nor a ps that takes -o and -p, as in a chroot: only the waiter this
# server started and waits for, _jp_own, vouches for the pid it wrote,
# for it is this server's child until the server's wait has reaped it).
job_process() {
	_jp_pid=
	_jp_why=ended
	_jp_tries=0
	while [ ! -s "$1.status" ]; do
		job_info "$1"
		case $_ji_where in
		gone) _jp_why=lost ;;
		elsewhere) _jp_why=elsewhere ;;
		esac
		[ "$_ji_where" = here ] || return 1
		if [ -z "$_ji_waiter" ]; then
			job_lost "$1" && _jp_why=lost && return 1
			unstarted "$1" && _jp_why=lost && return 1
		elif ! pid_alive "$_ji_waiter"; then
			[ -s "$1.status" ] || _jp_why=lost
			return 1
		else
			_jp_pid=$_ji_pid
			[ -z "$_jp_pid" ] || break
		fi
		_jp_tries=$((_jp_tries + 1))
		if [ "$_jp_tries" -gt 500 ]; then
			_jp_why=starting
			return 1
		fi
		sleep 0.01 2>/dev/null || sleep 1
	done
	[ -n "$_jp_pid" ] || return 1
	if [ -n "$procfs" ]; then
		parent_of "$_jp_pid"
		[ "$_po" != "$_ji_waiter" ] || return 0
		parent_of "$_po"
		[ "$_po" != "$_ji_waiter" ] || return 0
	else
		# No /proc (macOS, a chroot): ps, where it takes -o and -p (a
		# process, on a kill only), says "PID PPID" for the pid if it
		# understood.
		_jp_stat=$(ps -o pid= -o ppid= -p "$_jp_pid" 2>/dev/null)
		# shellcheck disable=SC2086 # the two numbers
		set -- $_jp_stat
		if [ "$#" = 2 ] && [ "$1" = "$_jp_pid" ]; then
			[ "$2" != "$_ji_waiter" ] || return 0
			_jp_stat=$(ps -o ppid= -p "$2" 2>/dev/null)
			# shellcheck disable=SC2086 # a number
			set -- $_jp_stat
			[ "$1" != "$_ji_waiter" ] || return 0
		elif [ -n "$_jp_own" ] && [ "$_ji_waiter" = "$_jp_own" ]; then
			return 0
		else
			_jp_why=unproven
		fi
	fi
	_jp_pid=
	return 1
}

# parent_of PID sets _po to the parent of process PID, read from
# /proc/PID/stat ("PID (NAME) STATE PPID ...": the name may hold anything,
# and ends with the last ") "); empty when there is no such process.
parent_of() {
	_po=
	read -r _po <"/proc/$1/stat" 2>/dev/null
	_po=${_po##*) }
	_po=${_po#* }
	_po=${_po%% *}
}

# unstarted JOB [WAITED] (after job_info): true, with the job's files
# gone, for a job whose server died after creating it and before its
# waiter began (its pid, in JOB.server, is gone, or JOB.server never came
# and the caller WAITED; or the host rebooted since): the
# client starts it again. Of this and the waiter, whoever creates
# JOB.status first decides; the waiter runs the command only if it does. Another
# host's job is never judged here.
unstarted() {
	case $_ji_where in
	here)
		if [ -z "$_ji_server" ]; then
			# (A server killed between the job's first file and
			# JOB.server, a moment, leaves no pid: a caller that saw none
			# for seconds, WAITED, judges it as one killed later.)
			[ "$2" = waited ] || return 1
		else
			! pid_alive "$_ji_server" || return 1
		fi
		;;
	gone) ;;
	*) return 1 ;;
	esac
	set -C
	{ command : >"$1.status"; } 2>/dev/null
	_us_mine=$?
	set +C
	[ "$_us_mine" = 0 ] || return 1
	# (Its output first: the job is gone for attach_job at once.)
	rm -f -- "$1.out" "$1".*
}

# wait_child PID waits for the background process PID (a read's cat) while
# a watcher reads the request stream: "k" or its end kills it. Sets
# job_status.
wait_child() {
	(
		while IFS= read -r _wc_line <&3; do
			[ "$_wc_line" = k ] && break
		done
		kill -s KILL "$1" 2>/dev/null
	) &
	_wc_watcher=$!
	wait "$1"
	job_status=$?
	kill -s KILL "$_wc_watcher" 2>/dev/null
	wait "$_wc_watcher" 2>/dev/null
}

# watch_for_cancel JOB: the watcher of wait_job.
watch_for_cancel() {
	while IFS= read -r _wfc_line <&3; do
		case $_wfc_line in
		k)
			# (A job whose process cannot be proven its own is not
			# killed: the watcher goes on, the job ends by itself.)
			if job_process "$1"; then
				# (See wait_job: a job that ended meanwhile is not
				# killed.)
				set -C
				{ command : >"$private/settled.$seq"; } 2>/dev/null || return
				set +C
				kill_job "$_jp_pid" "$1"
				return
			fi
			;;
		r) renew "$1" "$_wj_ttl" ;;
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

# kill_job PID JOB kills job JOB, whose command is PID: where commands
# get their own session, its process group is frozen first (SIGSTOP:
# nobody in it forks, exits or leaves it meanwhile, so no child is
# re-parented away from the tree); where the user's systemd manager runs,
# the job's scope (see user_scope) is killed, every process in it, a
# double fork's too (the manager kills a cgroup's processes until none is
# left); then the process tree is walked, each process stopped as found,
# and killed with the groups they lead (a descendant that took a session
# of its own, and its children); then the group. Without sessions of
# their own (the server shares their group), the scope and the tree.
# Without a scope, a process that left the tree (a double fork: its
# parent gone before the walk) escapes, as it does locally without
# cgroups; docs/tools.md says so.
kill_job() {
	if [ -n "$setsid_cmd" ]; then
		signal_group STOP "$1"
		kill_scope "$2"
		kill_tree "$1" "$1"
		signal_group KILL "$1"
	else
		kill_scope "$2"
		kill_tree "$1"
	fi
}

# kill_scope JOB kills the processes of JOB's scope, if it has one.
kill_scope() {
	[ -n "$scope_kill" ] && [ -n "$1" ] || return 0
	$scope_timeout systemctl --user kill --signal=KILL -- "pi-remote-${1##*/}.scope" >/dev/null 2>&1
}

# kill_tree PID [GROUP] kills PID and every process descended from it,
# found with ps (or /proc where ps lacks -o). Each one is stopped as soon
# as it is found, so none forks behind the search; PID is killed last:
# the moment it dies the server's wait returns and the watcher that called
# this may be stopped. With GROUP, the process groups of those found are
# killed too, but GROUP (the caller's to kill last) and this server's.
kill_tree() {
	kill -s STOP "$1" 2>/dev/null
	_kt_all=" $1 "
	_kt_groups=' '
	_kt_more=yes
	while [ -n "$_kt_more" ]; do
		_kt_more=
		_kt_table=$(ps -A -o pid= -o ppid= -o pgid= 2>/dev/null) || _kt_table=
		if [ -z "$_kt_table" ]; then
			_kt_table=$(for _kt_stat in /proc/[0-9]*/stat; do
				read -r _kt_pid _kt_rest <"$_kt_stat" || continue
				_kt_rest=${_kt_rest##*) }
				# shellcheck disable=SC2086 # the fields after the name
				set -- $_kt_rest
				echo "$_kt_pid $2 $3"
			done 2>/dev/null)
		fi
		while read -r _kt_pid _kt_ppid _kt_pgid; do
			case $_kt_all in
			*" $_kt_pid "*) ;;
			*" $_kt_ppid "*)
				kill -s STOP "$_kt_pid" 2>/dev/null
				_kt_all="$_kt_all$_kt_pid "
				_kt_more=yes
				case $_kt_groups in *" $_kt_pgid "*) ;; *) _kt_groups="$_kt_groups$_kt_pgid " ;; esac
				;;
			esac
		done <<EOF
$_kt_table
EOF
	done
	# shellcheck disable=SC2086 # a list of pids
	kill -s KILL ${_kt_all#" $1 "} 2>/dev/null
	if [ -n "$2" ]; then
		for _kt_pgid in $_kt_groups; do
			case $_kt_pgid in "$2" | "$pgid" | 0 | 1 | *[!0-9]*) continue ;; esac
			signal_group KILL "$_kt_pgid"
		done
	fi
	kill -s KILL "$1" 2>/dev/null
}

# sweep_jobs buries the jobs nobody will collect (see bury): those that
# will never have a status (job_lost: their waiter was killed, or the host
# rebooted; their status says "lost"), and those that ended longer ago
# than their TTL (the lease file's first word; by steps: a minute for a
# TTL up to a minute, 31 for one up to 30 minutes, a day for any) with no
# client back for them. Tombstones go two days after their job ended; so
# do the FIFOs made ahead by servers of this host that died, and the
# directories of this host's earlier boots (see host_dir). Another host's jobs that
# share the directory (an NFS home) are that host's to judge. It runs in
# the background, a few finds in all, however many jobs there are.
sweep_jobs() {
	# At most once a minute on this host, by one server at a time: a
	# sweep of many jobs costs, and many servers may start at once (a
	# claim older than ten minutes is one a killed sweep left). The stamp
	# and the claim are in this host's directory: each host sweeps what it
	# alone may judge.
	[ -z "$(find "$host_dir/swept" -mmin -1 2>/dev/null)" ] || return 0
	if ! mkdir "$host_dir/sweeping" 2>/dev/null; then
		[ -n "$(find "$host_dir/sweeping" -prune -mmin +10 2>/dev/null)" ] || return 0
	fi
	: >"$host_dir/swept"
	for _sj_job in "$jobs"/*.server; do
		_sj_job=${_sj_job%.server}
		[ ! -s "$_sj_job.status" ] || continue
		job_info "$_sj_job"
		if job_lost "$_sj_job"; then
			echo lost >"$_sj_job.status"
			bury "$_sj_job"
		fi
	done
	for _sj_dir in "$jobs"/.host.*; do
		[ "$_sj_dir" != "$host_dir" ] || continue
		_sj_tag=${_sj_dir##*/.host.}
		if [ "${_sj_tag#*.}" = "$host_name" ] && [ "${_sj_tag%%.*}" != - ] && [ "$boot_id" != - ]; then
			rm -rf -- "$_sj_dir"
		fi
	done
	# (Their jobs have them open, if they got that far.)
	find "$host_dir" -name 'fifo-*' -mmin +1 | while IFS= read -r _sj_fifo; do
		_sj_pid=${_sj_fifo##*/fifo-}
		pid_alive "${_sj_pid%%-*}" || rm -f -- "$_sj_fifo"
	done
	# The fences of clients (see fence_start): the marks of servers that
	# died, then a client's directory a day after its last server went.
	for _sj_busy in "$host_dir"/client.*/busy.*; do
		_sj_pid=${_sj_busy##*.}
		digits "$_sj_pid" || continue
		pid_alive "$_sj_pid" || rm -f -- "$_sj_busy"
	done
	find "$host_dir"/client.* -prune -mmin +1440 2>/dev/null | while IFS= read -r _sj_dir; do
		for _sj_busy in "$_sj_dir"/busy.*; do
			[ -e "$_sj_busy" ] || rm -rf -- "$_sj_dir"
			break
		done
	done
	# The whole outputs of long commands, kept for the model to page
	# through (see save_output): a week after they were written. Only
	# regular files of this user's, of that name.
	find "$tmp"/pi-remote-bash-*.log -prune -type f -user "$uid" -mtime +7 -exec rm -f -- {} + 2>/dev/null
	# The FIFOs of earlier versions, beside the jobs, which name no host:
	# by age alone.
	find "$jobs" -name '.fifo-*' -mmin +1440 -exec rm -f -- {} +
	for _sj_step in 1:60 31:1800 1441:; do
		find "$jobs" -name '*.status' -mmin +"${_sj_step%:*}" | while IFS= read -r _sj_job; do
			# (Empty: the job runs, see start_job.)
			[ -s "$_sj_job" ] || continue
			_sj_job=${_sj_job%.status}
			! gone "$_sj_job" || continue
			# (Another host's client collects its jobs there.)
			job_info "$_sj_job"
			[ "$_ji_where" != elsewhere ] || continue
			_sj_ttl=
			read -r _sj_ttl _ <"$_sj_job.lease"
			case $_sj_ttl in '' | *[!0-9]*) _sj_ttl=86400 ;; esac
			if [ -z "${_sj_step#*:}" ] || [ "$_sj_ttl" -le "${_sj_step#*:}" ]; then
				bury "$_sj_job"
			fi
		done
	done
	find "$jobs" -name '*.status' -mmin +2880 | while IFS= read -r _sj_job; do
		! gone "${_sj_job%.status}" || rm -f -- "$_sj_job" "${_sj_job%.status}.pid" "${_sj_job%.status}.server"
	done
	rmdir "$host_dir/sweeping"
}

# bury JOB removes the files of job JOB but its tombstone: its status,
# which says how it ended, and keeps a start of the job that comes late
# from running it (it is the waiter's claim, see start_job). Requests for
# the job are answered "!GONE STATUS" from then on (see gone), never as
# for a job that never started.
bury() {
	_bu_job=$1
	set -- "$_bu_job.out"
	for _bu_suffix in $job_files; do
		case $_bu_suffix in out | status) ;; *) set -- "$@" "$_bu_job.$_bu_suffix" ;; esac
	done
	rm -f -- "$@"
}

# gone JOB: true when job JOB has left only its tombstone (see bury);
# _gone is its status.
gone() {
	_gone=
	if [ -e "$1.out" ] || [ -L "$1.out" ]; then return 1; fi
	read -r _gone <"$1.status" 2>/dev/null
	[ -n "$_gone" ]
}

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
	_rj_done_ids="$_rj_done_ids${11:+ }${11}"
	_rj_job=$jobs/$1
	_rj_waiter=
	_rj_news=
	fence_in || exit 0
	if gone "$_rj_job"; then
		run_job_fails "!GONE $_gone"
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
			_sj_hand=yes
			if [ -p "$private/news" ] && { command exec 8<>"$private/news"; } 2>/dev/null; then
				start_job "$_rj_job" "$3" "$4" "$_rj_fifo" "$9" "$8" "" news
				_rj_news=yes
				if ! { command exec 8<"$private/news"; } 2>/dev/null; then
					exec 8<&-
					_rj_news=
				fi
			else
				start_job "$_rj_job" "$3" "$4" "$_rj_fifo" "$9" "$8"
			fi
			_sj_hand=
			_rj_done_fifos=
			_rj_done_seqs=
			_rj_done_ids=
			_rj_used=$_rj_fifo
			_rj_used_job=$_rj_job
		fi
	fi
	[ -z "$_rj_done_ids$_rj_done_fifos$_rj_done_seqs" ] || remove_done bg
	fence_out
	attach_job "$1" "$2" "$5" "$6" "$7" "$8"
}

# run_job_fails STATUS answers a run_job that starts no job and attaches to
# none with STATUS, what the last requests left going in the background
# (see remove_done).
run_job_fails() {
	[ -z "$_rj_done_ids$_rj_done_fifos$_rj_done_seqs" ] || remove_done bg
	finish "$1"
}

# remove_done MODE [FILE...] removes, with one rm, the FILEs, the files of
# the jobs whose results the client has (_rj_done_ids, see forget_jobs)
# and what the requests answered since the last time left: the FIFOs of
# the jobs they started (_rj_done_fifos, numbers as in $fifos) and their
# streams' files (_rj_done_seqs, the requests' numbers, see attach_job).
# MODE: "bg", the rm in the background; "exec", the rm replaces this shell
# (a waiter's last act, see start_job); "fg", the rm runs and this goes
# on.
remove_done() {
	_rd_mode=$1
	shift
	for _rd_n in $_rj_done_fifos; do set -- "$@" "$host_dir/fifo-$$-$_rd_n" "$host_dir/fifo-$$-$_rd_n.dd" "$host_dir/fifo-$$-$_rd_n.k"; done
	for _rd_n in $_rj_done_seqs; do set -- "$@" "$private/stream.$_rd_n" "$private/detach.$_rd_n" "$private/woke.$_rd_n" "$private/settled.$_rd_n"; done
	set -f
	# shellcheck disable=SC2086 # job IDs (not globbed)
	set -- "$@" -- $_rj_done_ids
	set +f
	_rj_done_fifos=
	_rj_done_seqs=
	_rj_done_ids=
	case $_rd_mode in
	bg) remove_files_bg "$@" ;;
	exec)
		_rmf_exec=yes
		remove_files "$@"
		;;
	*) remove_files "$@" ;;
	esac
}

# done_with NUMBER adds the files of the request NUMBER (its stream's,
# when it had one) and its job's FIFO to what remove_done removes.
done_with() {
	[ -z "$1" ] || _rj_done_seqs="$_rj_done_seqs $1"
	if [ -n "$_rj_used" ]; then
		_rj_done_fifos="$_rj_done_fifos ${_rj_used##*-}"
		_rj_used=
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
	[ -n "$_rj_used" ] || return 0
	: >"$_rj_used.left"
	[ ! -s "$_rj_used_job.status" ] || rm -f "$_rj_used" "$_rj_used.left" "$_rj_used.dd" "$_rj_used.k"
	_rj_used=
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
	_rj_said=none
	if [ -n "$_rj_news" ]; then
		_rj_said=
		read -r _rj_said <&8
		exec 8<&-
		_rj_news=
	fi
	if ! hex "$1" || ! digits "$2" "${4:-0}" "${5:-0}" "$6"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	_rj_job=$jobs/$1
	if gone "$_rj_job"; then
		finish "!GONE $_gone"
		return
	fi
	if [ ! -e "$_rj_job.out" ]; then
		finish '!NOJOB'
		return
	fi
	seq=$((seq + 1))
	# (A client coming back renews the lease at once.)
	[ -s "$_rj_job.status" ] || renew "$_rj_job" "$6"
	# A job this server just started said whether it runs on (see
	# above): one that ended goes out in one piece, with no watcher.
	# (Control lines sent meanwhile are left to the request loop, which
	# ignores them: the job has ended.)
	if [ -z "$_rj_said" ] && [ -n "$_rj_waiter" ]; then
		wait "$_rj_waiter"
		if [ -s "$_rj_job.status" ]; then
			_rj_waiter=
			tail -c +$(($2 + 1)) "$_rj_job.out"
			job_result "$_rj_job" "$3" "$4" "$5"
			finish "$_jr_status"
			done_with
			return
		fi
	fi
	_rj_status=
	_wj_ttl=$6
	_rj_stream=
	[ -n "$_rj_waiter" ] || [ -s "$_rj_job.status" ] || _rj_stream=yes
	wait_job "$_rj_job" "$_rj_waiter" "$2" "$_rj_stream"
	case $? in
	1) _rj_status='!EIO the job ended without a status (its waiter was killed)' ;;
	2) _rj_status='!NOJOB' ;;
	3) _rj_status='!DETACHED' ;;
	esac
	_rj_waiter=
	[ "$_rj_status" = '!DETACHED' ] || tail -c +$((_wj_off + 1)) "$_rj_job.out"
	if [ -z "$_rj_status" ]; then
		job_result "$_rj_job" "$3" "$4" "$5"
		_rj_status=$_jr_status
	fi
	finish "$_rj_status"
	# The job's FIFO goes with the rest (see run_job), unless the job
	# runs on.
	[ "$_rj_status" != '!DETACHED' ] || leave_fifo
	done_with "$seq"
}

# job_result JOB SAVE SAVE_BYTES SAVE_LINES sets _jr_status to the status
# of the ended job in JOB as attach_job sends it, saving its output first
# when it qualifies (see save_output). JOB.status has the status, the
# size of the output (see output_size) and, once the output was looked at
# for SAVE, " saved" or " unsaved".
job_result() {
	_jr_status=
	_so_saved=
	# (The line that starts with a space, wherever it is: a status of an
	# earlier version of this script has no size.)
	_jr_n=0
	while IFS= read -r _jr_line; do
		_jr_n=$((_jr_n + 1))
		case $_jr_n:$_jr_line in
		1:*) _jr_status=$_jr_line ;;
		*:' '*) _so_saved=$_jr_line ;;
		esac
	done <"$1.status"
	# A lost job's tombstone, being written as this looked (see
	# sweep_jobs, stop_job): no exit status.
	if [ "$_jr_status" = lost ]; then
		_jr_status='!EIO the job ended without a status (its waiter was killed)'
		return
	fi
	# (A job of an earlier version of this script says it in JOB.saved.)
	if [ -z "$_so_saved" ] && [ -n "$2" ] && [ -e "$1.saved" ]; then
		read -r _so_saved <"$1.saved"
		_so_saved=" $_so_saved"
	fi
	if [ -n "$_so_saved" ]; then
		# Sent before (that answer was lost): saved then.
		:
	elif [ -n "$2" ]; then
		# An output no longer than either limit, in bytes, has no more
		# lines than that either (a line takes a byte at least): no wc
		# for it when the relay knew its size.
		output_size "$1"
		_jr_size=$_os_size
		[ -n "$_jr_size" ] || _jr_size=$(($3 + 1))
		if [ "$_jr_size" -gt "$3" ] || [ "$_jr_size" -gt "$4" ]; then
			save_output "$1.out" "$2" "$3" "$4"
		fi
		if [ -n "$_so_saved" ]; then
			echo "$_so_saved" >>"$1.status"
			# The output is sent again from there, if need be.
			if [ "$_so_saved" = ' saved' ]; then ln -s -- "$2" "$1.out"; fi
		fi
	fi
	_jr_status=$_jr_status$_so_saved
}

# attach_jobs TTL ID OFFSET SAVE SAVE_BYTES SAVE_LINES [ID OFFSET ...]
# attaches to several jobs in one request: the calls of a client whose
# connection came back. It sends their output from each OFFSET on, as it
# comes, in frames: the line "D ID N", then N bytes of job ID's output (at
# most 1 MiB, so that no job holds up the others for long); and the line
# "X ID STATUS" once job ID has ended and all its output went (STATUS as
# attach_job's, or "!NOJOB"). Once every job has ended the answer ends
# with the status "OK". Meanwhile "k ID" kills job ID, "r" renews every
# lease (to TTL seconds), and "a ID OFFSET SAVE_BYTES SAVE_LINES SAVE" adds
# a job (one its client let go of on another server, see wait_job's "d"):
# one added as the answer ends is left out, and its client, which sees no
# "X" for it, attaches to it elsewhere. "d" ends the answer early, with the
# status "!DETACHED": the client wants this server for something else, and
# attaches again later. At the end of the request stream the jobs go on
# and this server ends, as in wait_job.
#
# The jobs' sizes come from one ls per look, paced as wait_job's stream
# (see pace), and at once again while a job has more than a frame
# waiting.
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
			echo "X $1 !GONE $_gone"
		else
			echo "X $1 !NOJOB"
		fi
		shift 5
	done
	attach_watcher "$_aj_dir" "$_aj_ttl" &
	_aj_watcher=$!
	_pc_idle=0
	_aj_rounds=0
	_aj_end=OK
	while :; do
		_aj_rounds=$((_aj_rounds + 1))
		# (See wait_job: a job with no server for seconds, 60 rounds.)
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
					echo "X $_aj_id !GONE $_gone"
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
				if [ -z "$_ji_waiter" ] && unstarted "$_aj_job" "$_aj_waited"; then
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
				_aj_n=$((_aj_size - _aj_off))
				if [ "$_aj_n" -gt 1048576 ]; then
					_aj_n=1048576
					_aj_full=yes
				fi
				# (The file held open first: a frame promises its bytes,
				# and the job's files may go meanwhile, collected by
				# another server or swept.)
				command exec 7<"$jobs/$_aj_id.out" || continue
				echo "D $_aj_id $_aj_n"
				tail -c +$((_aj_off + 1)) <&7 | head -c "$_aj_n"
				exec 7<&-
				printf '%s\n' $((_aj_off + _aj_n)) "$_aj_save" "$_aj_bytes" "$_aj_lines" >"$_aj_state"
				_aj_news=yes
			else
				case $_aj_ended in
				*" $_aj_id "*)
					job_result "$jobs/$_aj_id" "$_aj_save" "$_aj_bytes" "$_aj_lines"
					echo "X $_aj_id $_jr_status"
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
		pace "$_aj_news"
		sleep "$_pc_nap" 2>/dev/null || sleep 1
	done
	# The watcher goes, but not in the middle of a kill (see wait_job):
	# each marks what it does, then looks at the other's mark.
	# (At most about 10 s: a watcher killed by someone leaves its mark.)
	: >"$_aj_dir.ending"
	_aj_tries=0
	while [ -e "$_aj_dir.killing" ] && [ "$_aj_tries" -lt 200 ]; do
		_aj_tries=$((_aj_tries + 1))
		sleep 0.05 2>/dev/null || sleep 1
	done
	kill -s KILL "$_aj_watcher" 2>/dev/null
	wait "$_aj_watcher" 2>/dev/null
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

# attach_watcher DIR TTL reads the request stream while attach_jobs runs:
# "k ID" kills job ID, "r" renews the lease of each job in DIR, "a ..."
# adds a job to DIR, "d" stops the answer (see attach_jobs). At the end
# of the stream (the client is gone) it ends this server; the jobs go on.
attach_watcher() {
	while IFS= read -r _aw_line <&3; do
		case $_aw_line in
		r)
			for _aw_state in "$1"/*; do
				[ ! -f "$_aw_state" ] || renew "$jobs/${_aw_state##*/}" "$2"
			done
			;;
		"k "*)
			# (See attach_jobs: a kill is not cut short.)
			: >"$1.killing"
			[ -e "$1.ending" ] || kill_running "${_aw_line#k }"
			rm -f "$1.killing"
			;;
		d) : >"$1.stop" ;;
		"a "*)
			# a ID OFFSET SAVE_BYTES SAVE_LINES SAVE: one more job (SAVE,
			# the rest of the line, may hold spaces). Its state file is
			# renamed into place: the main loop reads it whole or not at all.
			_aw_rest=${_aw_line#a }
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
	[ -z "$3" ] || remove_files_bg -- $3
	set +f
	seq=$((seq + 1))
	_rs_dir=$private/group.$seq
	_rs_ttl=$1
	_rs_cap=$2
	if [ -z "$events" ]; then
		if ! mkfifo "$private/events" 2>/dev/null; then
			finish "!EIO cannot create $private/events"
			return
		fi
		exec 6<>"$private/events"
		events=$private/events
	fi
	if ! mkdir "$_rs_dir"; then
		finish "!EIO cannot create $_rs_dir"
		return
	fi
	group_watcher &
	_rs_watcher=$!
	# The jobs answered for (their state files stay: no rm for each).
	# (A job's "x" may come from an earlier answer of this server: one
	# whose job it let go of. There is no state file for it here.)
	_rs_done=' '
	# The FIFOs to remove (numbers, see group_fifo).
	_rs_fifos=
	while IFS= read -r _rs_event <&6; do
		case $_rs_event in
		e) break ;;
		q) exit 129 ;;
		"f "*) echo "X ${_rs_event#f }" ;;
		"u "*) _rs_fifos="$_rs_fifos ${_rs_event#u }" ;;
		"x "* | "d "*)
			_rs_id=${_rs_event#? }
			_rs_state=$_rs_dir/$_rs_id
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
			_rs_fifos="$_rs_fifos $_rs_fifo"
			# (The file held open first: see attach_jobs.)
			if command exec 7<"$_rs_job.out"; then
				output_size "$_rs_job"
				_rs_size=$_os_size
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
			echo "X $_rs_id $_jr_status"
			;;
		esac
	done
	wait "$_rs_watcher"
	# The ends of jobs let go of that came meanwhile are read now, up to
	# a mark of this request's own: none is left to fill the FIFO.
	echo z >&6
	while IFS= read -r _rs_event <&6 && [ "$_rs_event" != z ]; do :; done
	# (Jobs whose clients gave up waiting for the kill run on.)
	for _rs_state in "$_rs_dir"/*; do
		case $_rs_done in *" ${_rs_state##*/} "*) continue ;; esac
		[ -f "$_rs_state" ] || continue
		_rs_fifo=
		{ read -r _rs_fifo && read -r _rs_fifo && read -r _rs_fifo && read -r _rs_fifo; } <"$_rs_state"
		leave_group_fifo "$jobs/${_rs_state##*/}" "$_rs_fifo"
	done
	set --
	for _rs_fifo in $_rs_fifos; do
		set -- "$@" "$host_dir/fifo-$$-g$seq-$_rs_fifo"
		case $_rs_fifo in *.left) ;; *) set -- "$@" "$host_dir/fifo-$$-g$seq-$_rs_fifo.dd" "$host_dir/fifo-$$-g$seq-$_rs_fifo.k" ;; esac
	done
	rm -rf "$_rs_dir" "$@"
	finish OK
}

# leave_group_fifo JOB N leaves FIFO N of run_jobs (group_fifo), the
# FIFO of JOB, which runs on, to the job's waiter (as leave_fifo), or adds
# it to those the answer removes when the job has ended meanwhile.
leave_group_fifo() {
	[ -n "$2" ] || return 0
	: >"$host_dir/fifo-$$-g$seq-$2.left"
	[ -s "$1.status" ] && _rs_fifos="$_rs_fifos $2 $2.left"
}

# group_watcher reads the request stream while run_jobs runs: it starts
# the jobs added (add_job) and passes what the answer must hear on to it
# through the events FIFO (fd 6), in order.
group_watcher() {
	_gf_spare=
	_gf_n=0
	while IFS= read -r _gw_line <&3; do
		case $_gw_line in
		"$marker"'add_job '*)
			if ! fence_in; then
				echo q >&6
				return
			fi
			command eval "${_gw_line#"$marker"}"
			fence_out
			;;
		r)
			# (Those answered for too: they are few, and a lease of an
			# ended job is not looked at.)
			for _gw_state in "$_rs_dir"/*; do
				[ ! -e "$jobs/${_gw_state##*/}.lease" ] || renew "$jobs/${_gw_state##*/}" "$_rs_ttl"
			done
			;;
		"k "*) kill_running "${_gw_line#k }" ;;
		"d "*) ! hex "${_gw_line#d }" || echo "$_gw_line" >&6 ;;
		e)
			# The FIFOs made ahead and not used go with the answer's rm.
			[ -z "$_gf_spare" ] || echo "u $_gf_spare" >&6
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
		echo "f $1 !GONE $_gone" >&6
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
	if ! { echo "$_rs_ttl" >"$_gj_job.lease"; } 2>/dev/null; then
		rm -f -- "$_gj_job".*
		printf 'f %s !EIO cannot create a job in %s\n' "$1" "$jobs" >&6
		return
	fi
	printf '%s %s\n%s\n' "$$" "$host_id" "${7%%"$nl"*}" >"$_gj_job.server"
	printf '%s\n' "$4" "$5" "$6" "${_gf_spare%% *}" >"$_rs_dir/$1"
	start_job "$_gj_job" "$2" "$3" "$host_dir/fifo-$$-g$seq-${_gf_spare%% *}" "$_rs_cap" "$_rs_ttl" "$events"
	case $_gf_spare in
	*' '*) _gf_spare=${_gf_spare#* } ;;
	*) _gf_spare= ;;
	esac
}

# group_fifo makes sure a FIFO made ahead for run_jobs' jobs is there: the
# first number of _gf_spare, which names $host_dir/fifo-PID-gSEQ-N (in the
# jobs directory, as run_job's: a job may open it after this server is
# gone). They are made eight at a time: one mkfifo for eight jobs.
group_fifo() {
	[ -z "$_gf_spare" ] || return 0
	set --
	while [ "$#" -lt 8 ]; do
		_gf_n=$((_gf_n + 1))
		set -- "$@" "$host_dir/fifo-$$-g$seq-$_gf_n"
		_gf_spare="$_gf_spare $_gf_n"
	done
	_gf_spare=${_gf_spare# }
	mkfifo "$@" 2>/dev/null && return 0
	_gf_spare=
	rm -f "$@"
	return 1
}

# kill_running ID kills job ID (the line "k ID" of attach_jobs and
# run_jobs) if there is such a job, it has not ended, and its process is
# proven its own (job_process).
kill_running() {
	hex "$1" || return
	[ -e "$jobs/$1.out" ] && job_process "$jobs/$1" && kill_job "$_jp_pid" "$jobs/$1"
}

# forget_jobs ID... removes the files of ended jobs whose client has
# their results: no start of theirs will come again.
forget_jobs() {
	remove_files -- "$@"
}

# remove_files FILE... [-- ID...] removes the FILEs (empty words aside)
# and the files of the jobs ID (forget_jobs), with one rm;
# remove_files_bg, with one rm in the background.
remove_files_bg() {
	_rmf_bg=yes
	remove_files "$@"
}

remove_files() {
	_rmf_ids=
	for _rmf_arg in "$@"; do
		shift
		if [ -n "$_rmf_ids" ]; then
			case $_rmf_arg in
			*[!0-9a-f]* | '') ;;
			# Named, not globbed: a glob reads the whole directory, which
			# holds the files of every job in flight (on a host serving
			# many, a read per job forgotten adds up). Its output first:
			# the job is gone for attach_job at once.
			*) eval "set -- \"\$@\" $job_words" ;;
			esac
		elif [ "$_rmf_arg" = -- ]; then
			_rmf_ids=yes
		elif [ -n "$_rmf_arg" ]; then
			set -- "$@" "$_rmf_arg"
		fi
	done
	if [ -n "$_rmf_exec" ]; then
		_rmf_exec=
		[ "$#" = 0 ] || exec rm -f "$@"
	elif [ -n "$_rmf_bg" ]; then
		_rmf_bg=
		[ "$#" = 0 ] || rm -f "$@" 3<&- &
	else
		[ "$#" = 0 ] || rm -f "$@"
	fi
}

# forget ID...: forget_jobs as a request of its own (a client closing):
# "OK".
forget() {
	forget_jobs "$@"
	echo OK
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
		printf '%s\t%s\t%s\n' "${_lj_job##*/}" "$_lj_status" "$_ji_label"
	done
	stat -c 'T %Y %n' -- "$jobs"/*.server
}

# stop_job ID kills job ID when it runs (its status then says "killed"),
# or buries it (see bury) when it has ended and nobody collected it, or
# when it is lost (see job_process; its status then says "lost"): its
# client, coming back, learns how it ended and never runs it again. "OK
# killed", "OK removed" (a tombstone is left as it is), "E ENOENT" when
# there is no such job, or "E EIO message" when it cannot be killed from
# here (see refused) or is between its command's end and its status.
stop_job() {
	_stj_job=$jobs/$1
	if hex "$1" && gone "$_stj_job"; then
		# (Its tombstone stays: a start or attach of its client, late,
		# learns how it ended instead of running it.)
		echo 'OK removed'
	elif ! hex "$1" || [ ! -e "$_stj_job.out" ]; then
		echo 'E ENOENT no such job'
	elif job_process "$_stj_job"; then
		echo killed >"$_stj_job.killed"
		kill_job "$_jp_pid" "$_stj_job"
		echo 'OK killed'
	elif ! refused "$1"; then
		[ "$_jp_why" != ended ] || wait_status "$_stj_job"
		if [ "$_jp_why" = lost ] || [ -s "$_stj_job.status" ]; then
			[ -s "$_stj_job.status" ] || echo lost >"$_stj_job.status"
			bury "$_stj_job"
			echo 'OK removed'
		else
			echo 'E EIO the job has no process id or no status yet: try again'
		fi
	fi
}

# refused ID (after job_process failed) prints the error line and is true
# when job ID may not be killed from here: it runs on another host sharing
# the jobs directory, or this host has no /proc to prove its process by.
refused() {
	case $_jp_why in
	elsewhere) printf 'E EIO job %s runs on %s, another host sharing the jobs directory\n' "$1" "$_ji_host" ;;
	unproven) echo 'E EIO this host has no /proc (nor ps -o -p) to prove the job'"'"'s process by' ;;
	*) return 1 ;;
	esac
}

# wait_status JOB waits up to about 5 seconds for job JOB's status (or for
# the job to be forgotten).
wait_status() {
	_ws_tries=0
	while [ -e "$1.out" ] && [ ! -s "$1.status" ] && [ "$_ws_tries" -lt 100 ]; do
		sleep 0.05 2>/dev/null || sleep 1
		_ws_tries=$((_ws_tries + 1))
	done
}

# cancel_job ID kills job ID, whose client gave up on it while the
# connection was down, and removes its files once its waiter has written
# the status (within about 5 seconds), or at once when it is lost: "OK".
# A job the host does not have is made one that never runs.
# A job that may not be killed from here (refused) keeps its files, and
# its lease, no longer renewed, ends it on its host: "E EIO message".
cancel_job() {
	if ! hex "$1"; then
		echo 'E ENOENT no such job'
		return
	fi
	# Nothing to kill: it never started here, or its client has its
	# result, or only its tombstone is left, which stays. One that never
	# started gets a tombstone ("lost") that a start arriving late finds
	# ("!GONE lost"): it never runs. (Of a start and this, whoever creates
	# ID.status first decides, as of a waiter and unstarted.)
	if [ ! -e "$jobs/$1.out" ]; then
		set -C
		{ echo lost >"$jobs/$1.status"; } 2>/dev/null
		set +C
		echo OK
		return
	fi
	if job_process "$jobs/$1"; then
		kill_job "$_jp_pid" "$jobs/$1"
	elif refused "$1"; then
		return
	fi
	[ "$_jp_why" = lost ] || wait_status "$jobs/$1"
	forget_jobs "$1"
	echo OK
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

# start_job JOB SCRIPT DIR FIFO CAP TTL [EVENTS [NEWS]] starts the waiter
# of a new job (see run_job) and sets _rj_waiter. With NEWS, the server's
# fd 8 is open on the news FIFO, which the waiter writes to (see
# supervise) and closes as it ends; others do not get it. The waiter starts the keeper
# (see keep) and the relay, supervises them (see supervise) and writes
# the job's status, one short write of a whole line: readers wait for the
# file to be non-empty. With EVENTS (the FIFO of run_jobs) it then writes
# "x ID" there.
start_job() {
	(
		# The job's status file, made here (empty until the job ends),
		# is the waiter's claim: an attacher that found this job's server
		# dead may have given up on the job first (see unstarted), and a
		# job's tombstone is that file (see bury). Then the waiter only
		# removes what it was given to (see below).
		set -C
		if ! { command : >"$1.status"; } 2>/dev/null; then
			[ -z "$_sj_hand" ] || remove_done exec
			exit 0
		fi
		set +C
		# (A claim that came after an attacher gave up on the job and
		# removed its files, output first, is no claim.)
		if [ ! -e "$1.out" ]; then
			[ -z "$_sj_hand" ] || remove_done exec "$1.status"
			exec rm -f "$1.status"
		fi
		trap '' HUP PIPE
		# The waiter's pid, the third line of JOB.server (see job_info),
		# written by the waiter itself: the command's pid, which the
		# waiter (or its keeper) adds once the command runs, comes after
		# it.
		own_pid
		echo "$_sv_self" >>"$1.server"
		# (Judged lost meanwhile, had this waiter stopped here for a
		# minute, see job_lost: the command never runs.)
		[ ! -s "$1.status" ] || exit 0
		# The command is the waiter's own child (see supervise), or a
		# keeper's where it needs one (see keep). (Closed by exec in the
		# child: a redirection of a function's call, as "keep 8>&-", keeps
		# a copy of the fd in dash, to restore after the call, which would
		# hold the news FIFO open.) No open of the FIFO waits for another
		# process, which may be killed meanwhile: the waiter holds it open
		# read-write (fd 5, which never waits) while the child opens it to
		# write and the waiter to read, and the child closes its copy
		# once its output is open. The waiter then holds the reading end
		# (see start_relay).
		exec 5<>"$4"
		if [ -z "$keeper" ]; then
			(
				exec 5>&- 8>&-
				exec_command "$1" "$2" "$3"
			) >"$4" 2>&1 &
			_sj_child=$!
			echo "$_sj_child" >>"$1.server"
			_sj_keeper=
		else
			(
				exec 5>&- 8>&-
				keep "$1" "$2" "$3" "$4.k"
			) >"$4" 2>&1 &
			_sj_child=$!
			_sj_keeper=$_sj_child
		fi
		exec 4<"$4" 5>&-
		supervise "$1" "$_sj_child" "$_sj_keeper" "$5" "$6" "$8" "$4"
		# (A kill by stop_job says so in JOB.killed; the waiter's own, in
		# _sv_reason.)
		_sj_reason=$_sv_reason
		[ ! -e "$1.killed" ] || read -r _sj_reason <"$1.killed"
		# (A kill that came as the command ended on its own did not end
		# it: its status is its own.)
		case $_sj_reason in lease | killed) [ "$_sv_status" = 137 ] || _sj_reason= ;; esac
		# Output cut at the cap: the command, writing on, got SIGPIPE
		# (141), or an error it may have ignored (whatever its status,
		# its output is not all there).
		if [ -z "$_sj_reason" ] && [ -n "$_sv_capped" ]; then
			_sj_reason=capped
		fi
		# The status, then the size of the output when the relay knew it
		# (see output_size): one short write.
		_sj_size=
		[ "$_sv_output" != all ] || _sj_size=$_sv_size
		echo "$_sv_status${_sj_reason:+ $_sj_reason}$nl$_sj_size" >"$1.status"
		# Opened read-write, the FIFO never blocks: its server may be gone
		# (and then so is the FIFO, or nobody reads what is written).
		[ -z "$7" ] || echo "x ${1##*/}" 1<>"$7"
		# The FIFO goes with the server's next files, unless that server
		# let go of the job (see leave_fifo). The waiter of run_job
		# (_sj_hand) removes what the server's last requests left, with
		# the rm it becomes: no fork for it.
		exec 8>&-
		if [ -e "$4.left" ]; then set -- "$4" "$4.left" "$4.dd" "$4.k"; else set --; fi
		if [ -n "$_sj_hand" ]; then
			remove_done exec "$@"
		elif [ "$#" != 0 ]; then
			exec rm -f "$@"
		fi
	) </dev/null >/dev/null 2>&1 3<&- 6<&- &
	_rj_waiter=$!
}

# own_pid sets _sv_self to the pid of the shell that runs it (a
# subshell's $$ is its parent's).
own_pid() {
	if [ -n "$procfs" ]; then
		read -r _sv_self _ </proc/self/stat
	else
		_sv_self=$(exec sh -c 'echo "$PPID"')
	fi
}

# exec_command JOB SCRIPT DIR, in the job's child, becomes SCRIPT run with
# sh -c in DIR (the home directory when empty), in its own session when
# the host has setsid.
exec_command() {
	# The command gets the signal dispositions of any other (the waiter's
	# ignored HUP and PIPE are its own, the server's USR1 its own too).
	trap - HUP PIPE USR1
	# (A DIR "-" would be $OLDPWD to cd, even after "--".)
	case $3 in
	'') ;;
	-*) cd "./$3" || exit 126 ;;
	*) cd "$3" || exit 126 ;;
	esac
	_ec_job=$1
	_ec_script=$2
	shift 3
	# In a scope of its own, named after the job, where the user's
	# systemd has scopes (see user_scope and scope_wrapper).
	if [ -n "$scope" ]; then
		set -- sh -c "$scope_wrapper" sh "pi-remote-${_ec_job##*/}"
	fi
	# One argument may not exceed 128 KiB on Linux: a longer script is
	# read from a file (it then sees that file as $0).
	if [ "${#_ec_script}" -le 65536 ]; then
		exec $setsid_cmd "$@" sh -c "$_ec_script"
	fi
	printf '%s\n' "$_ec_script" >"$_ec_job.script" || exit 126
	# shellcheck disable=SC2016 # expanded by the inner sh
	exec $setsid_cmd "$@" sh -c '. "$0"' "$_ec_job.script"
}

# keep JOB SCRIPT DIR FILE, the keeper, where the waiter cannot wait for
# the command itself (see read_host): runs the command (exec_command),
# adds its pid to JOB.server (the fourth line, see job_info) and waits for
# it, then writes its exit status in FILE (beside the job's FIFO, and gone
# with it, see remove_done). A plain wait, with no trap set,
# reports an exit status right in every shell. The waiter's waits are cut
# short by its trap on CHLD: bash then loses the status of the child it
# reaped; and without /proc, the waiter cannot tell its timers' zombies
# from the living, and so calls jobs, which makes dash forget the status
# of a child it reaped (see supervise).
keep() {
	exec_command "$1" "$2" "$3" &
	echo "$!" >>"$1.server"
	# (The output is the command's: what the shell says of it, as
	# "Killed", is not.)
	exec >/dev/null 2>&1
	wait "$!"
	echo "$?" >"$4"
}

# supervise JOB CHILD KEEPER CAP TTL NEWS FIFO: the waiter's work while
# job JOB runs, with fd 4 open on the reading end of the job's FIFO (the
# path FIFO; the keeper's and the relay's reports are beside it, FIFO.k
# and FIFO.dd, and go with it). With NEWS,
# fd 8 is the news FIFO of the server that started the job (see
# attach_job): once the command runs on past its first moments, the
# waiter says so there, "long", and closes it (see tell_long). It starts
# the relay (see start_relay), waits for CHILD, its child that is the
# command, or without /proc its KEEPER (see keep), and holds the
# job's lease from the start: every TTL/3 seconds (at least 1, at most 60)
# a timer, the waiter's own child, ends, and the lease file is read; a
# lease whose content has not changed (renew changes it) for TTL seconds
# (up to a period more) is a client that is gone, and the command is
# killed (_sv_reason "lease"). Then it waits for the relay, which ends with the
# output a moment after the command, unless children the command left
# behind hold the FIFO open: those get GRACE seconds before the relay is
# stopped (they then get SIGPIPE, as they would locally). Sets _sv_status
# to the command's exit status, and _sv_size to the size of the output
# when the relay knew it (_sv_output "all").
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
	# (_sv_self, the waiter's pid, is set: see start_job.)
	_sv_job=$1
	_sv_fifo=$7
	_sv_reason=
	_sv_keeper=$3
	_sv_cap=$4
	_sv_cmd=
	[ -n "$3" ] || _sv_cmd=$2
	_sv_ended=
	_sv_ttl=$5
	_sv_news=$6
	_sv_period=$(($5 / 3))
	[ "$_sv_period" -ge 1 ] || _sv_period=1
	[ "$_sv_period" -le 60 ] || _sv_period=60
	_sv_silent=0
	_sv_seen=
	read -r _sv_seen <"$1.lease"
	_sv_timer=
	_sv_cutting=
	_sv_relay=
	_sv_output=
	_sv_capped=
	_sv_probe=
	_sv_size=0
	_tk_busy=
	_tk_again=
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
		sleep "$_sv_period" 4<&- 8>&- 9<&- &
		_sv_timer=$!
		tell_long
	fi
	while child_alive "$2"; do
		wait "$2"
	done
	_sv_pid=$_sv_cmd
	_sv_status=
	if [ -n "$3" ]; then
		job_info "$1"
		_sv_pid=$_ji_pid
		read -r _sv_status <"$7.k"
		# (A keeper killed by someone: the command's status is unknown.)
		digits "$_sv_status" || _sv_status='255 lost'
	else
		_tk_hit=yes
		while [ -n "$_tk_hit" ]; do
			_tk_hit=
			wait "$2"
			_sv_status=$?
		done
	fi
	# (What the trap left undone meanwhile.)
	_sv_ended=yes
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
	while [ -n "$_sv_relay" ] && [ "$_sv_spin" -lt 40 ]; do
		jobs >/dev/null 2>&1
		tick
		_sv_spin=$((_sv_spin + 1))
	done
	if [ -n "$_sv_relay" ]; then
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
		_sv_old=$_sv_timer
		_sv_timer=
		kill_child "$_sv_old"
		tell_long
		sleep "$_sv_grace" 4<&- 8>&- 9<&- &
		_sv_timer=$!
		_sv_cutting=yes
		while [ -n "$_sv_relay" ]; do
			wait "$_sv_relay"
			tick
		done
	fi
	trap - CHLD
	kill_child "$_sv_timer"
	_sv_timer=
}

# tell_long tells the server that started the job, if it waits for news
# (see supervise), that the job runs on: it then follows it as a long one.
# What this waiter was to remove as it ends (see start_job) goes now, in
# the background: the files of jobs the client has collected go as soon
# as the client says so, whatever the next command.
tell_long() {
	if [ -n "$_sv_news" ]; then
		_sv_news=
		echo long >&8
		exec 8>&-
	fi
	if [ -n "$_sj_hand" ]; then
		_sj_hand=
		remove_done bg
	fi
}

# tick, the waiter's trap on CHLD (see supervise), runs on_timer. A trap
# runs between any two commands, also in the middle of a function
# supervise is running (child_alive, kill_child), and again from within
# itself when a child ends meanwhile: tick keeps the variable it shares
# with them (child_alive's) as it found it, and a tick that comes while
# one runs only asks it to look again (the timer it started may have
# ended meanwhile, and no other child ending would bring the trap back).
tick() {
	_tk_hit=yes
	# (A command reaped, and its status not read yet: see supervise.)
	if [ -z "$_sv_ended" ] && [ -n "$_sv_cmd" ] && [ -z "$_sv_keeper" ] && ! kill -s 0 "$_sv_cmd" 2>/dev/null; then
		return 0
	fi
	if [ -n "$_tk_busy" ]; then
		_tk_again=yes
		return 0
	fi
	_tk_busy=yes
	_tk_cal=$_cal_stat
	_tk_again=yes
	while [ -n "$_tk_again" ]; do
		_tk_again=
		# (Without /proc, a child that ended is a zombie, alive to
		# child_alive, until reaped: the relay's end would wait for the
		# next timer. There is a keeper then, see read_host.)
		[ -n "$procfs" ] || jobs >/dev/null 2>&1
		on_relay
		on_timer
	done
	_cal_stat=$_tk_cal
	_tk_busy=
	# (A tick between the loop's last test and here asked in vain.)
	[ -z "$_tk_again" ] || tick
}

# on_timer: when the waiter's timer has ended, reads the lease (while the
# command runs) and starts the next timer, or stops the relay (once the
# grace is over: _sv_cutting).
on_timer() {
	[ -n "$_sv_timer" ] || return 0
	! child_alive "$_sv_timer" || return 0
	_sv_timer=
	if [ -n "$_sv_cutting" ]; then
		# Output stops now: nobody reads the FIFO any more.
		_sv_output=stopped
		exec 4<&-
		kill_child "$_sv_relay"
		return 0
	fi
	# (The command's pid, once, while the file is surely there.)
	[ -n "$_sv_cmd" ] || command_runs || :
	_tk_lease=
	read -r _tk_lease <"$_sv_job.lease" 2>/dev/null
	if [ "$_tk_lease" != "$_sv_seen" ]; then
		_sv_seen=$_tk_lease
		_sv_silent=0
	else
		_sv_silent=$((_sv_silent + _sv_period))
		# (A change seen at a tick came at most a period before it: one
		# tick more makes the silence TTL at least.)
		if [ "$_sv_silent" -gt "$_sv_ttl" ] && [ -z "$_sv_reason" ] && [ ! -e "$_sv_job.killed" ] && command_runs; then
			_sv_reason=lease
			kill_job "$_tk_pid" "$_sv_job"
		fi
	fi
	# The job's empty status (the waiter's claim: nobody else writes it
	# while the waiter lives) is made new: a sweep of an earlier version
	# of this script, which took an old status for an ended job's, leaves
	# it alone.
	[ -s "$_sv_job.status" ] || [ ! -e "$_sv_job.out" ] || : >"$_sv_job.status"
	sleep "$_sv_period" 4<&- 8>&- 9<&- &
	_sv_timer=$!
}

# command_runs (in on_timer) sets _tk_pid to the pid of the job's
# command and is true while the command has not ended: it is the waiter's
# child and alive (child_alive); or, without /proc, the keeper runs and has
# not written its status. The pid is kept once read (_sv_cmd): the job's
# files may go while it runs (those of a server's private directory, swept
# after that server was killed), and its lease must hold all the same.
command_runs() {
	_tk_pid=$_sv_cmd
	if [ -z "$_sv_keeper" ]; then
		[ -z "$_sv_ended" ] && child_alive "$_sv_cmd"
		return
	fi
	if [ -z "$_sv_cmd" ]; then
		job_info "$_sv_job"
		_sv_cmd=$_ji_pid
	fi
	_tk_status=
	[ ! -e "$_sv_fifo.k" ] || read -r _tk_status <"$_sv_fifo.k"
	[ -n "$_sv_cmd" ] && [ -z "$_tk_status" ] || return 1
	_tk_pid=$_sv_cmd
	child_alive "$_sv_keeper"
}

# child_alive PID: true while PID, a child of the waiter (its timer or
# relay), has not ended: kill -0 finds it, and where there is /proc, its
# parent is the waiter (_sv_self; a pid reaped a moment ago may already be
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
	_cal_stat=
	_cal_tries=0
	while :; do
		read -r _cal_stat <"/proc/$1/stat" 2>/dev/null
		_cal_tries=$((_cal_tries + 1))
		case $_cal_stat in '') ;; *) break ;; esac
		case $_cal_tries in 100) break ;; esac
	done
	# (None after all: not proven this waiter's child.)
	_cal_stat=${_cal_stat##*) }
	case $_cal_stat in '' | Z* | X*) return 1 ;; esac
	_cal_stat=${_cal_stat#* }
	case ${_cal_stat%% *} in "$_sv_self") return 0 ;; esac
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
	if [ -z "$_sv_cap" ]; then
		cat <&4 >>"$_sv_job.out" 4<&- 8>&- 9<&- &
		_sv_relay=$!
		_sv_size=
		exec 4<&-
		return
	fi
	_sv_count=$((($1 + 65535) / 65536))
	relay_dd 65536 "$_sv_count" "$_sv_job.out"
}

# start_probe starts the relay's last round once the output has reached
# the CAP: one byte more, thrown away. It comes if the command writes on
# (its output is cut: _sv_capped); the end of the output comes if it had
# written everything already, by less than a block past the CAP, which
# then went all to JOB.out (not cut).
start_probe() {
	_sv_probe=yes
	relay_dd 1 1 /dev/null
}

# relay_dd BS COUNT OUT starts the relay's dd: COUNT reads of at most BS
# bytes from the FIFO (fd 4), appended to OUT, its report in FIFO.dd,
# which the waiter holds open on fd 9 (see start_relay).
relay_dd() {
	: >"$_sv_fifo.dd"
	command exec 9<"$_sv_fifo.dd"
	dd bs="$1" count="$2" <&4 >>"$3" 2>"$_sv_fifo.dd" 4<&- 8>&- 9<&- &
	_sv_relay=$!
}

# read_report sets _rl_reads to the reads dd made, "" when its report
# says nothing of them, and _rl_bytes to the bytes it copied when it says
# (GNU: "N bytes ... copied"), from fd 9 (see start_relay), then from
# FIFO.dd while it is there. (GNU dd may warn about partial reads first.
# A read cut short by a signal, as BusyBox's is, comes back with nothing:
# the report is read again, up to three times, before it is taken as
# none.)
read_report() {
	_rl_reads=
	_rl_tries=0
	while [ -z "$_rl_reads" ] && [ "$_rl_tries" -lt 3 ]; do
		_rl_tries=$((_rl_tries + 1))
		_rl_bytes=
		if [ "$_rl_tries" = 1 ]; then
			command exec 7<&9 9<&- || continue
		else
			command exec 7<"$_sv_fifo.dd" || break
		fi
		while IFS= read -r _rl_line; do
			case $_rl_line in
			[0-9]*+[0-9]*' records in')
				_rl_line=${_rl_line%% *}
				_rl_reads=$((${_rl_line%+*} + ${_rl_line#*+}))
				;;
			[0-9]*' byte'*)
				_rl_bytes=${_rl_line%% *}
				case $_rl_bytes in *[!0-9]*) _rl_bytes= ;; esac
				;;
			esac
		done <&7
		exec 7<&-
	done
}

# on_relay (in tick): once the relay has ended, reads dd's report: at the
# end of the output the output is done (_sv_output, and the waiter's end
# of the FIFO closed: a command writing on gets SIGPIPE); at the count
# short of the CAP, the next round starts; at the CAP, the probe (see
# start_probe), and then the output is done. A dd that does not report
# leaves the rest to cat, without a cap. Where dd reports the bytes it
# copied, _sv_size adds them up: the size of the whole output, which
# job_result then needs no wc for.
on_relay() {
	[ -n "$_sv_relay" ] || return 0
	! child_alive "$_sv_relay" || return 0
	_sv_relay=
	# (Stopped, or a cat: that was all.)
	if [ -n "$_sv_output" ] || [ -z "$_sv_cap" ]; then
		_sv_output=${_sv_output:-all}
		return 0
	fi
	read_report
	if [ -n "$_sv_probe" ]; then
		# (No report: the output passed the CAP, cut or not.)
		[ "${_rl_reads:-1}" = 0 ] || _sv_capped=yes
		_sv_output=all
		exec 4<&-
		return 0
	fi
	if [ -z "$_rl_reads" ]; then
		_sv_cap=
		start_relay
		return 0
	fi
	if [ -n "$_rl_bytes" ] && [ -n "$_sv_size" ]; then
		_sv_size=$((_sv_size + _rl_bytes))
	else
		_sv_size=
	fi
	if [ "$_rl_reads" -lt "$_sv_count" ]; then
		_sv_output=all
		exec 4<&-
		return 0
	fi
	# (The output gone meanwhile, its job forgotten by a late cancel: no
	# size, and the relay goes on to its end. An empty $(( )) would end
	# this waiter, and leave the command running without its lease.)
	_rl_size=$(wc -c <"$_sv_job.out" 2>/dev/null)
	_rl_size=${_rl_size##*[!0-9]}
	_rl_left=$((_sv_cap + 1 - ${_rl_size:-0}))
	if [ "$_rl_left" -gt 0 ]; then
		start_relay "$_rl_left"
	else
		start_probe
	fi
}

# output_size JOB sets _os_size to the size of the ended job's output
# as its waiter wrote it (the second line of JOB.status), or to "" when
# it did not know it.
output_size() {
	_os_size=
	{ read -r _ && read -r _os_size; } <"$1.status"
	case $_os_size in *[!0-9]*) _os_size= ;; esac
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
# sets _so_saved to " saved", " unsaved" (the move failed) or "" (not
# needed).
save_output() {
	_so_saved=
	# (Saved already: FILE is the link to DEST. Moved again, it would
	# take DEST's place, a link to itself.)
	if [ -L "$1" ]; then
		_so_saved=' saved'
		return
	fi
	_so_counts=$(wc -lc <"$1") || return
	# shellcheck disable=SC2086 # "lines bytes"
	set -- "$1" "$2" "$3" "$4" $_so_counts
	if [ "$5" -eq "$4" ] && [ -n "$(tail -c 1 "$1")" ]; then
		set -- "$1" "$2" "$3" "$4" $(($5 + 1)) "$6"
	fi
	if [ "$6" -gt "$3" ] || [ "$5" -gt "$4" ]; then
		if chmod 600 "$1" && mv -f -- "$1" "$2" 2>/dev/null; then _so_saved=' saved'; else _so_saved=' unsaved'; fi
	fi
}

# readable PATH: true for a regular file this user may read; otherwise
# false, having printed "E CODE message" (what read_head and open_file
# answer then: "E ENOTREG" for a FIFO or a device, whose reads may not
# end).
readable() {
	if [ -d "$1" ]; then
		echo 'E EISDIR is a directory'
	elif [ ! -e "$1" ]; then
		report_missing "$1"
	elif [ ! -r "$1" ]; then
		echo 'E EACCES permission denied'
	elif [ ! -f "$1" ]; then
		echo 'E ENOTREG not a regular file'
	else
		return 0
	fi
	return 1
}

# read_head PATH BYTES: "OK" and the first BYTES bytes of PATH (all of it
# when it is shorter), or "E CODE message"; then the status 0, or "E CODE
# message" when reading failed part way (or head lacks -c). Not a job: it
# reads no more than BYTES of a regular file, so it may be sent behind
# other requests; the client reads a longer file with open_file.
read_head() {
	if ! digits "$2"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	if readable "$1"; then
		echo OK
		if ! LC_ALL=C head -c "$2" -- "$1" 2>"$private/err"; then
			finish "$(error_from_stderr 'read failed')"
			return
		fi
	fi
	finish 0
}

# open_file PATH [OFFSET]: "OK" and the bytes of PATH (from byte OFFSET on)
# as they are read (a job, so the client may stop it), or "E CODE
# message" (see readable). The final status is 0, or "E CODE
# message" when reading failed part way.
open_file() {
	if ! digits "${2:-0}"; then
		finish '!PROTOCOL malformed request'
		return
	fi
	if readable "$1"; then
		echo OK
		if [ "${2:-0}" -gt 0 ]; then
			# The rest of a read whose connection was lost.
			LC_ALL=C tail -c +$(($2 + 1)) -- "$1" 2>"$private/err" 3<&- &
		else
			LC_ALL=C cat -- "$1" 2>"$private/err" 3<&- &
		fi
		wait_child "$!"
		if [ "$job_status" != 0 ]; then
			finish "$(error_from_stderr 'read failed')"
			return
		fi
	fi
	finish 0
}

# error_from_message MESSAGE prints "E CODE MESSAGE" with the errno name
# that MESSAGE (an English strerror text) stands for.
error_from_message() {
	case $1 in
	*'ermission denied'* | *'peration not permitted'*) _efm_code=EACCES ;;
	*'o such file'* | *'irectory nonexistent'* | *'onexistent directory'*) _efm_code=ENOENT ;;
	*'ot a directory'*) _efm_code=ENOTDIR ;;
	*'s a directory'*) _efm_code=EISDIR ;;
	*'ile exists'*) _efm_code=EEXIST ;;
	*'o space left'*) _efm_code=ENOSPC ;;
	*'ile name too long'*) _efm_code=ENAMETOOLONG ;;
	*'ead-only file system'*) _efm_code=EROFS ;;
	*'uota exceeded'*) _efm_code=EDQUOT ;;
	*'oo many levels of symbolic links'*) _efm_code=ELOOP ;;
	*) _efm_code=EIO ;;
	esac
	printf 'E %s %s\n' "$_efm_code" "$1"
}

# error_from_stderr DEFAULT maps the first line of $private/err (where the
# failed operation wrote its complaint), or DEFAULT when it is empty. A
# command whose own redirection may fail names 2>"$private/err" first: the
# shell reports a failed redirection on the stderr it has at that moment.
error_from_stderr() {
	_efs_line=
	IFS= read -r _efs_line <"$private/err"
	error_from_message "${_efs_line:-$1}"
}

# report_missing PATH prints why PATH cannot be found: an ancestor that is
# not a directory, one that may not be searched, or plain absence.
report_missing() {
	_rm_path=${1%/*}
	while [ -n "$_rm_path" ] && [ ! -e "$_rm_path" ]; do _rm_path=${_rm_path%/*}; done
	_rm_path=${_rm_path:-/}
	if [ ! -d "$_rm_path" ]; then
		echo 'E ENOTDIR not a directory'
	elif [ ! -x "$_rm_path" ]; then
		echo 'E EACCES permission denied'
	else
		echo 'E ENOENT no such file or directory'
	fi
}

# follow_links PATH [guard] sets _f to PATH with every symlink at its end
# followed, even to a target that does not exist (where a write creates
# the file). With "guard" it follows, as the kernel's
# fs.protected_symlinks would, no link that sits in a sticky
# world-writable directory (/tmp) and belongs to neither this user nor
# that directory's owner: there, another user's link could aim a write at
# any file of this user's. On failure (that, or over 40 links) it sets
# _fl_error to the error line and returns 1.
follow_links() {
	_f=$1
	_fl_n=0
	_fl_error='E ELOOP too many levels of symbolic links'
	while :; do
		if [ -n "$2" ] && ! dirs_followable "$_f"; then
			_fl_error='E EACCES not following a symbolic link of another user in a shared sticky directory on the way to the file'
			return 1
		fi
		[ -L "$_f" ] || break
		_fl_n=$((_fl_n + 1))
		[ "$_fl_n" -le 40 ] || return 1
		if [ -n "$2" ] && ! followable "$_f"; then
			_fl_error='E EACCES not following a symbolic link of another user in a shared sticky directory'
			return 1
		fi
		_fl_link=$(readlink "$_f" && echo x) || return 1
		_fl_link=${_fl_link%"${nl}x"}
		case $_fl_link in
		/*) _f=$_fl_link ;;
		*) _f=${_f%/*}/$_fl_link ;;
		esac
	done
}

# dirs_followable PATH: false when a directory on the way to PATH's last
# name is reached through a symbolic link that followable refuses (as the
# kernel's fs.protected_symlinks would on every link it follows): a link
# on PATH itself, or on the way through a link's target. Only links are
# looked at more closely.
dirs_followable() {
	_df_hops=0
	case $1 in
	/*) _df_at='' _df_rest=${1#/} ;;
	*) _df_at=. _df_rest=$1 ;;
	esac
	while :; do
		case $_df_rest in
		*/*)
			_df_part=${_df_rest%%/*}
			_df_rest=${_df_rest#*/}
			;;
		*) return 0 ;;
		esac
		[ -n "$_df_part" ] || continue
		_df_at=$_df_at/$_df_part
		[ -L "$_df_at" ] || continue
		followable "$_df_at" || return 1
		# On through the link's target, whose own links are judged too
		# (over 40: the kernel's ELOOP will tell).
		_df_hops=$((_df_hops + 1))
		[ "$_df_hops" -le 40 ] || return 0
		_df_link=$(readlink "$_df_at" && echo x) || return 0
		_df_link=${_df_link%"${nl}x"}
		case $_df_link in
		/*) _df_at='' _df_rest=${_df_link#/}/$_df_rest ;;
		*) _df_at=${_df_at%/*} _df_rest=$_df_link/$_df_rest ;;
		esac
	done
}

# followable LINK: false when LINK sits in a sticky world-writable
# directory and belongs to neither this user nor the directory's owner.
followable() {
	_fa_dir=${1%/*}
	_fa_dir=${_fa_dir:-/}
	# Most directories are not sticky: no ls for them.
	[ -k "$_fa_dir" ] || return 0
	set -f
	# shellcheck disable=SC2046 # the fields of ls
	set -- "$1" $(ls -ldnL -- "$_fa_dir" 2>/dev/null)
	_fa_mode=$2
	_fa_owner=$4
	# shellcheck disable=SC2046
	set -- $(ls -ldn -- "$1" 2>/dev/null)
	set +f
	case $_fa_mode in
	d???????w*) ;;
	*) return 0 ;;
	esac
	[ "$3" = "$uid" ] || [ "$3" = "$_fa_owner" ]
}

# resolve_path PATH: "OK", then the canonical path (every symlink and ".."
# resolved, as the kernel does) with nothing after it.
resolve_path() {
	if [ ! -e "$1" ]; then
		report_missing "$1"
		return
	fi
	follow_links "$1" || {
		echo 'E ELOOP too many levels of symbolic links'
		return
	}
	# (A relative path, never sent, as one: "-" would be $OLDPWD to cd.)
	case $_f in /*) ;; *) _f=./$_f ;; esac
	if [ -d "$_f" ]; then
		cd -P -- "$_f" || {
			echo 'E EACCES permission denied'
			return
		}
		printf 'OK\n%s' "$PWD"
		return
	fi
	_rp_dir=${_f%/*}
	cd -P -- "${_rp_dir:-/}" || {
		echo 'E EACCES permission denied'
		return
	}
	case $PWD in
	/) printf 'OK\n/%s' "${_f##*/}" ;;
	*) printf 'OK\n%s/%s' "$PWD" "${_f##*/}" ;;
	esac
}

# stat_path PATH: "OK", then `ls -ldnL PATH`.
stat_path() {
	if [ ! -e "$1" ]; then
		report_missing "$1"
		return
	fi
	echo OK
	ls -ldnL -- "$1"
}

# list_dir PATH FLAVOUR: "OK", then one record per entry. FLAVOUR gnu:
# "TYPE TARGETTYPE MODE SIZE NAME\0" from GNU find. FLAVOUR stat: the
# names, each NUL-terminated (one printf of a glob: no loop, which BusyBox
# sh runs slowly), an empty record, the lines "RAWMODE SIZE ./NAME" of
# stat -c for those names in the same order (none for . and .., an
# unmatched glob or an entry gone meanwhile), an empty record, and
# "RAWMODE ./NAME" of what each symbolic link points to (none when it
# dangles). FLAVOUR posix, for hosts without stat -c:
# "NAME\0KIND\0LS\0" where KIND is d (directory or link to one), f
# (anything else) or N (dangling link), LS an ls -ldn line (a process per
# entry).
list_dir() {
	# (A relative path, never sent, as one: not an expression of find's,
	# nor "-" for cd.)
	case $1 in /*) ;; *) set -- "./$1" "$2" ;; esac
	if [ ! -e "$1" ]; then
		report_missing "$1"
		return
	fi
	if [ ! -d "$1" ]; then
		echo 'E ENOTDIR not a directory'
		return
	fi
	if [ ! -r "$1" ] || [ ! -x "$1" ]; then
		echo 'E EACCES permission denied'
		return
	fi
	echo OK
	if [ "$2" = gnu ]; then
		find -H "$1" -mindepth 1 -maxdepth 1 -printf '%y%Y %m %s %f\0'
		return
	fi
	cd -- "$1" || return
	if [ "$2" = stat ]; then
		printf '%s\0' .* *
		printf '\0'
		printf './%s\0' .* * | xargs -0 stat -c '%f %s %n' -- 2>/dev/null
		printf '\0'
		find . -mindepth 1 -maxdepth 1 -type l -exec stat -L -c '%f %n' -- {} + 2>/dev/null
		return 0
	fi
	for _e in .* *; do
		case $_e in . | ..) continue ;; esac
		[ -e "$_e" ] || [ -L "$_e" ] || continue
		_y=N
		if [ -d "$_e" ]; then _y=d; elif [ -e "$_e" ]; then _y=f; fi
		printf '%s\0%s\0%s\0' "$_e" "$_y" "$(ls -ldn -- "$_e")"
	done
}

# ensure_dir PATH creates PATH and its parents when missing; on failure it
# prints the error line and returns 1.
ensure_dir() {
	[ -d "$1" ] && return 0
	mkdir -p -- "$1" 2>"$private/err" && return 0
	_p=$1
	while [ -n "$_p" ] && [ ! -e "$_p" ]; do _p=${_p%/*}; done
	if [ -n "$_p" ] && [ ! -d "$_p" ]; then
		echo 'E ENOTDIR not a directory'
	else
		error_from_stderr 'mkdir failed'
	fi
	return 1
}

# make_dirs PATH: "OK" once PATH is a directory.
make_dirs() {
	ensure_dir "$1" && echo OK
}

# A write puts its content in a temporary file .NAME.pi-remote-SUFFIX
# (NAME is the target's, cut to 200 bytes) and acts on it only by that
# name, relative to a directory held as the working directory once
# checked (enter_temp), which nobody else may add, remove or rename
# entries in; the directory held cannot be swapped. So no step can be
# turned onto another file by someone who may rename entries in the
# target's directory TARGETDIR (a symlink put in place of the temporary
# file). Where only root and this user may rename entries in TARGETDIR
# (it is theirs, and not writable by group or others unless sticky), the
# file goes straight there ($_up empty: the target is ./NAME). Elsewhere
# it goes in a private directory of its own, TARGETDIR/.NAME.pi-remote-SUFFIX
# with mode 0700 ($_up "../": the target is ../NAME), removed with it.

# copy_owner_and_mode FROM TO [ACL] gives TO the owner, group and mode of
# FROM (setuid, setgid and sticky bits included), FROM being a regular
# file. Unless ACL is "acl" (the caller copies it next), one with an ACL
# (a "+" after the mode, where ls shows it) is refused, as its ACL would
# be lost. The owner goes first: chown clears the setuid and setgid bits.
# On failure it prints the error line and returns 1.
copy_owner_and_mode() {
	_com_acl=$3
	set -f
	# shellcheck disable=SC2046 # the fields of ls -l
	set -- "$1" "$2" $(ls -ldn -- "$1")
	set +f
	case $3 in
	-*+)
		if [ "$_com_acl" != acl ]; then
			echo 'E EIO not replacing the file: it has an ACL, which this host cannot copy (it has neither GNU cp, nor setfattr or setfacl)'
			return 1
		fi
		;;
	-*) ;;
	*)
		echo 'E ENOTREG not a regular file'
		return 1
		;;
	esac
	if [ "$5:$6" != "$uid_gid" ]; then
		chown "$5:$6" "$2" 2>/dev/null
	fi
	_m=$3
	_p=
	for _w in u g o; do
		case $_w in
		u) _c=${_m#?} ;;
		g) _c=${_m#????} ;;
		o) _c=${_m#???????} ;;
		esac
		_c=${_c%"${_c#???}"}
		_s=$_w=
		case $_c in r*) _s=${_s}r ;; esac
		case $_c in ?w*) _s=${_s}w ;; esac
		case $_c in ??[xst]) _s=${_s}x ;; esac
		_p=$_p$_s,
		case $_w$_c in
		u??[sS]) _p=${_p}u+s, ;;
		g??[sS]) _p=${_p}g+s, ;;
		o??[tT]) _p=${_p}+t, ;;
		esac
	done
	chmod "${_p%,}" "$2" 2>"$private/err" || {
		error_from_stderr 'cannot copy the mode of the file'
		return 1
	}
}

# copy_attributes FROM TO gives TO, a write's new file, what FROM, the
# regular file it replaces, has besides its content: owner and group
# (where this user may set them), mode, ACL and extended attributes. GNU
# cp does it all in one process (--attributes-only opens TO without
# truncating it; an owner it may not set is left, and then the setuid and
# setgid bits go; an attribute it cannot set fails the copy). Where cp is
# not GNU's (its complaint names an option; noted in the private
# directory for the next write), the owner and mode are copied, and the
# ACL and extended attributes with getfattr and setfattr, or the ACL with
# getfacl and setfacl, when the host has them. On failure it prints the
# error line and returns 1: the write is refused rather than drop an ACL.
#
# In a write's private directory (others may rename entries next to it)
# the attributes come from "held", a hard link made there to FROM: it
# names the file that was at FROM when it was made (link(2) does not
# follow a symlink), whatever another user renames into FROM's place
# afterwards. Where no such link may be made (a file system without hard
# links; another user's file this user may not both read and write, under
# fs.protected_hardlinks), FROM must show the same inode, owner and mode
# after the copy as before it.
copy_attributes() {
	_ca_before=
	if [ -n "$_up" ]; then
		if hold_link "$1"; then
			if [ -L held ]; then
				rm -f held
				echo 'E EMOVED another file took the place of the file while it was written'
				return 1
			fi
			copy_attributes_from held "$2"
			_ca_status=$?
			rm -f held
			return "$_ca_status"
		fi
		_ca_before=$(ls -ldni -- "$1" 2>/dev/null)
	fi
	copy_attributes_from "$1" "$2" || return 1
	if [ -n "$_ca_before" ] && [ "$(ls -ldni -- "$1" 2>/dev/null)" != "$_ca_before" ]; then
		echo 'E EMOVED another file took the place of the file while it was written'
		return 1
	fi
}

# hold_link FROM makes "held", a hard link to FROM itself: to a symlink
# in FROM's place, not to its target (ln -P; BSD ln follows by default).
# BusyBox ln has no -P, and its link(2) does not follow on Linux.
hold_link() {
	ln -P -- "$1" held 2>"$private/err" && return 0
	_hl_line=
	IFS= read -r _hl_line <"$private/err"
	case $_hl_line in
	*option*) ln -- "$1" held 2>/dev/null ;;
	*) return 1 ;;
	esac
}

# copy_attributes_from FROM TO: the copy of copy_attributes.
copy_attributes_from() {
	if [ -L "$1" ] || [ ! -f "$1" ]; then
		echo 'E ENOTREG not a regular file'
		return 1
	fi
	if [ ! -e "$private/plain-cp" ]; then
		if cp --attributes-only --preserve=mode,ownership,xattr -- "$1" "$2" 2>"$private/err"; then
			return 0
		fi
		_ca_line=
		IFS= read -r _ca_line <"$private/err"
		case $_ca_line in
		*option*) : >"$private/plain-cp" ;;
		# A file this user may not read: the owner and mode at least.
		*'for reading'*) ;;
		*)
			echo "E EIO not replacing the file: cannot keep its attributes (${_ca_line#cp: })"
			return 1
			;;
		esac
	fi
	_ca_tool=
	if command -v getfattr >/dev/null 2>&1 && command -v setfattr >/dev/null 2>&1; then
		_ca_tool=fattr
	elif command -v getfacl >/dev/null 2>&1 && command -v setfacl >/dev/null 2>&1; then
		_ca_tool=facl
	fi
	copy_owner_and_mode "$1" "$2" "${_ca_tool:+acl}" || return 1
	if [ "$_ca_tool" = fattr ]; then
		getfattr -d -m - -e hex -- "$1" >"$private/xattrs" 2>/dev/null
		while IFS= read -r _ca_line; do
			case $_ca_line in
			'#'* | '' | security.selinux=*) continue ;;
			esac
			setfattr -n "${_ca_line%%=*}" -v "${_ca_line#*=}" -- "$2" 2>"$private/err" || {
				error_from_stderr "not replacing the file: cannot keep its extended attribute ${_ca_line%%=*}"
				return 1
			}
		done <"$private/xattrs"
	elif [ "$_ca_tool" = facl ]; then
		getfacl -- "$1" 2>/dev/null | setfacl --set-file=- -- "$2" 2>"$private/err" || {
			error_from_stderr 'not replacing the file: cannot keep its ACL'
			return 1
		}
	fi
}

# file_digest FILE EXPECTED prints what the client's contentDigest prints
# for FILE's content, by the method EXPECTED's prefix names: a SHA-256 by
# sha256sum, shasum or openssl, an MD5, or cksum's "CRC:SIZE"; on a host
# with none of those, "bytes:INODE:PATH" compares with cmp against the
# temporary file PATH (see enter_temp), an uploaded copy of the expected
# content, and removes it. A file that cannot be read prints
# nothing, which matches no digest. Changes directory: run it in a
# subshell.
file_digest() {
	case $2 in
	sha256sum:*) sha256sum <"$1" | { read -r _h _ && echo "sha256sum:$_h"; } ;;
	shasum:*) shasum -a 256 <"$1" | { read -r _h _ && echo "shasum:$_h"; } ;;
	openssl:*) openssl dgst -sha256 <"$1" | { read -r _l && echo "openssl:${_l##* }"; } ;;
	md5sum:*) md5sum <"$1" | { read -r _h _ && echo "md5sum:$_h"; } ;;
	cksum:*) cksum <"$1" | { read -r _c _s _ && echo "cksum:$_c:$_s"; } ;;
	bytes:*)
		_fd_copy=${2#bytes:}
		_fd_file=$1
		case $_fd_file in /*) ;; *) _fd_file=$PWD/$_fd_file ;; esac
		enter_temp "${_fd_copy#*:}" "${_fd_copy%%:*}" >/dev/null || return
		if cmp -s -- "$_fd_file" "$_tn"; then echo "$2"; else echo changed; fi
		remove_here
		;;
	esac
}

# temp_name SUFFIX sets _tn to the name of the private directory of a
# write to _f, and of the temporary file in it.
temp_name() {
	# A name of up to 255 bytes must leave room for the temporary one.
	_tn=${_f##*/}
	while [ "${#_tn}" -gt 200 ]; do _tn=${_tn%?}; done
	_tn=.$_tn.pi-remote-$1
}

# check_temp_dir [INODE]: true when the working directory is a write's
# private directory: this user's own, mode 0700 (no ACL entry may grant
# more: the group bits show the mask; a setgid bit passed on by the parent
# is no matter) and, when INODE is given, the one create_temp made. Sets
# _td_inode to its inode number; otherwise prints the error line.
check_temp_dir() {
	set -f
	# shellcheck disable=SC2046 # the fields of ls -i
	set -- "$1" $(ls -ldni . 2>/dev/null)
	set +f
	case $3 in
	drwx--[-S]---*) ;;
	*) set -- x ;;
	esac
	if [ "$#" -ge 5 ] && [ "$5" = "$uid" ] && { [ -z "$1" ] || [ "$1" = "$2" ]; }; then
		_td_inode=$2
		return 0
	fi
	echo 'E EACCES the private directory of the write is not the one it made'
	return 1
}

# shared_dir_safe [INODE [chain]]: true when only root and this user may
# rename entries in the working directory: it is theirs, and not writable
# by group or others unless it is sticky (then others may add entries, not
# rename or remove ours); and, when INODE is given, it is that directory.
# Sets _td_inode to its inode number. With "chain", the same ls also
# looks at every directory above (as .., ../.., ...: the ones the working
# directory is in now), and _sd_chain is "yes" when they are all safe the
# same way: then nobody else can change what the working directory's
# path leads to (see create_temp).
shared_dir_safe() {
	_sd_want=$1
	_sd_with=$2
	set -- .
	if [ "$_sd_with" = chain ]; then
		_sd_up=..
		_sd_path=${PWD%/}
		while [ -n "$_sd_path" ]; do
			set -- "$@" "$_sd_up"
			_sd_up=$_sd_up/..
			_sd_path=${_sd_path%/*}
		done
	fi
	_sd_count=$#
	# Through a pipe, not a file: a file's data would go to disk with the
	# temporary file's fsync.
	_sd_out=$(ls -ldni -- "$@" 2>/dev/null)
	_sd_lines=0
	_sd_above=yes
	_td_inode=
	while [ -n "$_sd_out" ]; do
		_sd_line=${_sd_out%%"$nl"*}
		case $_sd_out in
		*"$nl"*) _sd_out=${_sd_out#*"$nl"} ;;
		*) _sd_out= ;;
		esac
		_sd_lines=$((_sd_lines + 1))
		set -f
		# shellcheck disable=SC2086 # the fields of ls -i
		set -- $_sd_line
		set +f
		_sd_safe=yes
		case $4 in
		0 | "$uid") ;;
		*) _sd_safe= ;;
		esac
		case $2 in
		d????????[tT]*) ;;
		d????w* | d???????w*) _sd_safe= ;;
		d*) ;;
		*) _sd_safe= ;;
		esac
		# The working directory's line ends with its name, "."; the others
		# with "..".
		case $_sd_line in
		*' .') [ -z "$_sd_safe" ] || _td_inode=$1 ;;
		*) [ -n "$_sd_safe" ] || _sd_above= ;;
		esac
	done
	_sd_chain=
	[ -n "$_td_inode" ] || return 1
	[ -z "$_sd_want" ] || [ "$_sd_want" = "$_td_inode" ] || return 1
	# One line per directory asked for (ls names each by the operand
	# given, never by the directory's own name): fewer means ls failed on
	# one.
	if [ "$_sd_with" = chain ] && [ -n "$_sd_above" ] && [ "$_sd_lines" = "$_sd_count" ]; then
		_sd_chain=yes
	fi
	return 0
}

# enter_temp PATH [INODE] enters the directory of PATH, a write's
# temporary file as create_temp printed it (a physical path), and checks
# it: a private directory (the directory has the file's name: see
# check_temp_dir) or the target's own (shared_dir_safe), the one of inode
# INODE when given. INODE "-" is create_temp's word for a target's
# directory whose whole path only root and this user may change: nothing
# to check. Sets _tn to the temporary file's name and _up. Otherwise it
# prints the error line and returns 1.
enter_temp() {
	_et_dir=${1%/*}
	_tn=${1##*/}
	if cd -P -- "${_et_dir:-/}" 2>/dev/null && [ "${PWD%/}" = "$_et_dir" ]; then
		if [ "${_et_dir##*/}" = "$_tn" ]; then
			_up=../
			check_temp_dir "$2"
			return
		fi
		_up=
		[ "$2" != - ] || return 0
		shared_dir_safe "$2" && return 0
	elif [ ! -e "$_et_dir" ] && [ ! -L "$_et_dir" ]; then
		echo 'E ENOENT the temporary file of the write is gone'
		return 1
	fi
	echo 'E EACCES the directory of the temporary file is not the one the write chose'
	return 1
}

# remove_here removes the temporary file of a write (in the working
# directory, entered by enter_temp or prepare_temp) and its private
# directory if it has one, leaving the directory above as the working
# directory.
remove_here() {
	if [ -e "$_tn" ] || [ -L "$_tn" ]; then rm -f -- "$_tn"; fi
	[ -n "$_up" ] || return 0
	if [ -e held ] || [ -L held ]; then rm -f held; fi
	cd -P .. && rmdir -- "$_tn" 2>/dev/null
}

# remove_if_ours removes the temporary file of a write in the target's
# own directory (entered by enter_temp) when it is a regular file of this
# user's: there, unlike in a private directory, another user may have
# made one of that name since (a sticky directory).
remove_if_ours() {
	[ -z "$_up" ] || {
		remove_here
		return
	}
	[ -f "$_tn" ] && [ ! -L "$_tn" ] || return 0
	set -f
	# shellcheck disable=SC2046 # the fields of ls -l
	set -- $(ls -ldn -- "$_tn" 2>/dev/null)
	set +f
	[ "$3" != "$uid" ] || rm -f -- "$_tn"
}

# restrict_umask PERM narrows the umask to PERM (octal, three digits):
# what the shell creates then has PERM less the umask the server started
# with, as open(2) with mode PERM would give it (0666 changes nothing).
restrict_umask() {
	[ "$1" != 666 ] || return 0
	_ru_perm=$1
	_ru_spec=
	for _ru_who in o g u; do
		_ru_digit=${_ru_perm#"${_ru_perm%?}"}
		_ru_perm=${_ru_perm%?}
		_ru_off=
		case $_ru_digit in [0-3]) _ru_off=r ;; esac
		case $_ru_digit in [0145]) _ru_off=${_ru_off}w ;; esac
		case $_ru_digit in [0246]) _ru_off=${_ru_off}x ;; esac
		[ -z "$_ru_off" ] || _ru_spec=$_ru_spec,$_ru_who-$_ru_off
	done
	[ -z "$_ru_spec" ] || umask "${_ru_spec#,}"
}

# prepare_temp TARGET PERM SUFFIX PARENTS [chain] enters the directory of TARGET
# (its symlink target, see follow_links), or, where others may rename
# entries there, a private directory made in it, and creates the
# temporary file of a write to TARGET there: with the attributes of the file it
# will replace (copy_attributes), or, for a new file, mode PERM (octal)
# less the umask. Sets _f (the file to replace), _pt_base (its name) and
# _tn. PARENTS "p" creates missing parent directories; "chain" has the
# directories above looked at too (shared_dir_safe). On failure it prints
# the error line and returns 1, having removed what it made.
prepare_temp() {
	follow_links "$1" guard || {
		echo "$_fl_error"
		return 1
	}
	if [ -d "$_f" ]; then
		echo 'E EISDIR is a directory'
		return 1
	fi
	if [ -e "$_f" ] && [ ! -f "$_f" ]; then
		echo 'E ENOTREG not a regular file'
		return 1
	fi
	_pt_dir=${_f%/*}
	_pt_dir=${_pt_dir:-/}
	if [ "$4" = p ]; then
		ensure_dir "$_pt_dir" || return 1
	elif [ ! -d "$_pt_dir" ]; then
		report_missing "$_f"
		return 1
	fi
	_pt_base=${_f##*/}
	temp_name "$3"
	if ! cd -P -- "$_pt_dir" 2>"$private/err"; then
		error_from_stderr "cannot enter $_pt_dir"
		return 1
	fi
	_up=
	if ! shared_dir_safe "" "$5"; then
		_up=../
		if ! mkdir -m 700 -- "$_tn" 2>"$private/err"; then
			error_from_stderr "cannot create a temporary directory in $_pt_dir"
			return 1
		fi
		_pt_here=${PWD%/}/$_tn
		# Entered by its name in the directory held: nothing else to trust.
		if ! cd -P -- "$_tn" 2>/dev/null || [ "$PWD" != "$_pt_here" ]; then
			echo 'E EACCES the private directory of the write is not the one it made'
			return 1
		fi
		check_temp_dir || return 1
	fi
	_pt_old=
	if [ -e "$_up$_pt_base" ] || [ -L "$_up$_pt_base" ]; then
		_pt_old=yes
	else
		restrict_umask "$2"
	fi
	set -C
	# "command" keeps a failed redirection from ending the shell.
	if ! command : 2>|"$private/err" >"$_tn"; then
		set +C
		error_from_stderr "cannot create a temporary file in $_pt_dir"
		remove_here
		return 1
	fi
	set +C
	if [ -n "$_pt_old" ]; then
		copy_attributes "$_up$_pt_base" "$_tn" || {
			remove_here
			return 1
		}
	else
		case $2 in
		*[1357]*) chmod +x -- "$_tn" ;;
		esac
	fi
}

# append_bytes FILE FORMAT appends printf FORMAT to FILE, the temporary
# file in the private directory entered; on failure it removes both and
# prints the error line (printf does not say why it failed: cat, given
# the same bytes, does).
append_bytes() {
	# shellcheck disable=SC2059 # the format is the content, encoded by the client
	if printf "$2" >>"$1" 2>/dev/null; then
		return 0
	fi
	# shellcheck disable=SC2059
	printf "$2" 2>/dev/null | cat 2>"$private/err" >>"$1"
	remove_here
	error_from_stderr "cannot write $1"
	return 1
}

# commit_here NAME DIGEST [CANONICAL] renames the temporary file, in the
# directory entered, over $_up/NAME (the target), once the file is on
# disk, when NAME still has DIGEST (empty: no check) and has the canonical
# path CANONICAL (when given: see same_file). The private directory, if
# any, goes either way. Prints "OK" or the error line.
commit_here() {
	if [ -n "$3" ] && ! same_file "$1" "$3"; then
		remove_here
		return
	fi
	if [ -n "$2" ] && [ "$(file_digest "$_up$1" "$2")" != "$2" ]; then
		remove_here
		echo 'E EMODIFIED file changed on disk'
		return
	fi
	if [ -d "$_up$1" ]; then
		remove_here
		echo 'E EISDIR is a directory'
		return
	fi
	if [ -n "$sync_file" ]; then sync "$_tn"; fi
	# -T: a directory put in NAME's place is an error, not where the file
	# goes.
	if ! mv -fT -- "$_tn" "$_up$1" 2>"$private/err"; then
		_ch_line=
		IFS= read -r _ch_line <"$private/err"
		case $_ch_line in
		*option*) move_over "$1" || return ;;
		*)
			remove_here
			if [ -d "$_up$1" ]; then
				echo 'E EISDIR is a directory'
			else
				error_from_message "${_ch_line:-rename failed}"
			fi
			return
			;;
		esac
	fi
	remove_here
	echo OK
}

# move_over NAME renames the temporary file over $_up/NAME with an mv that
# lacks -T: a directory that took NAME's place since commit_here's check
# receives the file, which is taken back out. On failure it prints the
# error line and returns 1, having removed the temporary file.
move_over() {
	if ! mv -f -- "$_tn" "$_up$1" 2>"$private/err"; then
		remove_here
		error_from_stderr 'rename failed'
		return 1
	fi
	if [ -d "$_up$1" ] && [ -e "$_up$1/$_tn" ]; then
		rm -f -- "$_up$1/$_tn"
		remove_here
		echo 'E EISDIR is a directory'
		return 1
	fi
}

# same_file NAME CANONICAL: true when $_up/NAME (a write's target, its
# symlinks followed) has the canonical path CANONICAL, the one the client's mutation queue holds for
# it; otherwise prints the error line (EMOVED: the client asks again which
# file the path names).
same_file() {
	if [ -n "$_up" ]; then
		_sf_path=${PWD%/*}/$1
	else
		_sf_path=${PWD%/}/$1
	fi
	[ "$_sf_path" = "$2" ] && return 0
	echo "E EMOVED the path now names $_sf_path"
	return 1
}

# write_inline TARGET PERM DIGEST SUFFIX FORMAT PARENTS [CANONICAL]: the
# whole write of a small content, given as a printf format, in one request.
write_inline() {
	prepare_temp "$1" "$2" "$4" "$6" || return
	append_bytes "$_tn" "$5" || return
	commit_here "$_pt_base" "$3" "$7"
}

# create_temp TARGET PERM SUFFIX PARENTS: "OK", then "INODE VIA PATH":
# the temporary file PATH of a new write, and the inode number of its
# directory, which the requests after this one check (see enter_temp).
# Where only root and this user may change any directory on PATH (see
# shared_dir_safe), PATH leads to the file whatever others do: INODE is
# "-" (nothing to check) and VIA "sftp", the client may fill the file
# over SFTP, which resolves PATH itself; otherwise VIA is "server", only
# through receive_temp. Committed with commit_temp or removed with
# remove_temp; otherwise removed with this server (remove_private).
create_temp() {
	prepare_temp "$1" "$2" "$3" "$4" chain || return
	printf '%s\n%s\n' "${PWD%/}/$_tn" "$_td_inode" >"$private/temp.$3"
	if [ -z "$_up" ] && [ "$_sd_chain" = yes ]; then
		printf 'OK\n- sftp %s' "${PWD%/}/$_tn"
	else
		printf 'OK\n%s server %s' "$_td_inode" "${PWD%/}/$_tn"
	fi
}

# receive_temp PATH INODE COUNT appends to the temporary file PATH (see
# enter_temp) the COUNT raw bytes that follow the request on the request
# stream. They are always all read, so the next request comes whole even
# when the write fails (the temporary file is removed then). head -c reads no further than the client sent: it sends nothing
# more until the answer.
receive_temp() {
	if ! enter_temp "$1" "$2"; then
		head -c "$3" <&3 >/dev/null
		return
	fi
	rm -f "$private/failed"
	head -c "$3" <&3 | {
		cat 2>"$private/err" >>"$_tn" || {
			command : >"$private/failed"
			cat >/dev/null
		}
	}
	if [ -e "$private/failed" ]; then
		remove_here
		error_from_stderr "cannot write $1"
	else
		echo OK
	fi
}

# commit_temp TARGET PATH INODE DIGEST [CANONICAL] commits the write whose
# temporary file is PATH (see enter_temp and commit_here) over TARGET (its
# symlink target), which must still be in the directory the write chose.
# Prints "OK" or the error line; the temporary file is gone either way.
commit_temp() {
	[ ! -e "$private/temp.${2##*.pi-remote-}" ] || rm -f "$private/temp.${2##*.pi-remote-}"
	_ct_dir=-
	if ! follow_links "$1" guard; then
		_ct_error=$_fl_error
	else
		_ct_error='E EMOVED the path now names a file in another directory'
		_ct_dir=${_f%/*}
		if cd -P -- "${_ct_dir:-/}" 2>/dev/null; then
			_ct_dir=${PWD%/}
		else
			_ct_dir=-
		fi
	fi
	enter_temp "$2" "$3" || return
	if [ -n "$_up" ]; then _ct_temp=${PWD%/*}; else _ct_temp=${PWD%/}; fi
	if [ "$_ct_dir" = "$_ct_temp" ]; then
		commit_here "${_f##*/}" "$4" "$5"
		return
	fi
	echo "$_ct_error"
	remove_here
}

# diagnose_write PATH INODE says why writing to the temporary file PATH
# fails, for a client whose own write (over SFTP,
# which reports most errors as a plain failure) did: it appends one byte
# with cat and prints cat's complaint as the error line, or "OK" when the
# write now succeeds.
diagnose_write() {
	enter_temp "$1" "$2" || return
	if printf x 2>/dev/null | cat 2>"$private/err" >>"$_tn"; then
		echo OK
	else
		error_from_stderr "cannot write $1"
	fi
}

# settle_write TARGET DIGEST SUFFIX... settles a write whose connection
# was lost: the temporary files it may have made (named by their
# SUFFIXes), and their private directories, are removed first, so that its commit, if it has not happened,
# never will; then TARGET (its symlink target) is compared with DIGEST,
# the new content's. Prints "OK applied", "OK absent", or "OK unknown"
# when there is no digest to compare ("-": the commit was never sent).
settle_write() {
	follow_links "$1" guard || {
		echo "$_fl_error"
		return
	}
	_sw_digest=$2
	shift 2
	_sw_dir=${_f%/*}
	if cd -P -- "${_sw_dir:-/}" 2>/dev/null; then
		_sw_here=${PWD%/}
		for _sw_suffix in "$@"; do
			temp_name "$_sw_suffix"
			if [ -d "$_tn" ]; then
				(enter_temp "$_sw_here/$_tn/$_tn" >/dev/null && remove_here)
			elif [ -f "$_tn" ]; then
				(enter_temp "$_sw_here/$_tn" >/dev/null && remove_if_ours)
			fi
		done
	fi
	case $_sw_digest in
	-) echo 'OK absent' ;;
	'' | bytes:*) echo 'OK unknown' ;;
	*)
		if [ -f "$_f" ] && [ "$(file_digest "$_f" "$_sw_digest")" = "$_sw_digest" ]; then
			echo 'OK applied'
		else
			echo 'OK absent'
		fi
		;;
	esac
}

# remove_temp PATH INODE: "OK" once the write whose temporary file is
# PATH has left nothing (what enter_temp does not find the write's is
# left alone).
remove_temp() {
	[ ! -e "$private/temp.${1##*.pi-remote-}" ] || rm -f "$private/temp.${1##*.pi-remote-}"
	if enter_temp "$1" "$2" >/dev/null; then remove_if_ours; fi
	echo OK
}

# probe_host: "OK", then the names of the helpers this host has beyond
# POSIX.
probe_host() {
	echo OK
	for _t in sha256sum shasum openssl md5sum cksum cmp readlink; do
		command -v "$_t" >/dev/null 2>&1 && printf '%s ' "$_t"
	done
	find / -maxdepth 0 -printf '' >/dev/null 2>&1 && printf 'gnufind '
	printf '/\0' | xargs -0 stat -c '%f %s %n' -- >/dev/null 2>&1 && printf 'statc '
	[ -n "$sync_file" ] && printf 'fsync '
	echo
}
