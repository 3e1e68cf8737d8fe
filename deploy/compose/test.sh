#!/usr/bin/env bash
# `make compose-test`: the Compose platform run for real (docs/operations.md, "compose-test").
#
# 1. A Docker engine: the one DOCKER_HOST or /var/run/docker.sock names when it answers;
#    otherwise Debian's docker.io is installed when dockerd is missing, and a dockerd of this
#    test's own is started with --bridge=none --iptables=false (containers use the host's
#    network only, so every connection stays on 127.0.0.1), its data under
#    RENTAL_DOCKER_ROOT [/var/lib/rental-docker], its socket under /run/rental-docker; it is
#    stopped again at the end.
# 2. The images (`make images`, deploy/images/build.sh) and Compose (bin/docker-compose,
#    `make compose-tool`, which the Makefile builds first).
# 3. The Go test deploy/compose/compose_test.go: up with health waits, the README walkthrough,
#    a killed container restarted with nothing lost, down with volumes removed.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
root=${RENTAL_DOCKER_ROOT:-/var/lib/rental-docker}
run=/run/rental-docker
sock=unix://$run/docker.sock

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

started=""
stop_engine() {
  [ -n "$started" ] || return 0
  echo "compose-test: stopping the dockerd it started (pid $started)"
  kill -TERM "$started" 2>/dev/null || true
  for _ in $(seq 1 150); do kill -0 "$started" 2>/dev/null || return 0; sleep 0.2; done
  echo "compose-test: dockerd $started did not stop within 30s" >&2
}
trap stop_engine EXIT

if ! engine_up; then
  export DOCKER_HOST=$sock
fi
if ! engine_up; then
  if ! command -v dockerd >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "compose-test: no Docker engine, and installing docker.io needs root" >&2; exit 1; }
    echo "compose-test: installing Debian's docker.io"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq docker.io >/dev/null
  fi
  command -v docker >/dev/null || { echo "compose-test: docker.io installed no docker client" >&2; exit 1; }
  mkdir -p "$root" "$run"
  # A dockerd killed outright leaves its pid file, and the next one refuses to start.
  if [ -f "$run/dockerd.pid" ] && ! kill -0 "$(cat "$run/dockerd.pid")" 2>/dev/null; then
    rm -f "$run/dockerd.pid"
  fi
  echo "compose-test: starting dockerd (data in $root, socket $sock, log $root/dockerd.log)"
  # setsid: its own session, so a Ctrl-C of make reaches the test and the trap stops it.
  setsid dockerd --bridge=none --iptables=false --ip-masq=false \
    --data-root "$root" --exec-root "$run/exec" --pidfile "$run/dockerd.pid" \
    --host "$sock" >>"$root/dockerd.log" 2>&1 &
  started=$!
  for _ in $(seq 1 150); do engine_up && break; kill -0 "$started" 2>/dev/null || break; sleep 0.2; done
  engine_up || { echo "compose-test: dockerd did not come up; its log:" >&2; tail -30 "$root/dockerd.log" >&2; exit 1; }
fi
echo "compose-test: Docker engine $(docker version --format '{{.Server.Version}}') at ${DOCKER_HOST:-unix:///var/run/docker.sock}; $(bin/docker-compose version)"

# What a test that was killed left behind (its projects are named rentalci…): containers that
# would start again with the engine, volumes. Nothing else is touched.
stale=$(docker ps -aq --filter label=com.docker.compose.project | while read -r id; do
  docker inspect --format '{{index .Config.Labels "com.docker.compose.project"}} {{.Id}}' "$id"
done | awk '$1 ~ /^rentalci/ {print $2}')
if [ -n "$stale" ]; then
  echo "compose-test: removing containers of earlier, unfinished runs"
  docker rm -f $stale >/dev/null
fi
docker volume ls -q | grep -E '^rentalci[0-9a-f]+_' | xargs -r docker volume rm >/dev/null || true

# The names the test and compose.yaml expect, whatever the caller's environment says.
export IMAGE_PREFIX=rentalplatform/ IMAGE_TAG=dev
deploy/images/build.sh
echo "compose-test: engine and images ready after $((SECONDS - start))s"

RENTAL_COMPOSE_TEST=1 COMPOSE="$PWD/bin/docker-compose" \
  go test -count=1 -timeout 20m -v -run '^TestCompose$' ./deploy/compose/
echo "compose-test: passed in $((SECONDS - start))s"
