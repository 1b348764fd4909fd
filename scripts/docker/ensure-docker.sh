#!/usr/bin/env bash
# Makes sure a Docker daemon answers, for `npm run test:docker` and CI: installs docker.io and debootstrap with apt when
# they are missing (root only), and docker-compose when no Compose is there (optional), starts dockerd in the background when it is not running (log: /tmp/mercato-dockerd.log)
# and waits for it. Exit 0 when `docker info` answers; otherwise exit 3 with the reason on standard error.
set -uo pipefail

say() { echo "ensure-docker: $*" >&2; }
ready() { docker info >/dev/null 2>&1; }

if ready && command -v debootstrap >/dev/null 2>&1 && { docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1; }; then exit 0; fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "docker or debootstrap is missing and cannot be installed here (needs root and apt-get)"
    exit 3
  fi
  say "installing docker.io and debootstrap with apt-get"
  if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap) >/tmp/mercato-docker-install.log 2>&1; then
    say "apt-get install docker.io debootstrap failed (see /tmp/mercato-docker-install.log)"
    exit 3
  fi
fi

# Compose (for the compose part of test:docker): Debian's docker-compose when neither it nor the plugin is there; optional
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "installing docker-compose with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >>/tmp/mercato-docker-install.log 2>&1 || say "docker-compose could not be installed (the compose test will be skipped)"
fi

if ready; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  say "the Docker daemon is not running and only root can start it here"
  exit 3
fi
say "starting dockerd (log: /tmp/mercato-dockerd.log)"
nohup dockerd >/tmp/mercato-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if ready; then exit 0; fi
  sleep 1
done
say "dockerd did not answer within 60 s; last lines of its log:"
tail -20 /tmp/mercato-dockerd.log >&2
exit 3
