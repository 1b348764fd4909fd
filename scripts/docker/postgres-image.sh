#!/usr/bin/env bash
# A stand-in for the postgres:15 image, made offline (Debian's postgresql-15 on bookworm minbase, `docker import`), to
# try docker-compose.yml where no registry is reachable (docs/deploy.md, "What was tried"). It honours POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB and the data folder /var/lib/postgresql/data as the official image does, and nothing
# else. Cached by tag (FORCE=1 makes it again). Use it through an override file:
#   printf 'services:\n  postgres:\n    image: mercato-postgres15-offline:local\n' > /tmp/offline.yml
#   docker-compose -f docker-compose.yml -f /tmp/offline.yml up -d
set -euo pipefail
tag="${1:-mercato-postgres15-offline:local}"
if [ -z "${FORCE:-}" ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag exists (FORCE=1 to make it again)"
  exit 0
fi
work=$(mktemp -d /tmp/pgimg.XXXXXX); root="$work/rootfs"
unmount_all() { for m in $(awk -v r="$root" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" || true; done; }
trap 'unmount_all; rm -rf --one-file-system "$work"' EXIT
debootstrap --variant=minbase --include=postgresql-15 bookworm "$root" http://deb.debian.org/debian > "$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
cat > "$root/usr/local/bin/docker-entrypoint.sh" <<'EOS'
#!/bin/sh
set -e
PGDATA=/var/lib/postgresql/data
BIN=/usr/lib/postgresql/15/bin
mkdir -p "$PGDATA" /run/postgresql && chown -R postgres:postgres "$PGDATA" /run/postgresql && chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "$POSTGRES_PASSWORD" > /tmp/pw && chown postgres /tmp/pw
  su postgres -c "$BIN/initdb -D $PGDATA -U $POSTGRES_USER --pwfile=/tmp/pw --auth-host=scram-sha-256 --auth-local=trust" >/dev/null
  rm /tmp/pw
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  su postgres -c "$BIN/pg_ctl -D $PGDATA -o '-c listen_addresses=' -w start" >/dev/null
  [ "$POSTGRES_DB" = postgres ] || su postgres -c "psql -U $POSTGRES_USER -d postgres -c 'create database \"$POSTGRES_DB\"'" >/dev/null
  su postgres -c "$BIN/pg_ctl -D $PGDATA -m fast -w stop" >/dev/null
fi
exec su postgres -c "exec $BIN/postgres -D $PGDATA -c listen_addresses='*'"
EOS
chmod +x "$root/usr/local/bin/docker-entrypoint.sh"
unmount_all
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" --numeric-owner --one-file-system -c . | docker import \
  --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' --change 'EXPOSE 5432' - "$tag" >/dev/null
echo "made $tag"
