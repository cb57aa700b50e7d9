"""Settings for the Carril web app, read from the environment when Django starts.

Every knob is a `CARRIL_*` variable (or `DATABASE_URL`); the README has the table.
`CARRIL_ENV=production` refuses unsafe defaults: the secret key and the GPU service token
must come from the environment, cookies are Secure, DEBUG is off.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import csp.constants as csp
import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from carril_web.env import (
    env_float,
    env_int,
    env_list,
    env_prices,
    env_str,
    private_file_create,
    production_secret_check,
    secret_from_env_or_file,
    storage_make_private,
    storage_root,
)

WEB_DIR = Path(__file__).resolve().parent.parent

CARRIL_ENV = env_str("CARRIL_ENV", default="dev")
if CARRIL_ENV not in {"dev", "production"}:
    raise ImproperlyConfigured(f"CARRIL_ENV must be dev or production, got {CARRIL_ENV!r}")
PRODUCTION = CARRIL_ENV == "production"

# Every web process (gunicorn, the reconciler, manage.py) starts here: owner-only files.
CARRIL_STORAGE = storage_make_private(storage_root())

SECRET_KEY = secret_from_env_or_file(
    env_name="CARRIL_SECRET_KEY",
    path=CARRIL_STORAGE / "secrets" / "django_secret_key",
    production=PRODUCTION,
)
DEBUG = not PRODUCTION and env_str("CARRIL_DEBUG", default="0") == "1"

ALLOWED_HOSTS = env_list(
    "CARRIL_ALLOWED_HOSTS",
    default=[] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"],
)
CSRF_TRUSTED_ORIGINS = env_list("CARRIL_CSRF_TRUSTED_ORIGINS", default=[])

# The GPU service. The token is read lazily by gpu_client (env, then the secrets file the
# GPU service writes in dev), so the web app may start before the GPU service.
CARRIL_GPU_SERVICE_URL = env_str("CARRIL_GPU_SERVICE_URL", default="http://127.0.0.1:8001")
CARRIL_GPU_SERVICE_TIMEOUT_S = env_float("CARRIL_GPU_SERVICE_TIMEOUT_S", default=5.0)
if PRODUCTION:
    production_secret_check(
        env_name="CARRIL_GPU_SERVICE_TOKEN", value=env_str("CARRIL_GPU_SERVICE_TOKEN", default="")
    )

# /metrics: with a token, only `Authorization: Bearer <token>` reads it (Prometheus'
# `credentials_file`). In production without one, nobody does: the published port never
# serves metrics to anyone who asks.
CARRIL_METRICS_TOKEN = env_str("CARRIL_METRICS_TOKEN", default="").strip()
if PRODUCTION and CARRIL_METRICS_TOKEN:
    production_secret_check(env_name="CARRIL_METRICS_TOKEN", value=CARRIL_METRICS_TOKEN)

# Upload and dataset caps.
CARRIL_UPLOAD_MAX_BYTES = env_int("CARRIL_UPLOAD_MAX_BYTES", default=2 * 1024**3)
CARRIL_DATASET_MAX_UNCOMPRESSED_BYTES = env_int(
    "CARRIL_DATASET_MAX_UNCOMPRESSED_BYTES", default=8 * 1024**3
)
CARRIL_DATASET_MAX_FILES = env_int("CARRIL_DATASET_MAX_FILES", default=200_000)
CARRIL_DATASET_MAX_RATIO = env_float("CARRIL_DATASET_MAX_RATIO", default=200.0)
# Threads per web process that validate received datasets (ADR 0025).
CARRIL_DATASET_VALIDATION_THREADS = max(1, env_int("CARRIL_DATASET_VALIDATION_THREADS", default=1))
CARRIL_INFER_MAX_IMAGES = env_int("CARRIL_INFER_MAX_IMAGES", default=100)
# Pixel caps, checked from each image's header before anything decodes it.
CARRIL_INFER_MAX_PIXELS = env_int("CARRIL_INFER_MAX_PIXELS", default=40_000_000)
CARRIL_DATASET_MAX_PIXELS = env_int("CARRIL_DATASET_MAX_PIXELS", default=64_000_000)

# API tokens expire this many days after they are issued.
CARRIL_TOKEN_TTL_DAYS = env_int("CARRIL_TOKEN_TTL_DAYS", default=90)
if CARRIL_TOKEN_TTL_DAYS < 1:
    raise ImproperlyConfigured("CARRIL_TOKEN_TTL_DAYS must be at least 1")

# Failed sign-ins (UI, admin, API token endpoint), counted in the database by
# django-axes (accounts/throttling.py, ADR 0024): per username at one client address,
# per address (a higher ceiling), and per username from anywhere (a slowdown that an
# address the username signed in from recently does not wait for).
CARRIL_LOGIN_FAILURE_LIMIT = env_int("CARRIL_LOGIN_FAILURE_LIMIT", default=10)
CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT", default=100)
CARRIL_LOGIN_COOLOFF_S = env_int("CARRIL_LOGIN_COOLOFF_S", default=900)
CARRIL_LOGIN_USERNAME_DELAY_AFTER = env_int("CARRIL_LOGIN_USERNAME_DELAY_AFTER", default=5)
CARRIL_LOGIN_USERNAME_DELAY_MAX_S = env_int("CARRIL_LOGIN_USERNAME_DELAY_MAX_S", default=60)
CARRIL_LOGIN_KNOWN_ADDRESS_DAYS = env_int("CARRIL_LOGIN_KNOWN_ADDRESS_DAYS", default=30)
# How many reverse proxies in front append to X-Forwarded-For (1 behind the Compose TLS
# proxy); 0 counts failures against the connection's address and ignores the header.
CARRIL_TRUSTED_PROXIES = env_int("CARRIL_TRUSTED_PROXIES", default=0)
if (
    min(
        CARRIL_LOGIN_FAILURE_LIMIT,
        CARRIL_LOGIN_COOLOFF_S,
        CARRIL_LOGIN_USERNAME_DELAY_AFTER,
        CARRIL_LOGIN_KNOWN_ADDRESS_DAYS,
    )
    < 1
    or min(CARRIL_LOGIN_USERNAME_DELAY_MAX_S, CARRIL_TRUSTED_PROXIES) < 0
):
    raise ImproperlyConfigured(
        "CARRIL_LOGIN_FAILURE_LIMIT, CARRIL_LOGIN_COOLOFF_S, CARRIL_LOGIN_USERNAME_DELAY_AFTER "
        "and CARRIL_LOGIN_KNOWN_ADDRESS_DAYS must be at least 1, "
        "CARRIL_LOGIN_USERNAME_DELAY_MAX_S and CARRIL_TRUSTED_PROXIES at least 0"
    )
if CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT < CARRIL_LOGIN_FAILURE_LIMIT:
    raise ImproperlyConfigured(
        "CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT must be at least CARRIL_LOGIN_FAILURE_LIMIT "
        f"({CARRIL_LOGIN_FAILURE_LIMIT}), got {CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT}"
    )

# Per-user quotas (issue 16); 0 is no limit. Administrators override them per user.
CARRIL_QUOTA_MAX_GPUS = env_int("CARRIL_QUOTA_MAX_GPUS", default=0)
CARRIL_QUOTA_GPU_HOURS_PER_MONTH = env_float("CARRIL_QUOTA_GPU_HOURS_PER_MONTH", default=0.0)
CARRIL_QUOTA_STORAGE_BYTES = env_int("CARRIL_QUOTA_STORAGE_BYTES", default=0)

# The cloud price per GPU-hour of an equivalent GPU, per GPU model (the name the runtime
# reports), for the cost comparison (cost/gpu_prices.py, ADR 0049): `model=price,...`.
# Models not listed take the cost page's single cloud price.
CARRIL_GPU_PRICES = env_prices("CARRIL_GPU_PRICES")

# Storage retention (issue 16, retention/policy.py); 0 turns a rule off.
CARRIL_RETAIN_INFERENCE_DAYS = env_float("CARRIL_RETAIN_INFERENCE_DAYS", default=30.0)
CARRIL_PRUNE_LAST_CHECKPOINTS = env_int("CARRIL_PRUNE_LAST_CHECKPOINTS", default=1)
CARRIL_RETAIN_RETIRED_DAYS = env_float("CARRIL_RETAIN_RETIRED_DAYS", default=90.0)
CARRIL_RETAIN_FAILED_DAYS = env_float("CARRIL_RETAIN_FAILED_DAYS", default=30.0)
CARRIL_RETAIN_INCOMING_S = env_float("CARRIL_RETAIN_INCOMING_S", default=3600.0)
CARRIL_PRUNE_INTERVAL_S = env_float("CARRIL_PRUNE_INTERVAL_S", default=3600.0)

# The reconciler loop.
CARRIL_RECONCILE_INTERVAL_S = env_float("CARRIL_RECONCILE_INTERVAL_S", default=2.0)
CARRIL_DISPATCH_BACKOFF_MAX_S = env_float("CARRIL_DISPATCH_BACKOFF_MAX_S", default=60.0)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "datasets",
    "registry",
    "jobs",
    "usage",
    "retention",
    "cost",
    "webhooks",
    "api",
    "observability",
    "ui",
]

MIDDLEWARE = [
    "observability.middleware.RequestIdMiddleware",
    "observability.middleware.HttpMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy on every response (ADR 0058)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "api.query_params.UnknownQueryParameterMiddleware",
    # Last, as axes asks: it turns a sign-in it refused into the throttled response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "carril_web.urls"
WSGI_APPLICATION = "carril_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

SQLITE_BUSY_TIMEOUT_S = 20  # under gunicorn's 120 s worker timeout
DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL",
        default=f"sqlite:///{CARRIL_STORAGE / 'web.sqlite3'}",
        conn_max_age=60,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes write (gunicorn's threads, the reconciler): a transaction takes
    # the write lock when it begins, so a second writer waits up to the timeout instead
    # of failing "database is locked" when its read turns into a write; under WAL
    # readers never wait for a writer (ADR 0055).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": SQLITE_BUSY_TIMEOUT_S,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        **DATABASES["default"].get("OPTIONS", {}),
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" and DATABASES["default"][
    "NAME"
] not in ("", ":memory:"):
    # SQLite would create the file with the process umask (often world-readable): it
    # holds password hashes and sessions, so it is created private first.
    private_file_create(Path(DATABASES["default"]["NAME"]))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "accounts.password.RevokeApiTokensOnPasswordChange"},
]
AUTHENTICATION_BACKENDS = [
    "accounts.throttling.RequestOnlyAxesBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = CARRIL_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=CARRIL_LOGIN_COOLOFF_S)
# Axes counts a username at one address; its reset on success then clears only the
# signed-in username's failures there. The address ceiling and the per-username
# slowdown are the handler's (ADR 0024).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "accounts.throttling.SignInThrottleHandler"
AXES_CLIENT_IP_CALLABLE = "accounts.throttling.client_address"
AXES_LOCKOUT_CALLABLE = "accounts.throttling.throttled_response"
AXES_RESET_ON_SUCCESS = True
# Refused attempts are not counted: a guesser cannot stretch a wait, and a refusal writes
# nothing.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Axes' log of every sign-in is off; the handler keeps one row per username and address
# it signed in from (the known addresses), in the same table.
AXES_DISABLE_ACCESS_LOG = True
AXES_HTTP_RESPONSE_CODE = 429

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = CARRIL_STORAGE / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Uploads stream to disk whatever their size: no in-memory handler at all.
FILE_UPLOAD_HANDLERS = ["datasets.uploads.CappedTemporaryFileUploadHandler"]
FILE_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = CARRIL_INFER_MAX_IMAGES + 10
FILE_UPLOAD_TEMP_DIR = str(CARRIL_STORAGE / "uploads" / "tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# HSTS (ADR 0058): Django sends it only on a request that came over HTTPS (in production,
# the TLS proxy's X-Forwarded-Proto: https), so a plain-HTTP install never pins itself.
CARRIL_HSTS_SECONDS = env_int("CARRIL_HSTS_SECONDS", default=31_536_000 if PRODUCTION else 0)
if CARRIL_HSTS_SECONDS < 0:
    raise ImproperlyConfigured("CARRIL_HSTS_SECONDS must be at least 0")
SECURE_HSTS_SECONDS = CARRIL_HSTS_SECONDS
# django-csp (ADR 0058). The UI loads every script and style sheet from this server and
# runs no inline script or handler; templates do set style attributes (bar widths,
# confusion-matrix shades computed per row), so only attributes may be inline styles.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp.SELF],
        "script-src": [csp.SELF],
        "style-src": [csp.SELF],
        "style-src-attr": [csp.UNSAFE_INLINE],
        "img-src": [csp.SELF, "data:"],
        "object-src": [csp.NONE],
        "base-uri": [csp.NONE],
        "form-action": [csp.SELF],
        "frame-ancestors": [csp.NONE],
    }
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "api.scopes.TokenScopes",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.DepthLimitedJSONParser",  # JSON nested too deep: 400, not 500
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pages",
    "PAGE_SIZE": 25,
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Carril API",
    "DESCRIPTION": "Datasets, model registry and training/inference jobs on your own GPUs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # Three choice sets share the name `format`: what a version exports to, what inference
    # runs on, and what can be downloaded.
    "ENUM_NAME_OVERRIDES": {
        "ExportFormatEnum": "registry.models.ExportFormat",
        "ServingFormatEnum": "registry.models.ServingFormat",
        "DownloadFormatEnum": "registry.models.DOWNLOAD_FORMATS",
    },
}

CARRIL_LOG_FORMAT = env_str("CARRIL_LOG_FORMAT", default="json" if PRODUCTION else "text")
CARRIL_LOG_LEVEL = env_str("CARRIL_LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "observability.logging.RequestIdFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
            # The same field names as the GPU service's lines, so one query reads both.
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": CARRIL_LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": CARRIL_LOG_LEVEL},
    # httpx logs every request at INFO: the reconciler would fill the log every pass.
    "loggers": {"django.server": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}
if CARRIL_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured("CARRIL_LOG_FORMAT must be text or json")
