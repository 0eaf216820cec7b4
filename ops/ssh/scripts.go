package ssh

// fileFunctions are the server's file operations, defined once per server
// so that each request is a short call. Each prints a status line first —
// "OK ..." or "E CODE message" — then any payload. They run inside q (a
// subshell with LC_ALL=C), so they may exit, cd and set options freely.
const fileFunctions = `
fe() {
	case $1 in
	*"ermission denied"*) set -- EACCES "$1";;
	*"o such file"*) set -- ENOENT "$1";;
	*"ot a directory"*) set -- ENOTDIR "$1";;
	*"s a directory"*) set -- EISDIR "$1";;
	*"ile exists"*) set -- EEXIST "$1";;
	*) set -- EIO "$1";;
	esac
	printf 'E %s %s\n' "$1" "$2"
}
er() {
	_e=; IFS= read -r _e <"$d/err"; _e=${_e:-$1}
	fe "$_e"
}
miss() {
	_p=${1%/*}
	while [ -n "$_p" ] && [ ! -e "$_p" ]; do _p=${_p%/*}; done
	if [ -n "$_p" ] && [ ! -d "$_p" ]; then echo "E ENOTDIR not a directory"; else echo "E ENOENT no such file or directory"; fi
}
fl() {
	_f=$1; _n=0
	while [ -L "$_f" ]; do
		_n=$((_n+1)); [ $_n -le 40 ] || return 1
		_l=$(readlink "$_f") || return 1
		case $_l in /*) _f=$_l;; *) _f=${_f%/*}/$_l;; esac
	done
}
pr() {
	if [ ! -e "$1" ]; then miss "$1"; return; fi
	fl "$1" || { echo "E EIO too many levels of symbolic links"; return; }
	if [ -d "$_f" ]; then
		cd -P "$_f" || { echo "E EIO cannot resolve $1"; return; }
		printf 'OK %s\n' "$PWD"; return
	fi
	_d=${_f%/*}
	cd -P "${_d:-/}" || { echo "E EIO cannot resolve $1"; return; }
	case $PWD in /) printf 'OK /%s\n' "${_f##*/}";; *) printf 'OK %s/%s\n' "$PWD" "${_f##*/}";; esac
}
po() {
	if [ -d "$1" ]; then echo "E EISDIR is a directory"; return; fi
	if [ ! -e "$1" ]; then miss "$1"; return; fi
	if [ ! -r "$1" ]; then echo "E EACCES permission denied"; return; fi
	echo OK
	dd if="$1" bs=$2 skip=$3 count=1 2>/dev/null
}
pst() {
	if [ ! -e "$1" ]; then miss "$1"; return; fi
	echo OK; ls -ldnL "$1"
}
pl() {
	if [ ! -e "$1" ]; then miss "$1"; return; fi
	if [ ! -d "$1" ]; then echo "E ENOTDIR not a directory"; return; fi
	if [ ! -r "$1" ] || [ ! -x "$1" ]; then echo "E EACCES permission denied"; return; fi
	echo OK
	if [ "$2" = gnu ]; then find -H "$1" -mindepth 1 -maxdepth 1 -printf '%y%Y %m %s %f\0' 2>/dev/null; return; fi
	cd "$1" || return
	for _e in .* *; do
		case $_e in .|..) continue;; esac
		[ -e "$_e" ] || [ -L "$_e" ] || continue
		_y=N; if [ -d "$_e" ]; then _y=d; elif [ -e "$_e" ]; then _y=f; fi
		printf '%s\0%s\0%s\0' "$_e" "$_y" "$(ls -ldn -- "$_e")"
	done
}
pm() {
	[ -d "$1" ] && { echo OK; return; }
	if mkdir -p "$1" 2>"$d/err"; then echo OK; return; fi
	_p=$1
	while [ -n "$_p" ] && [ ! -e "$_p" ]; do _p=${_p%/*}; done
	if [ -n "$_p" ] && [ ! -d "$_p" ]; then echo "E ENOTDIR not a directory"; else er "mkdir failed"; fi
}
mo() {
	set -f
	set -- "$1" "$2" $(ls -ldn "$1")
	_m=$3; _p=
	for _w in u g o; do
		case $_w in u) _c=${_m#?};; g) _c=${_m#????};; o) _c=${_m#???????};; esac
		_c=${_c%"${_c#???}"}
		_s=$_w=
		case $_c in r*) _s=${_s}r;; esac
		case $_c in ?w*) _s=${_s}w;; esac
		case $_c in ??[xst]) _s=${_s}x;; esac
		_p=$_p$_s,
		case $_w$_c in u??[sS]) _p=${_p}u+s,;; g??[sS]) _p=${_p}g+s,;; o??[tT]) _p=${_p}+t,;; esac
	done
	set +f
	chmod "${_p%,}" "$2" || return
	if [ "$5:$6" != "$U:$G" ]; then chown "$5:$6" "$2" 2>/dev/null; fi
	:
}
dg() {
	case $2 in
	sha256:*) sha256sum <"$1" | { read _h _; echo "sha256:$_h"; };;
	cksum:*) cksum <"$1" | { read _c _s _; echo "cksum:$_c:$_s"; };;
	esac
}
pt() {
	fl "$1" || { echo "E EIO too many levels of symbolic links"; return 1; }
	if [ -d "$_f" ]; then echo "E EISDIR is a directory"; return 1; fi
	_d=${_f%/*}
	if [ ! -d "${_d:-/}" ] && [ "$4" = p ]; then
		_r=$(pm "$_d")
		case $_r in OK*) ;; *) printf '%s\n' "$_r"; return 1;; esac
	fi
	if [ ! -d "${_d:-/}" ]; then miss "$_f"; return 1; fi
	_t=$_d/.${_f##*/}.pi-remote-$3
	umask 077; set -C
	if ! { : >"$_t"; } 2>|"$d/err"; then set +C; er "cannot create $_t"; return 1; fi
	set +C
	if [ -e "$_f" ]; then
		mo "$_f" "$_t" || { rm -f "$_t"; echo "E EIO cannot copy the mode of $_f"; return 1; }
	else
		chmod "$2" "$_t"
	fi
}
pf() {
	fl "$1" || { rm -f "$2"; echo "E EIO too many levels of symbolic links"; return; }
	if [ -n "$3" ] && [ "$(dg "$_f" "$3")" != "$3" ]; then rm -f "$2"; echo "E EMODIFIED file changed on disk"; return; fi
	if ! mv -f "$2" "$_f" 2>"$d/err"; then rm -f "$2"; er "rename failed"; return; fi
	echo OK
}
ptt() {
	if pt "$@"; then printf 'OK %s\n' "$_t"; fi
}
pw() {
	pt "$1" "$2" "$4" "$6" || return 0
	if ! printf "$5" >"$_t"; then rm -f "$_t"; echo "E EIO cannot write $_t"; return; fi
	pf "$1" "$_t" "$3"
}
pp() {
	for _t in sha256sum readlink; do command -v $_t >/dev/null 2>&1 && printf '%s ' $_t; done
	find / -maxdepth 0 -printf '' >/dev/null 2>&1 && printf 'gnufind '
	echo
}
`
