# The host side of the grep and find tools on a host without ripgrep and fd.
# Only POSIX sh and tools BusyBox has too are used: find (with -prune,
# -exec ... + and -print0), printf, cat, grep (-n -i -F -E -C -e), xargs -0,
# tr and wc. The Go side (tools/walk.go) reads the listing, applies the
# ignore files as rg and fd would, and asks for the files to search.
#
# Every record is NUL-terminated and starts with its kind:
#   d PATH   a directory        f PATH   a regular file
#   l PATH   a symbolic link    G PATH   a .git (the directory is a repository)
#   I PATH   an ignore file; the next record is its content
# Paths below the searched directory start with "./"; paths above it are
# absolute. After the records comes an empty record, then find's complaints
# (an unreadable directory) as text.

# emit_ignore_file PATH: an I record and the file's content.
emit_ignore_file() {
	printf 'I%s\0' "$1"
	cat -- "$1"
	printf '\0'
}

# describe_parents: .git and ignore files of every directory above the
# current one (rg and fd read those too).
describe_parents() {
	dir=$PWD
	while [ -n "$dir" ] && [ "$dir" != / ]; do
		dir=${dir%/*}
		[ -n "$dir" ] || dir=/
		base=${dir%/}
		if [ -e "$base/.git" ]; then
			printf 'G%s\0' "$base/.git"
			if [ -f "$base/.git/info/exclude" ] && [ -r "$base/.git/info/exclude" ]; then
				emit_ignore_file "$base/.git/info/exclude"
			fi
		fi
		for name in .gitignore .ignore; do
			if [ -f "$base/$name" ] && [ -r "$base/$name" ]; then
				emit_ignore_file "$base/$name"
			fi
		done
	done
}

# describe_tree: every entry below the current directory, skipping the
# insides of .git and node_modules, then the ignore files' contents.
describe_tree() {
	# No parentheses around "-exec ... {} +": BusyBox find then runs
	# nothing.
	find . -name .git -exec printf 'G%s\0' {} + -prune \
		-o -name node_modules -prune \
		-o -type d -exec printf 'd%s\0' {} + \
		-o -type l -exec printf 'l%s\0' {} + \
		-o -type f -exec printf 'f%s\0' {} +
	find . \( -name .git -o -name node_modules \) -prune \
		-o \( -name .gitignore -o -name .ignore \) -type f \
		-exec sh -c 'for f; do printf "I%s\0" "$f"; cat -- "$f"; printf "\0"; done' sh {} +
	if [ -f .git/info/exclude ] && [ -r .git/info/exclude ]; then
		emit_ignore_file ./.git/info/exclude
	fi
}

# describe_search_root: the whole description of the current directory,
# with find's complaints after an empty record.
describe_search_root() {
	describe_parents 2>/dev/null
	{ complaints=$(describe_tree 2>&1 >&3); } 3>&1
	status=$?
	printf '\0%s' "$complaints"
	return "$status"
}

# search_text_files CONTEXT GREP-ARGS...: searches the files named by the
# NUL-terminated list on standard input with grep GREP-ARGS, CONTEXT lines
# around each match, every line prefixed with its file name (/dev/null makes
# even a single file get one). Binary files (with a NUL byte), which rg
# skips, are left out: BusyBox grep cannot tell them, so the files that
# match are checked first; grep -l names them one a line, so no name may
# hold a newline. The names come after "--", never read as options. Exit
# status is grep's, or xargs's 123 when some grep found nothing.
search_text_files() {
	context=$1
	shift
	xargs -0 grep -l "$@" -- /dev/null |
		while IFS= read -r file; do
			has_nul "$file" || printf '%s\0' "$file"
		done |
		xargs -0 grep -n -C "$context" "$@" -- /dev/null
}

# has_nul FILE: whether FILE holds a NUL byte.
has_nul() {
	[ "$(tr -d '\000' <"$1" | wc -c)" -ne "$(wc -c <"$1")" ]
}
