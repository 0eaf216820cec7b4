# shellcheck shell=sh disable=SC2034,SC2154
#
# write.sh: atomic writes. Serves create_temp, receive_temp, write_inline,
# commit_temp, settle_write, diagnose_write and remove_temp.
#
# A write puts its content in a temporary file .NAME.pi-remote-SUFFIX
# (NAME is the target's, cut to 200 bytes) and acts on it only by that
# name, relative to a directory held as the working directory once
# checked (enter_temp), which nobody else may add, remove or rename
# entries in; the directory held cannot be swapped. So no step can be
# turned onto another file by someone who may rename entries in the
# target's directory TARGETDIR (a symlink put in place of the temporary
# file). Where only root and this user may rename entries in TARGETDIR
# (it is theirs, and not writable by group or others unless sticky), the
# file goes straight there ($wr_up empty: the target is ./NAME). Elsewhere
# it goes in a private directory of its own, TARGETDIR/.NAME.pi-remote-SUFFIX
# with mode 0700 ($wr_up "../": the target is ../NAME), removed with it.

# group wr_: temp_name enter_temp check_temp_dir shared_dir_safe
# prepare_temp copy_attributes remove_here remove_if_ours commit_here
# move_over same_file file_digest write_inline create_temp receive_temp
# commit_temp diagnose_write settle_write
#
# The write at hand: wr_temp, the name of its temporary file (and of its
# private directory), wr_up, "../" when the file is in a private
# directory (see above), and wr_inode, the inode number of the directory
# checked (check_temp_dir, shared_dir_safe).

# temp_name PATH SUFFIX sets wr_temp to the name of the private
# directory of a write to PATH, and of the temporary file in it.
temp_name() {
	# A name of up to 255 bytes must leave room for the temporary one.
	wr_temp=${1##*/}
	while [ "${#wr_temp}" -gt 200 ]; do wr_temp=${wr_temp%?}; done
	wr_temp=.$wr_temp.pi-remote-$2
}

# check_temp_dir [INODE]: true when the working directory is a write's
# private directory: this user's own, mode 0700 (no ACL entry may grant
# more: the group bits show the mask; a setgid bit passed on by the parent
# is no matter) and, when INODE is given, the one create_temp made. Sets
# wr_inode to its inode number; otherwise prints the error line.
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
		wr_inode=$2
		return 0
	fi
	echo 'E EACCES the private directory of the write is not the one it made'
	return 1
}

# shared_dir_safe [INODE [chain]]: true when only root and this user may
# rename entries in the working directory: it is theirs, and not writable by
# group or others unless it is sticky (then others may add entries, not
# rename or remove ours); and, when INODE is given, it is that directory.
# Sets wr_inode to its inode number. With "chain", the same ls also looks at
# every directory above (as .., ../.., ...: the ones the working directory
# is in now), and shared_dir_safe_chain is "yes" when they are all safe the
# same way: then nobody else can change what the working directory's path
# leads to (see create_temp).
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
	wr_inode=
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
		*' .') [ -z "$_sd_safe" ] || wr_inode=$1 ;;
		*) [ -n "$_sd_safe" ] || _sd_above= ;;
		esac
	done
	shared_dir_safe_chain=
	[ -n "$wr_inode" ] || return 1
	[ -z "$_sd_want" ] || [ "$_sd_want" = "$wr_inode" ] || return 1
	# One line per directory asked for (ls names each by the operand
	# given, never by the directory's own name): fewer means ls failed on
	# one.
	if [ "$_sd_with" = chain ] && [ -n "$_sd_above" ] && [ "$_sd_lines" = "$_sd_count" ]; then
		shared_dir_safe_chain=yes
	fi
	return 0
}

# enter_temp PATH [INODE] enters the directory of PATH, a write's
# temporary file as create_temp printed it (a physical path), and checks
# it: a private directory (the directory has the file's name: see
# check_temp_dir) or the target's own (shared_dir_safe), the one of inode
# INODE when given. INODE "-" is create_temp's word for a target's
# directory whose whole path only root and this user may change: nothing
# to check. Sets wr_temp to the temporary file's name and wr_up.
# Otherwise it prints the error line and returns 1.
enter_temp() {
	_et_dir=${1%/*}
	wr_temp=${1##*/}
	if cd -P -- "${_et_dir:-/}" 2>/dev/null && [ "${PWD%/}" = "$_et_dir" ]; then
		if [ "${_et_dir##*/}" = "$wr_temp" ]; then
			wr_up=../
			check_temp_dir "$2"
			return
		fi
		wr_up=
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
	if [ -e "$wr_temp" ] || [ -L "$wr_temp" ]; then rm -f -- "$wr_temp"; fi
	[ -n "$wr_up" ] || return 0
	if [ -e held ] || [ -L held ]; then rm -f held; fi
	cd -P .. && rmdir -- "$wr_temp" 2>/dev/null
}

# remove_if_ours removes the temporary file of a write in the target's
# own directory (entered by enter_temp) when it is a regular file of this
# user's: there, unlike in a private directory, another user may have
# made one of that name since (a sticky directory).
remove_if_ours() {
	[ -z "$wr_up" ] || {
		remove_here
		return
	}
	[ -f "$wr_temp" ] && [ ! -L "$wr_temp" ] || return 0
	set -f
	# shellcheck disable=SC2046 # the fields of ls -l
	set -- $(ls -ldn -- "$wr_temp" 2>/dev/null)
	set +f
	[ "$3" != "$uid" ] || rm -f -- "$wr_temp"
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

# prepare_temp TARGET PERM SUFFIX PARENTS [chain] enters the directory of
# TARGET (its symlink target, see follow_links), or, where others may rename
# entries there, a private directory made in it, and creates the temporary
# file of a write to TARGET there: with the attributes of the file it will
# replace (copy_attributes), or, for a new file, mode PERM (octal) less the
# umask. Sets follow_links_path (the file to replace, see follow_links),
# prepare_temp_base (its name), wr_temp and wr_up. PARENTS "p" creates
# missing parent directories; "chain" has the directories above looked at
# too (shared_dir_safe). On failure it prints the error line and returns 1,
# having removed what it made.
prepare_temp() {
	follow_links "$1" guard || {
		echo "$follow_links_error"
		return 1
	}
	if [ -d "$follow_links_path" ]; then
		echo 'E EISDIR is a directory'
		return 1
	fi
	if [ -e "$follow_links_path" ] && [ ! -f "$follow_links_path" ]; then
		echo 'E ENOTREG not a regular file'
		return 1
	fi
	_pt_dir=${follow_links_path%/*}
	_pt_dir=${_pt_dir:-/}
	if [ "$4" = p ]; then
		ensure_dir "$_pt_dir" || return 1
	elif [ ! -d "$_pt_dir" ]; then
		report_missing "$follow_links_path"
		return 1
	fi
	prepare_temp_base=${follow_links_path##*/}
	temp_name "$follow_links_path" "$3"
	if ! cd -P -- "$_pt_dir" 2>"$private/err"; then
		error_from_stderr "cannot enter $_pt_dir"
		return 1
	fi
	wr_up=
	if ! shared_dir_safe "" "$5"; then
		wr_up=../
		if ! mkdir -m 700 -- "$wr_temp" 2>"$private/err"; then
			error_from_stderr "cannot create a temporary directory in $_pt_dir"
			return 1
		fi
		_pt_here=${PWD%/}/$wr_temp
		# Entered by its name in the directory held: nothing else to trust.
		if ! cd -P -- "$wr_temp" 2>/dev/null || [ "$PWD" != "$_pt_here" ]; then
			echo 'E EACCES the private directory of the write is not the one it made'
			return 1
		fi
		check_temp_dir || return 1
	fi
	_pt_old=
	if [ -e "$wr_up$prepare_temp_base" ] || [ -L "$wr_up$prepare_temp_base" ]; then
		_pt_old=yes
	else
		restrict_umask "$2"
	fi
	set -C
	# "command" keeps a failed redirection from ending the shell.
	if ! command : 2>|"$private/err" >"$wr_temp"; then
		set +C
		error_from_stderr "cannot create a temporary file in $_pt_dir"
		remove_here
		return 1
	fi
	set +C
	if [ -n "$_pt_old" ]; then
		copy_attributes "$wr_up$prepare_temp_base" "$wr_temp" || {
			remove_here
			return 1
		}
	else
		case $2 in
		*[1357]*) chmod +x -- "$wr_temp" ;;
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
# directory entered, over $wr_up/NAME (the target), once the file is on
# disk, when NAME still has DIGEST (empty: no check) and has the canonical
# path CANONICAL (when given: see same_file). The private directory, if
# any, goes either way. Prints "OK" or the error line.
commit_here() {
	if [ -n "$3" ] && ! same_file "$1" "$3"; then
		remove_here
		return
	fi
	if [ -n "$2" ] && [ "$(file_digest "$wr_up$1" "$2")" != "$2" ]; then
		remove_here
		echo 'E EMODIFIED file changed on disk'
		return
	fi
	if [ -d "$wr_up$1" ]; then
		remove_here
		echo 'E EISDIR is a directory'
		return
	fi
	if [ -n "$sync_file" ]; then sync "$wr_temp"; fi
	# -T: a directory put in NAME's place is an error, not where the file
	# goes.
	if ! mv -fT -- "$wr_temp" "$wr_up$1" 2>"$private/err"; then
		_ch_line=
		IFS= read -r _ch_line <"$private/err"
		case $_ch_line in
		*option*) move_over "$1" || return ;;
		*)
			remove_here
			if [ -d "$wr_up$1" ]; then
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

# move_over NAME renames the temporary file over $wr_up/NAME with an mv that
# lacks -T: a directory that took NAME's place since commit_here's check
# receives the file, which is taken back out. On failure it prints the
# error line and returns 1, having removed the temporary file.
move_over() {
	if ! mv -f -- "$wr_temp" "$wr_up$1" 2>"$private/err"; then
		remove_here
		error_from_stderr 'rename failed'
		return 1
	fi
	if [ -d "$wr_up$1" ] && [ -e "$wr_up$1/$wr_temp" ]; then
		rm -f -- "$wr_up$1/$wr_temp"
		remove_here
		echo 'E EISDIR is a directory'
		return 1
	fi
}

# same_file NAME CANONICAL: true when $wr_up/NAME (a write's target, its
# symlinks followed) has the canonical path CANONICAL, the one the client's mutation queue holds for
# it; otherwise prints the error line (EMOVED: the client asks again which
# file the path names).
same_file() {
	if [ -n "$wr_up" ]; then
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
	append_bytes "$wr_temp" "$5" || return
	commit_here "$prepare_temp_base" "$3" "$7"
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
	printf '%s\n%s\n' "${PWD%/}/$wr_temp" "$wr_inode" >"$private/temp.$3"
	if [ -z "$wr_up" ] && [ "$shared_dir_safe_chain" = yes ]; then
		printf 'OK\n- sftp %s' "${PWD%/}/$wr_temp"
	else
		printf 'OK\n%s server %s' "$wr_inode" "${PWD%/}/$wr_temp"
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
		cat 2>"$private/err" >>"$wr_temp" || {
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
		_ct_error=$follow_links_error
	else
		_ct_error='E EMOVED the path now names a file in another directory'
		_ct_dir=${follow_links_path%/*}
		if cd -P -- "${_ct_dir:-/}" 2>/dev/null; then
			_ct_dir=${PWD%/}
		else
			_ct_dir=-
		fi
	fi
	enter_temp "$2" "$3" || return
	if [ -n "$wr_up" ]; then _ct_temp=${PWD%/*}; else _ct_temp=${PWD%/}; fi
	if [ "$_ct_dir" = "$_ct_temp" ]; then
		commit_here "${follow_links_path##*/}" "$4" "$5"
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
	if printf x 2>/dev/null | cat 2>"$private/err" >>"$wr_temp"; then
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
		echo "$follow_links_error"
		return
	}
	_sw_digest=$2
	shift 2
	_sw_dir=${follow_links_path%/*}
	if cd -P -- "${_sw_dir:-/}" 2>/dev/null; then
		_sw_here=${PWD%/}
		for _sw_suffix in "$@"; do
			temp_name "$follow_links_path" "$_sw_suffix"
			if [ -d "$wr_temp" ]; then
				(enter_temp "$_sw_here/$wr_temp/$wr_temp" >/dev/null && remove_here)
			elif [ -f "$wr_temp" ]; then
				(enter_temp "$_sw_here/$wr_temp" >/dev/null && remove_if_ours)
			fi
		done
	fi
	case $_sw_digest in
	-) echo 'OK absent' ;;
	'' | bytes:*) echo 'OK unknown' ;;
	*)
		if [ -f "$follow_links_path" ] && [ "$(file_digest "$follow_links_path" "$_sw_digest")" = "$_sw_digest" ]; then
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
