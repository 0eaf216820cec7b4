#!/usr/bin/env bash
# The project's test command: formatting, vet, shellcheck of the shell code
# sent to hosts, and every test under the race detector. .ci/run calls this
# after installing what the tests need.
#
# Time budget: each package's tests get at most 30 minutes (go test
# -timeout); on a 2-core machine with two other CPU-bound processes the
# integration package, the longest, took 7 (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# The client is used from macOS and Windows too: the program, and every test
# binary, must build there (vet type-checks the tests as well).
for goos in darwin windows; do
	GOOS=$goos go vet ./...
	GOOS=$goos go build -o /dev/null ./cmd/pi-remote
done
if ! command -v shellcheck >/dev/null; then
	echo "shellcheck is not installed (apt-get install shellcheck)" >&2
	exit 1
fi
# The host's command server is one program in modules
# (ops/ssh/internal/hostproto/server/*.sh). Each module says in its first
# line that a variable set in one module and read in another is no
# finding there (SC2154 "referenced but not assigned", SC2034 "assigned
# but unused"), so shellcheck -s sh on one module is clean; the program as
# it is sent, all modules together, is checked with those lines taken out:
# no exclusion.
shellcheck -s sh $(git ls-files 'ops/*.sh' 'tools/*.sh')
server=ops/ssh/internal/hostproto/server
cat $(git ls-files "$server/*.sh") | sed 's/^\(# shellcheck shell=sh\) disable=SC2034,SC2154$/\1/' | shellcheck -s sh -
# -parallel 4: the integration tests mostly wait (sshd, sleeps, slow links).
go test -race -count=1 -timeout 30m -parallel 4 ./... "$@"
