# A stand-in for python:3.11-slim-bookworm, for machines that reach Debian's packages but
# no container registry (scripts/compose-smoke-local.sh). Built on a `debootstrap
# --variant=minbase bookworm` root imported with `docker import`: bookworm's own Python
# 3.11 (3.11.2, where the official image has the latest 3.11 release) with `venv`, on the
# same Debian release as the official image. Only for the local smoke test; production
# images build on the official base (see docs/operations.md).
ARG BASE_IMAGE=carril-standin/debian:bookworm-minbase
FROM ${BASE_IMAGE}
# Unpinned on purpose: the stand-in follows bookworm's current packages, like the
# official image follows its base's.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates python3.11 python3.11-venv \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && ln -s /usr/bin/python3.11 /usr/local/bin/python \
    && ln -s /usr/bin/python3.11 /usr/local/bin/python3
ENV LANG=C.UTF-8
LABEL org.opencontainers.image.title="carril stand-in for python:3.11-slim-bookworm" \
      org.opencontainers.image.description="Debian bookworm minbase + python3.11; local smoke tests only"
CMD ["python3"]
