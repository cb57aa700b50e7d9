#!/bin/sh
# Entry point of the web image. One image, three roles:
#   serve      migrate the database, collect static files, then run gunicorn
#   reconcile  the reconciler loop (dispatches queued jobs, follows the GPU service)
#   anything else is run as given (`manage.py shell`, `sh`, ...)
set -eu

case "${1:-serve}" in
serve)
    python manage.py migrate --noinput
    python manage.py collectstatic --noinput --verbosity 0
    # The demo account exists only where its password was given; that password is in
    # the env file already, so keep it out of the container logs.
    if [ -n "${CARRIL_DEMO_PASSWORD:-}" ]; then
        python manage.py ensure_demo_user >/dev/null
    fi
    # One process with threads rather than several worker processes: the request and job
    # metrics live in this process's Prometheus registry, and several processes would each
    # answer a scrape with their own partial counts.
    exec gunicorn carril_web.wsgi:application \
        --bind 0.0.0.0:8000 \
        --workers 1 \
        --threads "${CARRIL_WEB_THREADS:-8}" \
        --timeout 120 \
        --graceful-timeout 25 \
        --worker-tmp-dir /dev/shm \
        --no-control-socket
    ;;
reconcile)
    exec python manage.py reconcile
    ;;
*)
    exec "$@"
    ;;
esac
