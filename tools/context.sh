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
#     dir-owner UID      its directory is owned by UID, who may replace it
#     dir-writable       the group or others may write its directory, and
#                        it is not sticky: they may replace the file
#     unchecked          its owner could not be found out
#
# A file another user of the host could have written is left out: its words
# would reach the model as the user's instructions. Each directory is
# entered (cd) before it is looked at, and the file is opened once and
# listed through the open descriptor, so what is checked is what is read.
#
# Functions prefix their variables with their initials; the script runs in
# a shell of its own.

# describe_host MAX NAME...: the records above, MAX bytes of a file at most.
describe_host() {
	dh_max=$1
	shift
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
				# shellcheck disable=SC2094 # read only, through descriptor 3
				describe_open_file "$dcf_path" "$dcf_name" 3<"$dcf_name" && return
			fi
		fi
	done
}

# describe_open_file PATH NAME: the records of the file NAME open on
# descriptor 3 (PATH in the records). It is listed through the descriptor
# (/dev/fd, or /proc where there is no /dev/fd); only a host with neither
# lists NAME again. False when the file is left out.
describe_open_file() {
	if ! list_mode_owner -ldL /dev/fd/3 && ! list_mode_owner -ldL /proc/self/fd/3 && ! list_mode_owner -ldL "$2"; then
		printf 'S%s\0unchecked\0' "$1"
	elif ! is_ours "$lmo_uid"; then
		printf 'S%s\0owner %s\0' "$1" "$lmo_uid"
	elif others_may_write "$lmo_mode" "$lmo_gid"; then
		printf 'S%s\0writable\0' "$1"
	else
		printf 'F%s\0' "$1"
		dd bs="$dh_max" count=1 <&3 2>/dev/null | tr -d '\000'
		printf '\0'
		return 0
	fi
	return 1
}

# list_mode_owner OPTIONS PATH: the mode (lmo_mode), the owner's uid
# (lmo_uid) and the group's gid (lmo_gid) of PATH as `ls -n OPTIONS` lists
# it; false when ls lists nothing.
list_mode_owner() {
	# shellcheck disable=SC2046 # the listing is split into its fields
	set -- $(ls -n "$1" -- "$2" 2>/dev/null)
	[ $# -ge 4 ] || return 1
	lmo_mode=$1
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
