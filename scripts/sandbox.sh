#!/usr/bin/env bash
# The sandbox hosts of docker-compose.yml.
#   bash scripts/sandbox.sh up     base image (debootstrap when missing), keys, build, start, wait for sshd
#   bash scripts/sandbox.sh down   stop and remove containers and volumes
# Starts dockerd when it is not running and we are root.
set -euo pipefail
cd "$(dirname "$0")/.."

# One project name wherever the checkout lives.
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-pi-remote-sandbox}

compose() {
	if docker compose version >/dev/null 2>&1; then
		docker compose "$@"
	else
		docker-compose "$@"
	fi
}

ensure_docker() {
	docker info >/dev/null 2>&1 && return
	if [ "$(id -u)" != 0 ]; then
		echo "sandbox: no Docker engine running (start dockerd)" >&2
		exit 1
	fi
	(dockerd >/var/log/pi-remote-dockerd.log 2>&1 &)
	for _ in $(seq 60); do
		docker info >/dev/null 2>&1 && return
		sleep 1
	done
	echo "sandbox: dockerd did not start; see /var/log/pi-remote-dockerd.log" >&2
	exit 1
}

# wait_ssh PORT: until sshd answers with its banner.
wait_ssh() {
	for _ in $(seq 60); do
		if banner=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && head -c 4 <&3" 2>/dev/null) && [ "$banner" = SSH- ]; then
			return
		fi
		sleep 1
	done
	echo "sandbox: nothing answers SSH on 127.0.0.1:$1" >&2
	compose logs >&2
	exit 1
}

case ${1:-up} in
up)
	ensure_docker
	bash scripts/sandbox-base.sh
	bash scripts/sandbox-keys.sh
	compose build
	compose up -d
	for port in 2201 2202 2203 2204 2205 2206; do wait_ssh "$port"; done
	echo "sandbox: up (devbox 2201, devbox2 2202, bastion 2203, plainbox 2204, dropbox 2205, bbbox 2206, internal via bastion)"
	;;
down)
	compose down -v --remove-orphans
	;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
