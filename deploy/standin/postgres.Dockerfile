# A stand-in for the official postgres image (docker-compose.yml's `db`), for machines that
# reach Debian's packages but no container registry (scripts/compose-smoke-local.sh).
# Bookworm's PostgreSQL 15, not 17: the web app's SQL does not depend on the difference, and
# the production stack runs the official image. Honours what the Compose file uses of the
# official image: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, the data directory and
# `pg_isready` on PATH.
ARG BASE_IMAGE=carril-standin/debian:bookworm-minbase
FROM ${BASE_IMAGE}
# uid/gid 999 as in the official image, created before the package would pick its own.
# Unpinned on purpose: the stand-in follows bookworm's current packages.
# hadolint ignore=DL3008
RUN groupadd --system --gid 999 postgres \
    && useradd --system --uid 999 --gid postgres --home-dir /var/lib/postgresql --shell /bin/bash postgres \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data \
    && install -d -o postgres -g postgres -m 2775 /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/carril-standin-postgres
ENV PATH=/usr/lib/postgresql/15/bin:${PATH} \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
LABEL org.opencontainers.image.title="carril stand-in for postgres" \
      org.opencontainers.image.description="Debian bookworm postgresql-15; local smoke tests only"
USER 999:999
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["carril-standin-postgres"]
