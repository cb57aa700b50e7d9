"""Settings for the Carril web app, read from the environment when Django starts.

Every knob is a `CARRIL_*` variable (or `DATABASE_URL`); the README has the table.
`CARRIL_ENV=production` refuses unsafe defaults: the secret key and the GPU service token
must come from the environment, cookies are Secure, DEBUG is off.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from carril_web.env import (
    PLACEHOLDER_SECRETS,
    env_float,
    env_int,
    env_list,
    env_str,
    secret_from_env_or_file,
    storage_root,
)

WEB_DIR = Path(__file__).resolve().parent.parent

CARRIL_ENV = env_str("CARRIL_ENV", default="dev")
if CARRIL_ENV not in {"dev", "production"}:
    raise ImproperlyConfigured(f"CARRIL_ENV must be dev or production, got {CARRIL_ENV!r}")
PRODUCTION = CARRIL_ENV == "production"

CARRIL_STORAGE = storage_root()
CARRIL_STORAGE.mkdir(parents=True, exist_ok=True)

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
if PRODUCTION and env_str("CARRIL_GPU_SERVICE_TOKEN", default="").lower() in PLACEHOLDER_SECRETS:
    raise ImproperlyConfigured(
        "CARRIL_GPU_SERVICE_TOKEN must be set to a real secret when CARRIL_ENV=production"
    )

# Upload and dataset caps.
CARRIL_UPLOAD_MAX_BYTES = env_int("CARRIL_UPLOAD_MAX_BYTES", default=2 * 1024**3)
CARRIL_DATASET_MAX_UNCOMPRESSED_BYTES = env_int(
    "CARRIL_DATASET_MAX_UNCOMPRESSED_BYTES", default=8 * 1024**3
)
CARRIL_DATASET_MAX_FILES = env_int("CARRIL_DATASET_MAX_FILES", default=200_000)
CARRIL_DATASET_MAX_RATIO = env_float("CARRIL_DATASET_MAX_RATIO", default=200.0)
CARRIL_INFER_MAX_IMAGES = env_int("CARRIL_INFER_MAX_IMAGES", default=100)

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
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "datasets",
    "registry",
    "jobs",
    "api",
    "observability",
    "ui",
]

MIDDLEWARE = [
    "observability.middleware.RequestIdMiddleware",
    "observability.middleware.HttpMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL",
        default=f"sqlite:///{CARRIL_STORAGE / 'web.sqlite3'}",
        conn_max_age=60,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
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
FILE_UPLOAD_PERMISSIONS = 0o640

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
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
