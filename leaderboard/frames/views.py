"""Frame files: served when stored, rendered on demand within the render budget."""

from __future__ import annotations

import hashlib
import ipaddress
import logging

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    HttpResponseRedirect,
)
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from leaderboard.frames.selectors import frame_path
from leaderboard.frames.services import (
    RenderBudgetExceeded,
    RenderQueueFull,
    frame_lost,
    frame_render_now,
    frame_used,
    render_budget_take,
)
from leaderboard.models import Frame
from leaderboard.replays.selectors import (
    frame_for_key,
)
from mirrorbench_site.client_ip import client_ip
from simulation.backends import renderer_version
from simulation.renderer import RenderError

logger = logging.getLogger(__name__)


FRAME_TYPES = {"png": "image/png", "webp": "image/webp", "thumb.webp": "image/webp"}


IMMUTABLE = "public, max-age=31536000, immutable"


SIGNED_URL_MAX_AGE_S = 300
"""How long a browser may reuse a redirect to a signed S3 URL (well inside its expiry)."""


def render_identities(request: HttpRequest) -> list[str]:
    """Who a new frame is counted against: the address (an IPv6 client by its /64, which one
    machine usually holds whole), the session if any, and the account if signed in."""
    address = client_ip(request) or ""  # the trusted proxies' client, or the peer
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        bucket = address or "unknown"
    else:
        bucket = (
            str(ipaddress.ip_network(f"{parsed}/64", strict=False))
            if parsed.version == 6
            else str(parsed)
        )
    identities = [f"address:{bucket}"]
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        identities.append(f"session:{hashlib.sha256(session_key.encode()).hexdigest()[:32]}")
    if request.user.is_authenticated:
        identities.append(f"user:{request.user.pk}")
    return identities


def busy_response(message: str, status: int, retry_after_s: int) -> HttpResponse:
    """Return a refusal to come back later (503 busy, 429 over the budget), with Retry-After."""
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after_s)
    response["Cache-Control"] = "no-store"
    return response


def frame_render_for_request(request: HttpRequest, frame: Frame) -> HttpResponse | None:
    """Have a registered frame made for ``request`` unless it is stored; return None once it
    is stored, or the answer to give instead.

    A new frame counts against the render budget of whoever asks (429 past it), and is made
    through the bounded render queue (503 with Retry-After when it is full or the frame takes
    longer than ``RENDER_WAIT_S``). A frame of another renderer build cannot be remade (404).
    """
    if frame.stored is not None:
        return None
    key = frame.key
    if frame.renderer != renderer_version():
        raise Http404("this frame was made by another renderer build and cannot be remade")
    identities = render_identities(request)
    try:
        stored = frame_render_now(key, charge=lambda: render_budget_take(identities))
    except TimeoutError:
        return busy_response("This frame is still being rendered.", 503, 2)
    except RenderQueueFull as exc:
        return busy_response(
            "The server is rendering as many frames as it can: ask again shortly.",
            503,
            exc.retry_after_s,
        )
    except RenderBudgetExceeded as exc:
        return busy_response(
            "You have asked for many new frames in a short time: frames already made are "
            f"still served; new ones again in {exc.retry_after_s} s.",
            429,
            exc.retry_after_s,
        )
    except RenderError as exc:
        logger.error("frame %s cannot be rendered: %s", key, exc)
        return HttpResponse(f"This frame cannot be rendered here: {exc}", status=503)
    if not stored:
        raise Http404("this frame could not be rendered")
    return None


@require_GET
def frame_file(request: HttpRequest, key: str, variant: str) -> HttpResponseBase:
    """A frame's file by its content key; rendered first if registered but not stored yet
    (``frame_render_for_request``); a stored frame costs nothing."""
    try:
        frame = frame_for_key(key)
    except Frame.DoesNotExist:
        raise Http404("no stored episode shows this frame") from None
    stored_as = "thumb" if variant == "thumb.webp" else variant
    etag = f'"{key}.{stored_as}"'
    if frame.stored is None:
        refused = frame_render_for_request(request, frame)
        if refused is not None:
            return refused
    else:
        frame_used(key)
    if request.headers.get("If-None-Match") == etag:
        not_modified = HttpResponseNotModified()
        not_modified["ETag"], not_modified["Cache-Control"] = etag, IMMUTABLE
        return not_modified
    path = frame_path(key, stored_as)
    if settings.S3_BUCKET:
        response = HttpResponseRedirect(default_storage.url(path))
        response["Cache-Control"] = f"private, max-age={SIGNED_URL_MAX_AGE_S}"
        return response
    try:
        handle = default_storage.open(path, "rb")
    except FileNotFoundError:
        frame_lost(key=key)  # render it again next time
        raise Http404("this frame's file is missing; ask again to render it") from None
    served = FileResponse(handle, content_type=FRAME_TYPES[variant])
    served["ETag"], served["Cache-Control"] = etag, IMMUTABLE
    return served
