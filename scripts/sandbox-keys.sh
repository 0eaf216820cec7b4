#!/usr/bin/env bash
# Generates the sandbox's client key, one host key per box, a known_hosts
# file and an ssh_config snippet, all under sandbox/keys/ (gitignored).
# Idempotent: existing keys are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=$PWD/sandbox/keys
mkdir -p "$keys"
chmod 700 "$keys"
[ -f "$keys/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C pi-remote-sandbox -f "$keys/id_ed25519"
: >"$keys/known_hosts.new"
cat >"$keys/ssh_config.new" <<CONF
# pi-remote sandbox hosts (docker-compose.yml). Use with
#   pi-remote --ssh-config $keys/ssh_config --host devbox ...
# or add "Include $keys/ssh_config" at the top of ~/.ssh/config.
CONF
for box in devbox:2201 devbox2:2202 bastion:2203 plainbox:2204 dropbox:2205 bbbox:2206 internal:; do
	name=${box%%:*} port=${box#*:}
	[ -f "$keys/host_$name" ] || ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$keys/host_$name"
	if [ -n "$port" ]; then
		echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$keys/host_$name.pub")" >>"$keys/known_hosts.new"
		printf 'Host %s\n  HostName 127.0.0.1\n  Port %s\n' "$name" "$port" >>"$keys/ssh_config.new"
	else
		# Reached through bastion by its compose service name.
		echo "$name $(cut -d' ' -f1-2 "$keys/host_$name.pub")" >>"$keys/known_hosts.new"
		printf 'Host %s\n  HostName %s\n  ProxyJump bastion\n' "$name" "$name" >>"$keys/ssh_config.new"
	fi
	printf '  User dev\n  IdentityFile %s/id_ed25519\n  IdentitiesOnly yes\n  UserKnownHostsFile %s/known_hosts\n\n' "$keys" "$keys" >>"$keys/ssh_config.new"
done
mv "$keys/known_hosts.new" "$keys/known_hosts"
mv "$keys/ssh_config.new" "$keys/ssh_config"
# sshd reads the mounted host keys as root; they must not be readable by others.
chmod 600 "$keys"/host_* "$keys/id_ed25519"
chmod 644 "$keys"/*.pub
echo "keys and ssh_config in $keys"
