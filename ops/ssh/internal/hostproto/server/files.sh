# shellcheck shell=sh disable=SC2034,SC2154
#
# files.sh: reading and looking at files. Serves read_head, open_file,
# stat_path, list_dir, resolve_path, make_dirs and probe_host.

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
		if [ "$wait_child_status" != 0 ]; then
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

# follow_links PATH [guard] sets follow_links_path to PATH with every
# symlink at its end followed, even to a target that does not exist
# (where a write creates the file). With "guard" it follows, as the kernel's
# fs.protected_symlinks would, no link that sits in a sticky
# world-writable directory (/tmp) and belongs to neither this user nor
# that directory's owner: there, another user's link could aim a write at
# any file of this user's. On failure (that, or over 40 links) it sets
# follow_links_error to the error line and returns 1.
follow_links() {
	follow_links_path=$1
	_fl_n=0
	follow_links_error='E ELOOP too many levels of symbolic links'
	while :; do
		if [ -n "$2" ] && ! dirs_followable "$follow_links_path"; then
			follow_links_error='E EACCES not following a symbolic link of another user in a shared sticky directory on the way to the file'
			return 1
		fi
		[ -L "$follow_links_path" ] || break
		_fl_n=$((_fl_n + 1))
		[ "$_fl_n" -le 40 ] || return 1
		if [ -n "$2" ] && ! followable "$follow_links_path"; then
			follow_links_error='E EACCES not following a symbolic link of another user in a shared sticky directory'
			return 1
		fi
		_fl_link=$(readlink "$follow_links_path" && echo x) || return 1
		_fl_link=${_fl_link%"${nl}x"}
		case $_fl_link in
		/*) follow_links_path=$_fl_link ;;
		*) follow_links_path=${follow_links_path%/*}/$_fl_link ;;
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
	_rp_path=$follow_links_path
	case $_rp_path in /*) ;; *) _rp_path=./$_rp_path ;; esac
	if [ -d "$_rp_path" ]; then
		cd -P -- "$_rp_path" || {
			echo 'E EACCES permission denied'
			return
		}
		printf 'OK\n%s' "$PWD"
		return
	fi
	_rp_dir=${_rp_path%/*}
	cd -P -- "${_rp_dir:-/}" || {
		echo 'E EACCES permission denied'
		return
	}
	case $PWD in
	/) printf 'OK\n/%s' "${_rp_path##*/}" ;;
	*) printf 'OK\n%s/%s' "$PWD" "${_rp_path##*/}" ;;
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
	_ed_path=$1
	while [ -n "$_ed_path" ] && [ ! -e "$_ed_path" ]; do _ed_path=${_ed_path%/*}; done
	if [ -n "$_ed_path" ] && [ ! -d "$_ed_path" ]; then
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
