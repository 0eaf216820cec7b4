# shellcheck shell=sh disable=SC2034,SC2154
#
# attrs.sh: what a write keeps of the file it replaces (owner, mode, ACL,
# extended attributes: copy_attributes_from) and the digest that tells
# whether a file is the one expected (file_digest). Serves no request of its
# own: see write.sh.

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
	_com_mode=$3
	_com_perm=
	for _com_who in u g o; do
		case $_com_who in
		u) _com_bits=${_com_mode#?} ;;
		g) _com_bits=${_com_mode#????} ;;
		o) _com_bits=${_com_mode#???????} ;;
		esac
		_com_bits=${_com_bits%"${_com_bits#???}"}
		_com_set=$_com_who=
		case $_com_bits in r*) _com_set=${_com_set}r ;; esac
		case $_com_bits in ?w*) _com_set=${_com_set}w ;; esac
		case $_com_bits in ??[xst]) _com_set=${_com_set}x ;; esac
		_com_perm=$_com_perm$_com_set,
		case $_com_who$_com_bits in
		u??[sS]) _com_perm=${_com_perm}u+s, ;;
		g??[sS]) _com_perm=${_com_perm}g+s, ;;
		o??[tT]) _com_perm=${_com_perm}+t, ;;
		esac
	done
	chmod "${_com_perm%,}" "$2" 2>"$private/err" || {
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
	if [ -n "$wr_up" ]; then
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
	sha256sum:*) sha256sum <"$1" | { read -r _fd_hash _ && echo "sha256sum:$_fd_hash"; } ;;
	shasum:*) shasum -a 256 <"$1" | { read -r _fd_hash _ && echo "shasum:$_fd_hash"; } ;;
	openssl:*) openssl dgst -sha256 <"$1" | { read -r _fd_line && echo "openssl:${_fd_line##* }"; } ;;
	md5sum:*) md5sum <"$1" | { read -r _fd_hash _ && echo "md5sum:$_fd_hash"; } ;;
	cksum:*) cksum <"$1" | { read -r _fd_crc _fd_size _ && echo "cksum:$_fd_crc:$_fd_size"; } ;;
	bytes:*)
		_fd_copy=${2#bytes:}
		_fd_file=$1
		case $_fd_file in /*) ;; *) _fd_file=$PWD/$_fd_file ;; esac
		enter_temp "${_fd_copy#*:}" "${_fd_copy%%:*}" >/dev/null || return
		if cmp -s -- "$_fd_file" "$wr_temp"; then echo "$2"; else echo changed; fi
		remove_here
		;;
	esac
}
