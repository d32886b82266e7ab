#!/usr/bin/env bash
# Make sure a Docker engine answers: install docker.io and start dockerd when none runs.
# Idempotent; safe to call from CI, the demo and the tests.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "installing the Docker engine (docker.io)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd..."
  nohup dockerd >/var/log/arena-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/arena-dockerd.log" >&2; exit 1; }
echo "docker engine $(docker version --format '{{.Server.Version}}') is up"
