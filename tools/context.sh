# shellcheck shell=sh
#
# The host side of tools.Describe (prompt.go): who and where the host is,
# and the context files of the working directory and of every directory
# above it, in one command run in the working directory. POSIX sh and what
# BusyBox has too: id, hostname or uname, ls -n, dd, tr and printf (no
# stat -c). prompt.go sends this text followed by a call of
# describe_host MAX NAME...
#
# Every record ends with a NUL: the user, the host name and the OS; then,
# nearest directory first, two records for each readable context file of a
# directory, up to the first one fit for the prompt (NAME... in order):
#
#   F<path>  <content>   a file for the prompt: its first MAX bytes, NULs dropped
#   S<path>  <reason>    a file left out, and why:
#     owner UID          the file, or the symbolic link to it, is owned by
#                        UID, neither the user nor root
#     writable           the group or others may write the file (a
#                        group-writable file whose group is the user's
#                        own private group, named after the user, as
#                        under Debian's umask 002, counts as the user's)
#     linked             the file has more than one name (hard links)
#                        and others may write its (sticky) directory:
#                        one of them could have linked there a file of
#                        the user's or root's they cannot read or steer
#                        its words (where fs.protected_hardlinks is off,
#                        as on macOS)
#     dir-owner UID      its directory is owned by UID, who may replace it
#     dir-writable       the group or others may write its directory, and
#                        it is not sticky: they may replace the file
#     link-dir           the file is a symbolic link (of the user's) that
#                        leads into a directory another user owns or may
#                        write (not sticky): they choose what is read
#     unchecked          its owner could not be found out
#
# then, for the same directory, the skills of .agents/skills and then of
# .claude/skills (at most MAX_SKILLS folders each, in name order): two
# records for each folder with a readable SKILL.md, or for the skills
# directory itself when it is left out:
#
#   K<path>  <content>   a SKILL.md: its first MAX bytes, NULs dropped
#   X<path>  <reason>    a SKILL.md, or a directory on the way to it, left
#                        out; the reasons are those above, "dir-owner" and
#                        "dir-writable" saying it of the directory at path
#
# A skill is read only when .agents (or .claude), skills, the skill's
# folder and SKILL.md are the user's or root's, and nobody else may write
# any of them or the directory they are in (a sticky directory protects
# its entries).
#
# A file another user of the host could have written is left out: its words
# would reach the model as the user's instructions. Each directory is
# entered (cd) before it is looked at, and the file is opened once and
# listed through the open descriptor, so what is checked is what is read.
#
# Functions prefix their variables with their initials; the script runs in
# a shell of its own.

# describe_host MAX MAX_SKILLS NAME...: the records above, MAX bytes of a
# file at most.
describe_host() {
	dh_max=$1
	dh_max_skills=$2
	shift 2
	# Nothing here globs; complaints must not mix with the records.
	set -f
	exec 2>/dev/null
	printf '%s\0%s\0%s\0' "$(id -un)" "$(hostname || uname -n)" "$(uname -sm)"
	dh_uid=$(id -u)
	# A primary group named after the user is the user's own (Debian's
	# user private groups, whose umask 002 makes files group-writable).
	dh_private_gid=
	if [ "$(id -gn)" = "$(id -un)" ]; then dh_private_gid=$(id -g); fi
	dh_dir=$PWD
	while :; do
		if cd "$dh_dir"; then
			describe_context_file "${dh_dir%/}" "$@"
			describe_skills "${dh_dir%/}" .agents
			describe_skills "${dh_dir%/}" .claude
		fi
		[ "$dh_dir" = / ] && break
		dh_dir=${dh_dir%/*}
		[ -n "$dh_dir" ] || dh_dir=/
	done
}

# describe_context_file DIR NAME...: the records of the first NAME that is
# a readable file in the current directory, DIR ("" for /). When that file
# is left out for its own owner or mode, the next NAME is looked at.
describe_context_file() {
	dcf_dir=$1
	shift
	for dcf_name do
		if [ -f "$dcf_name" ] && [ -r "$dcf_name" ]; then
			dcf_path=$dcf_dir/$dcf_name
			if ! list_mode_owner -ld .; then
				printf 'S%s\0unchecked\0' "$dcf_path"
				return
			elif ! is_ours "$lmo_uid"; then
				printf 'S%s\0dir-owner %s\0' "$dcf_path" "$lmo_uid"
				return
			elif others_may_write "$lmo_mode" "$lmo_gid" && ! is_sticky "$lmo_mode"; then
				printf 'S%s\0dir-writable\0' "$dcf_path"
				return
			elif ! list_mode_owner -ld "$dcf_name"; then
				printf 'S%s\0unchecked\0' "$dcf_path"
			elif ! is_ours "$lmo_uid"; then
				# Another user's link, say in a sticky /tmp, to a file of
				# root's whose words they may steer.
				printf 'S%s\0owner %s\0' "$dcf_path" "$lmo_uid"
			else
				# (A subshell: following a link moves.)
				(read_checked_file F "$dcf_path" "$dcf_name") && return
			fi
		fi
	done
}

# read_checked_file KIND PATH NAME: the records of NAME, an entry of
# the current directory, both found to be the user's or root's (lmo_mode
# is NAME's, as ls -ld lists it). A symbolic link is followed one link at
# a time, at most 8: the directory each one leads to is entered one
# directory at a time (enter_link_dir), each held to the rules of the
# first (else "link-dir": whoever may change one chooses the file read, a
# FIFO to hang on or a private file of the user's), and so is the next
# link or the file itself ("owner"). The file is then opened in its own
# directory, which nobody else may change. It moves to that directory;
# run it in a subshell. False when the file is left out.
read_checked_file() {
	set -f
	rcf_skip=S
	[ "$1" = K ] && rcf_skip=X
	rcf_file=$3
	rcf_hops=0
	while :; do
		case $lmo_mode in
		l*) ;;
		*) break ;;
		esac
		rcf_hops=$((rcf_hops + 1))
		rcf_line=$(ls -ldn -- "$rcf_file" 2>/dev/null)
		rcf_target=${rcf_line#*" $rcf_file -> "}
		if [ "$rcf_hops" -gt 8 ] || [ "$rcf_target" = "$rcf_line" ] || [ -z "$rcf_target" ]; then
			printf '%s%s\0unchecked\0' "$rcf_skip" "$2"
			return 1
		fi
		case $rcf_target in
		/*/* | [!/]*/*) rcf_dir=${rcf_target%/*} ;;
		/*) rcf_dir=/ ;;
		*) rcf_dir=. ;;
		esac
		rcf_file=${rcf_target##*/}
		enter_link_dir "$rcf_dir"
		rcf_entered=$?
		if [ -z "$rcf_file" ] || [ "$rcf_entered" = 1 ]; then
			printf '%s%s\0unchecked\0' "$rcf_skip" "$2"
			return 1
		elif [ "$rcf_entered" != 0 ]; then
			printf '%s%s\0link-dir\0' "$rcf_skip" "$2"
			return 1
		elif ! list_mode_owner -ld "./$rcf_file"; then
			printf '%s%s\0unchecked\0' "$rcf_skip" "$2"
			return 1
		elif ! is_ours "$lmo_uid"; then
			printf '%s%s\0owner %s\0' "$rcf_skip" "$2" "$lmo_uid"
			return 1
		fi
	done
	# A FIFO of the user's own, say, is no file to read.
	[ -f "./$rcf_file" ] || return 1
	# shellcheck disable=SC2094 # read only, through descriptor 3
	describe_open_file "$1" "$2" "./$rcf_file" 3<"./$rcf_file"
}

# enter_link_dir DIR: enters DIR (absolute, or relative to the current
# directory) one name at a time. Each entry on the way (a directory or
# the symbolic link to it) must be the user's or root's, and so must each
# directory entered, which nobody else may write unless it is sticky.
# Status 2 when one is another user's or others may write it, 1 when one
# cannot be checked or entered.
enter_link_dir() {
	case $1 in
	/*) cd / || return 1 ;;
	esac
	eld_ifs=$IFS
	IFS=/
	# shellcheck disable=SC2086 # split at the slashes (set -f: no globs)
	set -- $1
	IFS=$eld_ifs
	for eld_part do
		case $eld_part in
		'' | .) continue ;;
		..) cd -P .. || return 1 ;;
		*)
			list_mode_owner -ld "./$eld_part" || return 1
			is_ours "$lmo_uid" || return 2
			cd -P "./$eld_part" || return 1
			;;
		esac
		list_mode_owner -ld . || return 1
		is_ours "$lmo_uid" || return 2
		if others_may_write "$lmo_mode" "$lmo_gid" && ! is_sticky "$lmo_mode"; then
			return 2
		fi
	done
	list_mode_owner -ld . || return 1
	is_ours "$lmo_uid" || return 2
	if others_may_write "$lmo_mode" "$lmo_gid" && ! is_sticky "$lmo_mode"; then
		return 2
	fi
}

# describe_open_file KIND PATH NAME: the records of the file NAME open on
# descriptor 3 (PATH in the records), a context file (KIND F, or S when
# left out) or a skill (K, or X). It is listed through the descriptor
# (/dev/fd, or /proc where there is no /dev/fd); only a host with neither
# lists NAME again. The current directory is the file's. False when the
# file is left out.
describe_open_file() {
	dof_skip=S
	[ "$1" = K ] && dof_skip=X
	if ! list_mode_owner -ldL /dev/fd/3 && ! list_mode_owner -ldL /proc/self/fd/3 && ! list_mode_owner -ldL "$3"; then
		printf '%s%s\0unchecked\0' "$dof_skip" "$2"
	elif ! is_ours "$lmo_uid"; then
		printf '%s%s\0owner %s\0' "$dof_skip" "$2" "$lmo_uid"
	elif others_may_write "$lmo_mode" "$lmo_gid"; then
		printf '%s%s\0writable\0' "$dof_skip" "$2"
	elif [ "$lmo_links" != 1 ] && ! { list_mode_owner -ld . && ! others_may_write "$lmo_mode" "$lmo_gid"; }; then
		printf '%s%s\0linked\0' "$dof_skip" "$2"
	else
		printf '%s%s\0' "$1" "$2"
		dd bs="$dh_max" count=1 <&3 2>/dev/null | tr -d '\000'
		printf '\0'
		return 0
	fi
	return 1
}

# describe_skills DIR BASE: the records of the skills in BASE/skills of
# the current directory, DIR ("" for /). Each directory is checked, then
# entered; a subshell keeps the walk from moving the caller.
describe_skills() {
	[ -d "$2/skills" ] || return 0
	(
		ds_path=$1
		if ! enter_checked_dir "$ds_path" . ||
			! enter_checked_dir "$ds_path/$2" "$2" ||
			! enter_checked_dir "$ds_path/$2/skills" skills; then
			exit 0
		fi
		ds_root=$ds_path/$2/skills
		ds_count=0
		set +f
		for ds_file in */SKILL.md; do
			if ! [ -f "$ds_file" ] || ! [ -r "$ds_file" ]; then continue; fi
			ds_count=$((ds_count + 1))
			[ "$ds_count" -le "$dh_max_skills" ] || break
			ds_name=${ds_file%/SKILL.md}
			(
				enter_checked_dir "$ds_root/$ds_name" "$ds_name" || exit 0
				if ! list_mode_owner -ld SKILL.md; then
					printf 'X%s\0unchecked\0' "$ds_root/$ds_file"
				elif ! is_ours "$lmo_uid"; then
					printf 'X%s\0owner %s\0' "$ds_root/$ds_file" "$lmo_uid"
				else
					read_checked_file K "$ds_root/$ds_file" SKILL.md
				fi
			)
		done
	)
}

# enter_checked_dir PATH NAME: enters NAME, a directory of the current one
# (PATH in the records; NAME "." checks the current one), if it, or the
# symbolic link to it, is the user's or root's and nobody else may write
# it unless it is sticky; else an X record says why, and it is false.
enter_checked_dir() {
	if [ "$2" != . ]; then
		if ! list_mode_owner -ld "$2"; then
			printf 'X%s\0unchecked\0' "$1"
			return 1
		elif ! is_ours "$lmo_uid"; then
			printf 'X%s\0dir-owner %s\0' "$1" "$lmo_uid"
			return 1
		fi
		# (./: a folder named "-" is not cd's option)
		cd "./$2" || return 1
	fi
	if ! list_mode_owner -ld .; then
		printf 'X%s\0unchecked\0' "$1"
		return 1
	elif ! is_ours "$lmo_uid"; then
		printf 'X%s\0dir-owner %s\0' "$1" "$lmo_uid"
		return 1
	elif others_may_write "$lmo_mode" "$lmo_gid" && ! is_sticky "$lmo_mode"; then
		printf 'X%s\0dir-writable\0' "$1"
		return 1
	fi
}

# list_mode_owner OPTIONS PATH: the mode (lmo_mode), the number of links
# (lmo_links), the owner's uid (lmo_uid) and the group's gid (lmo_gid) of
# PATH as `ls -n OPTIONS` lists it; false when ls lists nothing.
list_mode_owner() {
	# shellcheck disable=SC2046 # the listing is split into its fields
	set -- $(ls -n "$1" -- "$2" 2>/dev/null)
	[ $# -ge 4 ] || return 1
	lmo_mode=$1
	lmo_links=$2
	lmo_uid=$3
	lmo_gid=$4
}

# is_ours UID: whether UID is the user's or root's.
is_ours() {
	[ "$1" = "$dh_uid" ] || [ "$1" = 0 ]
}

# others_may_write MODE GID: whether MODE, as ls lists it, lets others
# write, or the group GID unless it is the user's private group
# (dh_private_gid).
others_may_write() {
	case $1 in
	????????w*) return 0 ;;
	?????w*) [ "$2" != "$dh_private_gid" ] ;;
	*) return 1 ;;
	esac
}

# is_sticky MODE: whether MODE, as ls lists it, has the sticky bit.
is_sticky() {
	case $1 in
	?????????[tT]*) return 0 ;;
	esac
	return 1
}
