#!/usr/bin/env bash
# The project's test command: formatting, vet, and every test under the race
# detector. .ci/run calls this after installing what the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go test -race -count=1 ./... "$@"
