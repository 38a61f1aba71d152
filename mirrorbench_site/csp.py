"""Content-Security-Policy on every response: scripts and styles only from the site's own files.

No page has an inline script or style (JSON data blocks, ``type="application/json"``, are not
run), so neither ``'unsafe-inline'`` nor ``'unsafe-eval'`` is allowed: an injected ``<script>``
or ``onclick`` does not run. Images may also be ``data:`` and ``blob:`` URLs (plotly's
downloads, the replay's canvas) and, with frames in S3, come from the bucket's origin (the frame
addresses redirect there): that origin is read from the storage settings.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def frame_origins() -> list[str]:
    """The origins stored frames are served from besides the site: the S3 bucket's, if any."""
    storage = cast(dict[str, Any], settings.STORAGES.get("default", {}))
    if not str(storage.get("BACKEND", "")).startswith("storages.backends.s3"):
        return []
    options: dict[str, Any] = storage.get("OPTIONS", {})
    bucket = options.get("bucket_name") or ""
    if options.get("custom_domain"):
        return [f"https://{options['custom_domain']}"]
    endpoint = options.get("endpoint_url")
    if endpoint:
        # An S3-compatible server: path-style (host/bucket/key) or virtual-hosted addresses.
        parts = urlsplit(endpoint)
        return [f"{parts.scheme}://{parts.netloc}", f"{parts.scheme}://{bucket}.{parts.netloc}"]
    region = options.get("region_name")
    hosts = [f"{bucket}.s3.amazonaws.com"]
    if region:
        hosts += [f"{bucket}.s3.{region}.amazonaws.com", f"s3.{region}.amazonaws.com"]
    return [f"https://{host}" for host in hosts]


@functools.cache
def content_security_policy() -> str:
    """The policy, built once: it depends only on the storage settings (made again when a test
    changes them)."""
    images = " ".join(["'self'", "data:", "blob:", *frame_origins()])
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src {images}",
            "object-src 'none'",
            "base-uri 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ]
    )


@receiver(setting_changed)
def _storages_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "STORAGES":
        content_security_policy.cache_clear()


class ContentSecurityPolicyMiddleware:
    """Set the policy on every response that has none of its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = content_security_policy()
        return response
