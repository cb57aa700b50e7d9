"""`python -m gpu_service`: run the API on CARRIL_GPU_HOST:CARRIL_GPU_PORT.

Imports stay inside `main()`: spawned workers re-import this module as `__mp_main__`,
and they must not pay for (or run) any of it.
"""

from __future__ import annotations


def main() -> None:
    import logging
    import sys

    import uvicorn

    from gpu_service.api.app import create_app
    from gpu_service.errors import CarrilError
    from gpu_service.logging import logging_configure
    from gpu_service.secret_environment import drop_secrets
    from gpu_service.settings import load_settings

    try:
        settings = load_settings()
    except CarrilError as exc:  # unsafe or unreadable configuration: refuse to start
        sys.exit(f"gpu_service: {exc.message}")
    # Before anything is spawned: workers and the weights helper inherit os.environ.
    dropped = drop_secrets()
    logging_configure(settings=settings)
    if dropped:
        logging.getLogger(__name__).info("secrets kept out of child processes: %s", dropped)
    logging.getLogger(__name__).info(
        "GPU service on %s:%s, storage %s", settings.gpu_host, settings.gpu_port, settings.storage
    )
    uvicorn.run(
        create_app(settings),
        host=settings.gpu_host,
        port=settings.gpu_port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()
