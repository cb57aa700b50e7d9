#!/bin/sh
# Entry point of the PostgreSQL stand-in image: on an empty data directory, create the
# cluster with POSTGRES_USER as its superuser (password POSTGRES_PASSWORD) and the database
# POSTGRES_DB, as the official image does; then run the server on all interfaces.
set -eu

: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-${user}}"

if [ ! -s "${PGDATA}/PG_VERSION" ]; then
    pwfile="$(mktemp)"
    printf '%s\n' "${POSTGRES_PASSWORD}" >"${pwfile}"
    initdb --pgdata="${PGDATA}" --username="${user}" --pwfile="${pwfile}" \
        --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "${pwfile}"
    # Other containers on the Compose network connect over TCP, with the password.
    echo "host all all all scram-sha-256" >>"${PGDATA}/pg_hba.conf"
    pg_ctl --pgdata="${PGDATA}" --options="-c listen_addresses=''" --wait --silent start
    if [ "${db}" != "postgres" ]; then
        psql --quiet --username="${user}" --dbname=postgres --set=ON_ERROR_STOP=1 \
            --set=db="${db}" <<'SQL'
CREATE DATABASE :"db";
SQL
    fi
    pg_ctl --pgdata="${PGDATA}" --mode=fast --wait --silent stop
    echo "carril-standin-postgres: initialised ${PGDATA} (user ${user}, database ${db})"
fi

exec postgres -D "${PGDATA}" -c listen_addresses='*'
