#!/usr/bin/env bash
# Run a command against a private, throw-away PostgreSQL cluster:
#
#     .ci/postgres.sh .venv/bin/python -m pytest -n 2
#
# initdb's a cluster in a temporary directory, starts it on 127.0.0.1 with a free port (its socket in that
# directory too, so nothing system-wide is touched), creates a role that may create databases (pytest-django
# makes its test databases with it), exports DATABASE_URL for the command, and removes everything when the
# command ends. PostgreSQL refuses to run as root, so under root the cluster runs as an unprivileged user
# ($TRELLIS_PG_OS_USER, default trellis-pg), created when missing. Needs the server binaries (initdb, pg_ctl)
# on PATH or under /usr/lib/postgresql/*/bin (Debian's `postgresql` package).
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]   (runs COMMAND with DATABASE_URL set to a private PostgreSQL cluster)" >&2
  exit 2
fi

if ! command -v initdb >/dev/null 2>&1; then
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do PATH="$dir:$PATH"; break; done
fi
for tool in initdb pg_ctl psql; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "error: $tool not found; install PostgreSQL (apt-get install -y postgresql) or put its bin/ on PATH" >&2
    exit 1
  }
done

as_pg=()
if [ "$(id -u)" = 0 ]; then
  pg_user="${TRELLIS_PG_OS_USER:-trellis-pg}"
  id -u "$pg_user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$pg_user"
  as_pg=(setpriv --reuid="$pg_user" --regid="$(id -g "$pg_user")" --init-groups --)
fi

data_dir="$(mktemp -d "${TMPDIR:-/tmp}/trellis-pg.XXXXXX")"
[ ${#as_pg[@]} -eq 0 ] || chown "$pg_user" "$data_dir"
chmod 700 "$data_dir"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

cleanup() {
  "${as_pg[@]}" pg_ctl -D "$data_dir/db" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$data_dir"
}
trap cleanup EXIT INT TERM

"${as_pg[@]}" initdb -D "$data_dir/db" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
  -E UTF8 --locale=C.UTF-8 >"$data_dir/initdb.log" 2>&1 || { cat "$data_dir/initdb.log" >&2; exit 1; }
# TRELLIS_PG_STATEMENTS=1 loads pg_stat_statements with planning times (bench/profile_pg_statements.py).
statements=""
[ "${TRELLIS_PG_STATEMENTS:-0}" != 1 ] || \
  statements=" -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"
# fsync off: a test cluster that is deleted afterwards needs no durability, and it halves commit latency.
"${as_pg[@]}" pg_ctl -D "$data_dir/db" -l "$data_dir/server.log" -w -t 60 \
  -o "-p $port -k $data_dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200$statements" \
  start >/dev/null || { cat "$data_dir/server.log" >&2; exit 1; }

password="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
"${as_pg[@]}" psql -h "$data_dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
  -c "CREATE ROLE trellis LOGIN CREATEDB PASSWORD '$password'" \
  -c "CREATE DATABASE trellis OWNER trellis"
[ -z "$statements" ] || "${as_pg[@]}" psql -h "$data_dir" -p "$port" -U postgres -d trellis -v ON_ERROR_STOP=1 -q \
  -c "CREATE EXTENSION pg_stat_statements" -c "GRANT pg_read_all_stats TO trellis" \
  -c "GRANT EXECUTE ON FUNCTION pg_stat_statements_reset TO trellis"

export DATABASE_URL="postgres://trellis:$password@127.0.0.1:$port/trellis"
echo "--- PostgreSQL $("${as_pg[@]}" postgres --version | awk '{print $3}') on 127.0.0.1:$port (data in $data_dir)"
"$@"
