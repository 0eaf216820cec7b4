#!/usr/bin/env bash
# Installs the Node.js packages some tests drive (servers and clients
# nobody here wrote: MCP reference servers, the ACP SDK). Each folder
# under integration/node/ is one npm project with its package-lock.json;
# `npm ci` installs exactly what the lock file names. A folder whose
# node_modules is newer than its lock file is left as it is.
#
# The tests find the packages under integration/node/NAME/node_modules;
# outside CI a test whose packages are missing skips and says to run this.
set -euo pipefail
cd "$(dirname "$0")/.."

for lock in integration/node/*/package-lock.json; do
	[ -e "$lock" ] || continue
	dir=$(dirname "$lock")
	if [ -d "$dir/node_modules" ] && [ "$dir/node_modules" -nt "$lock" ]; then
		continue
	fi
	echo "node-deps: npm ci in $dir"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	touch "$dir/node_modules"
done
