"""Django settings. Every value comes from an environment variable (see docs/configuration.md).

The defaults give the embedded set-up: SQLite and local files under the data directory, a
broker that needs no server. Nothing secret has a committed default.

Reading the settings writes nothing: ``manage.py prepare_data_dir`` (run by ``make run``)
creates the data directory and its secret key, and the Celery app creates its broker folders.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from evaluation.errors import ERRORED_SHARE_LIMIT
from mirrorbench_site.env import (
    data_dir,
    envbool,
    envdatabase,
    envfloat,
    envint,
    envjson,
    envlist,
    envproxies,
    envstr,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = data_dir(BASE_DIR)
# Written by `manage.py prepare_data_dir` when missing; read here when DJANGO_SECRET_KEY is unset.
MIRRORBENCH_SECRET_KEY_FILE = DATA_DIR / "secret_key"


def _secret_key() -> str:
    """Return DJANGO_SECRET_KEY, else the data directory's key file, else a throwaway key.

    The throwaway key is random and is exported as DJANGO_SECRET_KEY to the processes this one
    starts: the web server's processes and the worker must sign and encrypt with one key.
    """
    key = envstr("DJANGO_SECRET_KEY", "")
    if key:
        return key
    path = MIRRORBENCH_SECRET_KEY_FILE
    if path.is_file():
        key = path.read_text().strip()
        if not key:
            raise ImproperlyConfigured(
                f"{path} is empty: delete it and run `manage.py prepare_data_dir`, "
                "or set DJANGO_SECRET_KEY"
            )
        return key
    key = secrets.token_urlsafe(50)
    os.environ["DJANGO_SECRET_KEY"] = key
    return key


SECRET_KEY = _secret_key()
DEBUG = envbool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = envlist("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

# HTTPS deployments (behind a proxy that terminates TLS and sets X-Forwarded-Proto): HSTS, the
# redirect to https, cookies sent over https only. Hosted runs then need
# MIRRORBENCH_KEY_ENCRYPTION_KEY (see leaderboard/checks.py and docs/deploy.md).
MIRRORBENCH_HTTPS = envbool("MIRRORBENCH_HTTPS", False)
CSRF_TRUSTED_ORIGINS = envlist("DJANGO_CSRF_TRUSTED_ORIGINS", [])
if MIRRORBENCH_HTTPS:
    SECURE_SSL_REDIRECT = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = envint("MIRRORBENCH_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("MIRRORBENCH_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("MIRRORBENCH_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
# The proxies in front of the site: a count, or their addresses and networks. They decide the
# client's address for every per-address limit (the sign-in lockout, the throttles, sign-ups):
# mirrorbench_site.client_ip. Unset, the peer's address counts and X-Forwarded-For is ignored.
MIRRORBENCH_TRUSTED_PROXIES = envproxies("MIRRORBENCH_TRUSTED_PROXIES")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "leaderboard",
]

MIDDLEWARE = [
    # The Content-Security-Policy header on every response, refusals included (it reads
    # nothing of the request).
    "mirrorbench_site.csp.ContentSecurityPolicyMiddleware",
    # Before anything reads a request body: each address's size limit (413 past it).
    "mirrorbench_site.request_limits.RequestBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "mirrorbench_site.static.StaticFilesMiddleware",  # WhiteNoise
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it answers a locked-out sign-in with the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "mirrorbench_site.urls"
WSGI_APPLICATION = "mirrorbench_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "leaderboard.accounts.roles.roles",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": envstr("MIRRORBENCH_SQLITE_PATH", str(DATA_DIR / "db.sqlite3")),
        # The web server and the workers share the file: write-ahead logging lets readers go on
        # while a worker writes, and IMMEDIATE transactions queue writers instead of failing.
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        # A file, not memory, so that worker processes started by the tests share it.
        "TEST": {"NAME": str(DATA_DIR / "test-db.sqlite3")},
    }
}
# PostgreSQL when DATABASE_URL is set (several web processes and workers on many machines).
DATABASES["default"] = envdatabase("DATABASE_URL", DATABASES["default"])

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGIN_URL = "/accounts/login/"

# Sign-in lockout (django-axes): after MIRRORBENCH_LOGIN_FAILURE_LIMIT failed sign-ins for one
# username from one address, further tries of that username from that address are refused (429)
# until the cool-off has passed without another failure; the right password does not get
# through meanwhile. Failures from elsewhere never lock the owner out from their own address.
# The address is mirrorbench_site.client_ip's. Attempts are kept in the database, so every web
# process sees them. A success resets the count; `manage.py axes_reset_username NAME` lifts one.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("MIRRORBENCH_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=envint("MIRRORBENCH_LOGIN_COOLOFF_MIN", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "mirrorbench_site.client_ip.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

# Two caches: "default" holds rendered tables and charts, which may be thrown away (it culls at
# random when full); "limits" holds the state of every limit (throttle histories, verification
# slots, marks of frames queued), where no other traffic can evict it: files under the data
# directory by default, so that every web process on the machine counts together, that are
# deleted only when they expire (mirrorbench_site.cache.LimitsFileCache).
# MIRRORBENCH_CACHE_URL=redis://... for several machines: both in Redis, which must not evict
# keys (its default, maxmemory-policy noeviction; docs/configuration.md).
_CACHE_URL = envstr("MIRRORBENCH_CACHE_URL", "")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": _CACHE_URL,
    }
    if _CACHE_URL
    else {
        "BACKEND": "mirrorbench_site.cache.LazyFileBasedCache",
        "LOCATION": str(DATA_DIR / "cache" / "django"),
    },
    "limits": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": _CACHE_URL,
        "KEY_PREFIX": "limits",
    }
    if _CACHE_URL
    else {
        "BACKEND": "mirrorbench_site.cache.LimitsFileCache",
        "LOCATION": str(DATA_DIR / "cache" / "limits"),
        # Past this many files, expired ones are swept; live ones are never evicted.
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    },
}
LOGIN_REDIRECT_URL = "/accounts/profile/"
LOGOUT_REDIRECT_URL = "/"

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# plotly.js is static/vendor/plotly.min.js (`make plotly-bundle` builds it), never a CDN.
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STATIC_ROOT = DATA_DIR / "staticfiles"
# Hashed, compressed static files, once `collectstatic` has filled STATIC_ROOT.
MIRRORBENCH_MANIFEST_STATIC = envbool("MIRRORBENCH_MANIFEST_STATIC", False)
# Frames and other media: local files under the data directory, or an S3 bucket (AWS or any
# S3-compatible server) when MIRRORBENCH_S3_BUCKET is set. Credentials come from the usual
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables (boto3 reads them), never from here.
S3_BUCKET = envstr("MIRRORBENCH_S3_BUCKET", "")
if S3_BUCKET:
    _media_storage: dict[str, object] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "region_name": envstr("MIRRORBENCH_S3_REGION", "") or None,
            "endpoint_url": envstr("MIRRORBENCH_S3_ENDPOINT_URL", "") or None,
            "location": envstr("MIRRORBENCH_S3_PREFIX", ""),
            "file_overwrite": False,
            "default_acl": None,
            "querystring_auth": envbool("MIRRORBENCH_S3_SIGNED_URLS", True),
        },
    }
else:
    _media_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
STORAGES = {
    "default": _media_storage,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if MIRRORBENCH_MANIFEST_STATIC
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Serve static files straight from the app folders when collectstatic has not run (dev, tests).
WHITENOISE_USE_FINDERS = True
MEDIA_URL = "media/"
MEDIA_ROOT = DATA_DIR / "media"

REST_FRAMEWORK = {
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    # Sessions (the site's sign-in, with CSRF) and API tokens; never passwords on each request.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # The token class first: a request without credentials gets 401 with
        # `WWW-Authenticate: Token`, saying how to authenticate, rather than a bare 403.
        "leaderboard.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Every view that writes names a scope (tests/leaderboard/test_abuse_limits.py checks). The
    # class is DRF's ScopedRateThrottle, counting visitors by mirrorbench_site.client_ip and
    # keeping its histories in the "limits" cache; NUM_PROXIES 0 keeps DRF's own get_ident, in
    # any other throttle class, from reading X-Forwarded-For.
    "DEFAULT_THROTTLE_CLASSES": ["leaderboard.throttles.ClientScopedRateThrottle"],
    "NUM_PROXIES": 0,
    "DEFAULT_THROTTLE_RATES": {
        "evaluations": envstr("MIRRORBENCH_EVALUATION_RATE", "20/hour"),
        "cancels": envstr("MIRRORBENCH_CANCEL_RATE", "60/hour"),
        "submissions": envstr("MIRRORBENCH_SUBMISSION_RATE", "30/hour"),
        "reviews": envstr("MIRRORBENCH_REVIEW_RATE", "600/hour"),
        "tokens": envstr("MIRRORBENCH_TOKEN_RATE", "30/hour"),
        # Every start and answer of a browser episode (/play/), per user or address.
        "play": envstr("MIRRORBENCH_PLAY_RATE", "1800/hour"),
        # Accounts made by sign-up, per address (forms with mistakes do not count).
        "signups": envstr("MIRRORBENCH_SIGNUP_RATE", "10/hour"),
    },
    # DRF's three, the JSON one refusing (400) nesting past 64 levels before parsing.
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.parsers.DepthLimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Every float at the CSVs' 3 decimals (leaderboard/renderers.py).
    "DEFAULT_RENDERER_CLASSES": [
        "leaderboard.renderers.PublishedJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MirrorBench API",
    "DESCRIPTION": (
        "The MirrorBench leaderboard's data: models, tables, runs, episodes and charts, with "
        "numbers at 3 decimals. Every read is public, no key needed (signed in, you also see "
        "your private runs; your submissions need it). Two endpoints write, for accounts: "
        "POST /api/evaluations/ starts a hosted run (accounts an administrator allowed) and "
        "POST /api/submissions/ uploads a results bundle. Authenticate with "
        "`Authorization: Token KEY` (an API token from your profile page) or the site's "
        "session. [Back to the leaderboard](/) · [Browsable API](/api/)"
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # Public reads carry no padlock in the docs (leaderboard/api.py).
        "leaderboard.api.public_reads_unlocked",
    ],
    # Swagger UI from the sidecar package: no CDN, the docs work offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "leaderboard.models.Run.Status",
        "EpisodeStatusEnum": "leaderboard.models.Episode.Status",
        "ModelKindEnum": "leaderboard.models.ModelEntry.Kind",
        # A hosted run is of a model: the two kinds of ModelEntry.Kind a user may choose.
        "HostedModelKindEnum": [("proprietary", "Proprietary"), ("open-weights", "Open weights")],
        # A run's condition, and each of the evaluation API's conditions: one enum.
        "ConditionEnum": "evaluation.vocabulary.CONDITION_CHOICES",
    },
}

# Runs evaluated on the server: a running episode whose task is silent this long is handed
# to a new task, which continues from the last stored step.
MIRRORBENCH_EPISODE_STALE_S = envint("MIRRORBENCH_EPISODE_STALE_S", 300)
MIRRORBENCH_STALE_CHECK_S = envint("MIRRORBENCH_STALE_CHECK_S", 60)
# Hosted runs: API keys are encrypted at rest with this Fernet key (derived from SECRET_KEY
# when unset); base URLs on loopback or private networks are refused unless allowed.
MIRRORBENCH_KEY_ENCRYPTION_KEY = envstr("MIRRORBENCH_KEY_ENCRYPTION_KEY", "")
MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = envbool("MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS", False)
# Per-user caps on hosted runs (staff have none): runs pending or running at once, and
# episodes started in any 24 hours (1056 = four full runs).
MIRRORBENCH_MAX_ACTIVE_RUNS = envint("MIRRORBENCH_MAX_ACTIVE_RUNS", 2, minimum=0)
MIRRORBENCH_MAX_EPISODES_PER_DAY = envint("MIRRORBENCH_MAX_EPISODES_PER_DAY", 1056, minimum=0)
# Outbound volume of users who are not staff: requests their runs (hosted runs, reproduction
# spot-checks) send to model endpoints per UTC day, cached answers not counted (about four full
# runs), and the ports the endpoints they choose may use (empty: any).
MIRRORBENCH_USER_REQUESTS_PER_DAY = envint("MIRRORBENCH_USER_REQUESTS_PER_DAY", 20_000, minimum=0)
MIRRORBENCH_ENDPOINT_PORTS = [int(p) for p in envlist("MIRRORBENCH_ENDPOINT_PORTS", ["443", "80"])]
# Submissions of results bundles: per user, per day and verifying at once (staff exempt), and
# the largest bundle accepted. A full 264-episode bundle of a model is 2-10 MB.
MIRRORBENCH_MAX_SUBMISSIONS_PER_DAY = envint("MIRRORBENCH_MAX_SUBMISSIONS_PER_DAY", 10, minimum=0)
MIRRORBENCH_MAX_ACTIVE_VERIFICATIONS = envint("MIRRORBENCH_MAX_ACTIVE_VERIFICATIONS", 2, minimum=1)
MIRRORBENCH_REPRODUCE_SAMPLE = envint("MIRRORBENCH_REPRODUCE_SAMPLE", 8, minimum=1)
MIRRORBENCH_MAX_BUNDLE_BYTES = envint(
    "MIRRORBENCH_MAX_BUNDLE_BYTES", 64 * 1024 * 1024, minimum=1024
)
# Mail to accounts (password resets, address confirmations): per e-mail address and per
# account, and per client address asking (services.mail); past a rate nothing is sent.
MIRRORBENCH_MAIL_RATE = envstr("MIRRORBENCH_MAIL_RATE", "3/hour")
MIRRORBENCH_MAIL_CLIENT_RATE = envstr("MIRRORBENCH_MAIL_CLIENT_RATE", "10/hour")
# Episodes played in the browser (/play/) show frames of this side, as a model's run does.
MIRRORBENCH_PLAY_IMAGE_SIZE = envint("MIRRORBENCH_PLAY_IMAGE_SIZE", 1024, minimum=16)
# The frame sides the site serves: an uploaded bundle must declare one of them (the gallery's
# 1024 and MIRRORBENCH_PLAY_IMAGE_SIZE always count).
MIRRORBENCH_IMAGE_SIZES = [int(s) for s in envlist("MIRRORBENCH_IMAGE_SIZES", ["1024"])]
# Frames made on demand (docs/deploy.md, "Frames"): new frames one address, session or account
# may cause (DRF rate syntax; a stored frame costs nothing), frames a web process renders for
# requests at once (past it: 503 and Retry-After), and the disk budget of stored frames (0: none)
# that beat's sweep keeps every MIRRORBENCH_FRAMES_SWEEP_S seconds.
MIRRORBENCH_RENDER_RATE = envstr("MIRRORBENCH_RENDER_RATE", "600/hour")
MIRRORBENCH_RENDER_QUEUE = envint("MIRRORBENCH_RENDER_QUEUE", 8, minimum=1)
MIRRORBENCH_FRAMES_MAX_BYTES = envint("MIRRORBENCH_FRAMES_MAX_BYTES", 20 * 2**30, minimum=0)
MIRRORBENCH_FRAMES_SWEEP_S = envint("MIRRORBENCH_FRAMES_SWEEP_S", 600, minimum=10)
# Request bodies (mirrorbench_site.request_limits): at most this many bytes, by Content-Length
# or as a chunked body streams in, except at the bundle uploads (these views), which take
# MIRRORBENCH_MAX_BUNDLE_BYTES and 64 KB for their other fields. Past the limit: 413, nothing
# stored. Only the uploads take a file part. The proxy's limit should match (docs/deploy.md).
MIRRORBENCH_MAX_REQUEST_BYTES = envint("MIRRORBENCH_MAX_REQUEST_BYTES", 64 * 1024, minimum=1024)
MIRRORBENCH_UPLOAD_VIEWS = ("leaderboard:submit", "api-submissions")
# Django refuses form fields above this before any view runs (the limit above comes first);
# uploads go to a temporary file above FILE_UPLOAD_MAX_MEMORY_SIZE.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
EMAIL_BACKEND = envstr("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = envstr("DJANGO_DEFAULT_FROM_EMAIL", "mirrorbench@localhost")
EMAIL_HOST = envstr("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = envint("DJANGO_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = envstr("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("DJANGO_EMAIL_USE_TLS", False)
# Per-provider limits shared by all workers (JSON, see leaderboard.runs.selectors.limits_for).
MIRRORBENCH_PROVIDER_LIMITS = envjson("MIRRORBENCH_PROVIDER_LIMITS", {})
MIRRORBENCH_RATE_WINDOW_S = envint("MIRRORBENCH_RATE_WINDOW_S", 60)
# Prices per million tokens, by agent spec, for the cost shown on run pages:
# {"openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}
MIRRORBENCH_PRICES = envjson("MIRRORBENCH_PRICES", {})
# The largest share (0-1) of a run's episodes that may end in error (provider or harness, not
# the model) for the run to be ranked; above it the run waits for them to be re-run.
MIRRORBENCH_MAX_ERRORED_SHARE = envfloat(
    "MIRRORBENCH_MAX_ERRORED_SHARE", ERRORED_SHARE_LIMIT, minimum=0.0, maximum=1.0
)
# The Hugging Face benchmark dataset that /models/<slug>/eval_results.yaml files name (a Hub
# dataset id, registered there as a benchmark): the paper's reference repository by default.
MIRRORBENCH_HUB_DATASET = envstr("MIRRORBENCH_HUB_DATASET", "fflahm/MirrorBench")
# Run as root, the Celery worker and beat switch to this user (default: the data directory's
# owner, when that is not root), as Celery asks.
MIRRORBENCH_WORKER_USER = envstr("MIRRORBENCH_WORKER_USER", "")
# Transport errors (connection, 408, 409, 429, 5xx): attempts per request and the first backoff
# (doubled each time, Retry-After honoured). After the last, the episode is an excluded error.
MIRRORBENCH_RETRY_ATTEMPTS = envint("MIRRORBENCH_RETRY_ATTEMPTS", 6)
MIRRORBENCH_RETRY_BASE_S = float(envint("MIRRORBENCH_RETRY_BASE_MS", 1000)) / 1000

# Celery: the embedded default is a filesystem transport under the data directory. In this
# site's processes filesystem:// names mirrorbench_site.broker (kombu's transport with atomic
# writes and claims; docs/architecture.md, "The embedded broker"), not kombu's own.
CELERY_BROKER_DIR = DATA_DIR / "broker"
# "localhost" names the machine whose folders carry the messages (kombu warns without a host).
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "filesystem://localhost/")
CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "models"
CELERY_TASK_ROUTES = {
    "leaderboard.tasks.run_start": {"queue": "models"},
    "leaderboard.tasks.episode_evaluate": {"queue": "models"},
    "leaderboard.tasks.episodes_requeue_stale": {"queue": "models"},
    "leaderboard.tasks.run_render_frames": {"queue": "render"},
    "leaderboard.tasks.episode_render_frames": {"queue": "render"},
    "leaderboard.tasks.frames_render_keys": {"queue": "render"},
    "leaderboard.tasks.frames_sweep": {"queue": "render"},
}
# Time limits per queue, in seconds: a soft limit raises SoftTimeLimitExceeded in the task
# (a cut-off episode stays running and the stale-episode check hands it to a new task), the
# hard limit, a minute later, ends the process running it. Only pools that can interrupt a task
# enforce them (prefork, gevent, eventlet); the threads pool ignores them. 0 turns them off.
# Persistent renderers per process (each worker or web process has one render pool that all its
# threads share; evaluation.render_pool). 0: one per core.
MIRRORBENCH_RENDER_THREADS = envint("MIRRORBENCH_RENDER_THREADS", 0, minimum=0)
MIRRORBENCH_EPISODE_TIME_LIMIT_S = envint("MIRRORBENCH_EPISODE_TIME_LIMIT_S", 3600, minimum=0)
MIRRORBENCH_RENDER_TIME_LIMIT_S = envint("MIRRORBENCH_RENDER_TIME_LIMIT_S", 1800, minimum=0)
_TIME_LIMIT_GRACE_S = 60
_time_limits = {
    "models": MIRRORBENCH_EPISODE_TIME_LIMIT_S,
    "render": MIRRORBENCH_RENDER_TIME_LIMIT_S,
}
CELERY_TASK_ANNOTATIONS = {
    task: {
        "soft_time_limit": _time_limits[route["queue"]],
        "time_limit": _time_limits[route["queue"]] + _TIME_LIMIT_GRACE_S,
    }
    for task, route in CELERY_TASK_ROUTES.items()
    if _time_limits[route["queue"]]
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "episodes-requeue-stale": {
        "task": "leaderboard.tasks.episodes_requeue_stale",
        "schedule": float(MIRRORBENCH_STALE_CHECK_S),
    },
    "frames-sweep": {
        "task": "leaderboard.tasks.frames_sweep",
        "schedule": float(MIRRORBENCH_FRAMES_SWEEP_S),
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# Logging: every process (web, worker, beat, commands) writes to stderr, tracebacks included,
# at MIRRORBENCH_LOG_LEVEL and above. Django's loggers, django.request's 5xx among them, go
# through the root logger's one handler; the Celery worker and beat put their own handler on
# the root logger (task failures come from celery.app.trace) at the level of their `-l`, which
# worker_command and beat_command take from the same variable. Loggers that exist already
# (Celery's, gunicorn's) stay enabled. Below DEBUG, a request's 4xx and other libraries'
# routine INFO stay out (below).
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MIRRORBENCH_LOG_LEVEL = envstr("MIRRORBENCH_LOG_LEVEL", "INFO").strip().upper() or "INFO"
if MIRRORBENCH_LOG_LEVEL not in _LOG_LEVELS:
    raise ImproperlyConfigured(
        f"MIRRORBENCH_LOG_LEVEL={os.environ['MIRRORBENCH_LOG_LEVEL']!r}: "
        f"expected one of {', '.join(_LOG_LEVELS)}"
    )
_LOG_DEBUG = MIRRORBENCH_LOG_LEVEL == "DEBUG"
# The console is what the README promises: the URL, runs queued, warnings and errors. Below
# DEBUG, routine records of other libraries and a request's 4xx stay out of it.
_LOG_ROUTINE = (
    "DEBUG"
    if _LOG_DEBUG
    else ("WARNING" if MIRRORBENCH_LOG_LEVEL == "INFO" else MIRRORBENCH_LOG_LEVEL)
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(process)d] %(message)s"},
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "formatter": "plain",
        },
    },
    "filters": {
        # A request's 4xx (a 404, a sign-in asked for, a refusal) is the visitor's business,
        # not the operator's; 5xx stay, with their tracebacks.
        "server_errors": {
            "()": "django.utils.log.CallbackFilter",
            "callback": lambda record: getattr(record, "status_code", 500) >= 500,
        },
    },
    "root": {"handlers": ["stderr"], "level": MIRRORBENCH_LOG_LEVEL},
    "loggers": {
        # Django's default handlers (console when DEBUG, mail_admins) are replaced by the
        # root's, so that each record is written once.
        "django": {"handlers": [], "level": MIRRORBENCH_LOG_LEVEL, "propagate": True},
        "django.request": {
            "handlers": [],
            "level": MIRRORBENCH_LOG_LEVEL,
            "filters": [] if _LOG_DEBUG else ["server_errors"],
            "propagate": True,
        },
        # Routine news at INFO: django-axes writes four lines per sign-in (lockouts are
        # warnings, and stay), PyOpenGL which accelerator it did not find.
        "axes": {"handlers": [], "level": _LOG_ROUTINE, "propagate": True},
        "OpenGL": {"handlers": [], "level": _LOG_ROUTINE, "propagate": True},
    },
}
