#!/usr/bin/env bash
# Builds the image of every program (`make images`): the five programs of the platform and the
# three helpers deploy/compose uses (ferretdb, asynqmon, devkey). The binaries are built here
# with the Go toolchain, static (CGO_ENABLED=0), and copied into images FROM scratch
# (deploy/images/Dockerfile), so nothing is pulled: this works on a machine without a registry.
#
#   IMAGE_PREFIX  [rentalplatform/]  image names are IMAGE_PREFIX + program
#   IMAGE_TAG     [dev]
#   DOCKER        [docker]           the client; DOCKER_HOST says which engine
#   CA_BUNDLE     [/etc/ssl/certs/ca-certificates.crt]
# Arguments: the programs to build (all when none).
set -euo pipefail
cd "$(dirname "$0")/../.."

prefix=${IMAGE_PREFIX:-rentalplatform/}
tag=${IMAGE_TAG:-dev}
docker=${DOCKER:-docker}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

# program -> Go package
declare -A pkg=(
  [gateway]=./gateway
  [verification-svc]=./verification-svc
  [collections-svc]=./collections-svc
  [payments-svc]=./payments-svc
  [webhooks-svc]=./webhooks-svc
  [ferretdb]=./deploy/compose/cmd/ferretdb
  [asynqmon]=./deploy/compose/cmd/asynqmon
  [devkey]=./deploy/compose/cmd/devkey
)
order=(gateway verification-svc collections-svc payments-svc webhooks-svc ferretdb asynqmon devkey)
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=("${order[@]}")
for p in "${programs[@]}"; do
  [ -n "${pkg[$p]:-}" ] || { echo "images: unknown program $p (known: ${order[*]})" >&2; exit 2; }
done
[ -s "$ca" ] || { echo "images: no CA bundle at $ca (apt-get install ca-certificates, or set CA_BUNDLE)" >&2; exit 1; }

out=bin/images
rm -rf "$out/bin" "$out/ctx"
mkdir -p "$out/bin"
pkgs=()
for p in "${programs[@]}"; do pkgs+=("${pkg[$p]}"); done
# One go build for all: shared packages compile once. -trimpath keeps the build machine's paths
# out of the binaries; -s -w drops the symbol tables (panics still print file:line).
# The version (git describe) is the image's label and, stamped into the binary, the
# service.version of every span and metric (libs/telemetry.Version).
version=$(git describe --always --dirty 2>/dev/null || echo dev)
echo "images: go build ${programs[*]} ($version)"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X rentalplatform/libs/telemetry.buildVersion=$version" -o "$out/bin/" "${pkgs[@]}"

for p in "${programs[@]}"; do
  bin="$out/bin/$p"
  # Static means no program interpreter (ld.so) in the ELF headers: scratch has none.
  if command -v readelf >/dev/null && readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
    echo "images: $bin is not static" >&2; exit 1
  fi
  ctx="$out/ctx/$p"
  mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/etc/ssl/certs" "$ctx/data"
  chmod 1777 "$ctx/rootfs/tmp"
  chmod 0755 "$ctx/data"
  cp "$bin" "$ctx/rootfs/program"
  cp -L "$ca" "$ctx/rootfs/etc/ssl/certs/ca-certificates.crt"
  echo "images: $prefix$p:$tag"
  # Quiet unless it fails: a client of Docker 23 or later without buildx warns on every build
  # that it falls back to the classic builder, which is all this Dockerfile needs.
  if ! log=$("$docker" build -q -f deploy/images/Dockerfile --build-arg PROGRAM="$p" --build-arg VERSION="$version" \
    -t "$prefix$p:$tag" "$ctx" 2>&1); then
    echo "$log" >&2; exit 1
  fi
done
"$docker" images --format 'table {{.Repository}}:{{.Tag}}\t{{.Size}}' | grep -E "^(REPOSITORY|${prefix//./\\.}($(IFS='|'; echo "${programs[*]}")):$tag)" || true
