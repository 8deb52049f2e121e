"""Settings for Trellis.

Everything has a development default so `make run` works on a fresh clone;
production overrides come from the environment (see README.md).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

from designer import conf

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


LOCAL_HOSTS = ["127.0.0.1", "localhost", "[::1]"]


def _is_local_host(host: str) -> bool:
    host = host.lower()
    return host in LOCAL_HOSTS or host in ("::1", ".localhost") or host.endswith(".localhost")


# Debug mode (tracebacks on error pages, the public development key) is for a developer's own
# machine. It defaults to on only while the site answers local host names alone: a deployment has
# to name its host in DJANGO_ALLOWED_HOSTS, and that turns debug off unless DJANGO_DEBUG insists.
_CONFIGURED_HOSTS = _env_list("DJANGO_ALLOWED_HOSTS", [])
DEBUG = _env_bool("DJANGO_DEBUG", all(_is_local_host(host) for host in _CONFIGURED_HOSTS))

# The development key is public (it is in this file), so without debug a real key is required,
# and the development key (or any key Django itself marks insecure) is refused outright.
DEVELOPMENT_SECRET_KEY = "django-insecure-trellis-development-only"
# The same bar as Django's own deployment check (security.W009): a key shorter than 50 characters or
# made of fewer than 5 distinct characters can be guessed, and with it sessions and signatures forged.
MIN_SECRET_KEY_LENGTH = 50
MIN_SECRET_KEY_UNIQUE_CHARACTERS = 5


def _secret_key_problem(key: str) -> str | None:
    if not key:
        return "it is not set"
    if key.startswith("django-insecure-"):
        return "it is a 'django-insecure-' key, which is public or marked for development"
    if len(key) < MIN_SECRET_KEY_LENGTH:
        return f"it is {len(key)} characters long; at least {MIN_SECRET_KEY_LENGTH} are needed"
    if len(set(key)) < MIN_SECRET_KEY_UNIQUE_CHARACTERS:
        return (f"it uses only {len(set(key))} distinct characters; at least {MIN_SECRET_KEY_UNIQUE_CHARACTERS} "
                f"are needed")
    return None


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
_KEY_PROBLEM = None if DEBUG else _secret_key_problem(SECRET_KEY)
if _KEY_PROBLEM is not None:
    raise RuntimeError(
        f"DJANGO_SECRET_KEY must be set to a private random value when debug is off (DJANGO_DEBUG=false, or "
        f"DJANGO_ALLOWED_HOSTS names a non-local host): {_KEY_PROBLEM}. Generate one with: python -c \"import "
        f"secrets; print(secrets.token_urlsafe(50))\". For local development set DJANGO_DEBUG=true instead."
    )
SECRET_KEY = SECRET_KEY or DEVELOPMENT_SECRET_KEY

ALLOWED_HOSTS = _CONFIGURED_HOSTS or (LOCAL_HOSTS if DEBUG else [])
CSRF_TRUSTED_ORIGINS = _env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

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
    "drf_spectacular_sidecar",  # Swagger UI / Redoc assets served locally (no CDN)
    "django_filters",
    "django_htmx",
    "django_vite",
    "django_tasks_db",
    "designer",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "designer.monitoring.tracing.TracingMiddleware",  # a span per request when tracing is on
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "designer.core.uploads.RequestSizeMiddleware",  # before the CSRF check reads the body: see designer/core/uploads.py
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "designer.urls"
WSGI_APPLICATION = "designer.wsgi.application"
ASGI_APPLICATION = "designer.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Site-wide templates (base, errors, login, the browsable API's), then each
        # domain's own (designer/<domain>/templates/<domain>/): one app, so the app-directories loader would
        # look in designer/templates/ only.
        "DIRS": [BASE_DIR / "templates", *sorted((BASE_DIR / "designer").glob("*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",  # {{ csp_nonce }} / {% csp_nonce_attr %}
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------
# SQLite by default; DATABASE_URL (e.g. postgres://user:pass@host/db) overrides.
# Connections persist (DATABASE_CONN_MAX_AGE seconds, 0 = one per request/task) and are checked before reuse,
# so a worker's idle poll and each task reuse one connection instead of opening a new one every time.
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "300")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A session that stops inside a transaction (a frozen or partitioned worker holding a run's row lock) is
    # ended by the server after this long, which releases its locks; claims and recovery pass such a row by
    # meanwhile (designer/runs/lease.py). No code path of ours idles inside a transaction.
    _idle_ms = int(conf.environ_value(conf.TrellisSettings.DB_IDLE_IN_TRANSACTION_SECONDS, os.environ) * 1000)
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"]["options"] = " ".join(
        filter(None, [DATABASES["default"]["OPTIONS"].get("options"),
                      f"-c idle_in_transaction_session_timeout={_idle_ms}"])
    )
    # Lets ``designer.core.prepared`` prepare the hot statements it runs (psycopg prepares nothing without a
    # threshold); Django's own cursors bind on the client and never prepare, whatever it is.
    if conf.environ_value(conf.TrellisSettings.DB_PREPARED_STATEMENTS, os.environ):
        DATABASES["default"]["OPTIONS"].setdefault("prepare_threshold", 5)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while the worker writes; IMMEDIATE takes the
    # write lock at BEGIN so two writers queue for it instead of failing with
    # "database is locked" when a read transaction upgrades. They queue in our
    # backend (designer/core/sqlite), in attempts about a millisecond apart for
    # up to "timeout" seconds: SQLite's own busy handler sleeps up to 100 ms
    # between attempts, and a waiting worker lost the lock to the API taking
    # it again and again (issue 33).
    DATABASES["default"]["ENGINE"] = "designer.core.sqlite"
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;PRAGMA foreign_keys=ON;",
    }
    # A file (not :memory:) so tests can share the database with a real worker
    # subprocess; per-process name so concurrent test runs never collide.
    DATABASES["default"]["TEST"] = {
        "NAME": conf.environ_value(conf.TrellisSettings.TEST_DB, os.environ)
        or str(Path(tempfile.gettempdir()) / f"trellis-test-{os.getpid()}.sqlite3"),
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth -------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Email (invitation links) ----------------------------------------------------
# Development prints each email to the console of `make run`; a deployment sets DJANGO_EMAIL_BACKEND
# (e.g. django.core.mail.backends.smtp.EmailBackend) and, for SMTP, EMAIL_HOST / EMAIL_PORT /
# EMAIL_HOST_USER / EMAIL_HOST_PASSWORD / EMAIL_USE_TLS. Tests get Django's in-memory outbox.
_EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend",
)
_SMTP_OPTIONS = {
    "host": os.environ.get("EMAIL_HOST", "localhost"),
    "port": int(os.environ.get("EMAIL_PORT", "25")),
    "username": os.environ.get("EMAIL_HOST_USER", ""),
    "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
    "use_tls": _env_bool("EMAIL_USE_TLS", False),
}
MAILERS = {
    "default": {
        "BACKEND": _EMAIL_BACKEND,
        "OPTIONS": _SMTP_OPTIONS if _EMAIL_BACKEND.endswith("smtp.EmailBackend") else {},
    }
}
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "Trellis <trellis@localhost>")

# --- I18N -------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# --- Static files -----------------------------------------------------------
# static/ holds sources and the Vite build (static/dist); collectstatic copies
# them to STATIC_ROOT, which WhiteNoise serves when DEBUG is off.
STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

VITE_OUT_DIR = BASE_DIR / "static" / "dist"
DJANGO_VITE = {
    "default": {
        # We always build (make does it), so the dev server is never needed.
        "dev_mode": _env_bool("DJANGO_VITE_DEV_MODE", False),
        "manifest_path": VITE_OUT_DIR / "manifest.json",
        "static_url_prefix": "dist",
    }
}

# Request bodies (workflow documents) are JSON; 2 MiB is plenty and bounded.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Uploaded files do not count towards that limit; this handler caps whole multipart bodies
# (TRELLIS_MAX_UPLOAD_BYTES, default twice the limit above) before they are read.
FILE_UPLOAD_HANDLERS = [
    "designer.core.uploads.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- Background tasks -------------------------------------------------------
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default"],
    }
}

# --- API --------------------------------------------------------------------
REST_FRAMEWORK = {
    # The browser's session (with its CSRF token), or a personal access token for scripts (designer/access/api_auth.py).
    # The token first: DRF answers a missing or bad credential with the first class's WWW-Authenticate header,
    # and the session has none, which made it a 403 instead of a 401 a script can act on.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "designer.access.api_auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "designer.access.api_auth.TokenScopePermission",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes (DRF's own parser bypasses that limit): 413 beyond.
    "DEFAULT_PARSER_CLASSES": ["designer.core.parsers.LimitedJSONParser"],
    # One handler: every error is {code, message, ...} JSON, never a traceback.
    "EXCEPTION_HANDLER": "designer.core.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Trellis API",
    "DESCRIPTION": "Store, validate, analyse, publish and run workflow graphs.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation documents the errors the one exception handler gives (designer/core/api_schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "designer.core.api_schema.add_error_responses",
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    # Two fields named "status" (a run's, an invitation's) and two named "role" (a member's, a grant's) carry
    # different choices: named here, so clients get RunStatusEnum rather than a hash-suffixed StatusF4cEnum.
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "designer.models.Run.Status",
        "InvitationStatusEnum": "designer.access.models.Invitation.Status",
        "TeamRoleEnum": "designer.models.Membership.Role",
        "GrantRoleEnum": "designer.models.WorkflowGrant.Role",
    },
}

# --- Trellis (TRELLIS_*) --------------------------------------------------------
# Every TRELLIS_* setting, its default and meaning is declared in designer/conf.py (and listed in the README);
# those the environment sets are defined here, checked now: a bad value stops start-up naming the variable.
globals().update(conf.from_environ(os.environ))

# --- Content-Security-Policy (every response, DEBUG or not) -------------------
# Everything the pages load comes from this origin: our static files, the Vite build, htmx from
# django-htmx, the admin's and the Swagger UI sidecar's files. So no script runs unless it is a
# same-origin file: no inline <script>, no on*="..." handlers, no eval. htmx is configured for that
# in templates/base.html (allowEval off, so hx-on attributes and [filter] triggers are not used;
# behaviour lives in static/js/app.js). The nonce is for the one inline script we keep on purpose
# (Swagger UI's initialiser, templates/drf_spectacular/swagger_ui.html); the middleware leaves it
# out of the header on pages that never use it.
#
# Styles: <style> elements and stylesheets must be same-origin files (style-src-elem falls back to
# style-src 'self'; htmx's injected indicator <style> is switched off and its rules are in app.css).
# style="..." attributes ARE allowed (style-src-attr 'unsafe-inline'): the run page positions its
# timeline bars and progress fills with server-rendered percentages, re-rendered on every poll, and
# doing that from script would redraw them after each swap. An attribute holds no selectors, and any
# url() it names is still limited by img-src/font-src to this origin, so it cannot read the page
# or send data elsewhere. React (React Flow) sets styles through element.style, which CSP never
# blocks. Browsers without CSP3's style-src-attr fall back to style-src 'self' and drop the
# attributes: the bars lose their positions, nothing else breaks.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "style-src-attr": [CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# --- Security (production) --------------------------------------------------
# An orchestrator's probes speak plain HTTP to the process: answered, not redirected to https.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
if not DEBUG:
    SESSION_COOKIE_SECURE = _env_bool("DJANGO_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = _env_bool("DJANGO_SECURE_COOKIES", True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_SSL_REDIRECT = _env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "0"))
    if _env_bool("DJANGO_BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # Django's default config gives "django" a console handler of its own (debug only) while its records also
    # reach the root's: under make run every task, request warning and reload line printed twice.
    "loggers": {"django": {"handlers": [], "propagate": True}},
}
