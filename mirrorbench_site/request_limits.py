"""Request bodies are refused past their address's limit before more than that is stored.

Django bounds form fields in memory (``DATA_UPLOAD_MAX_MEMORY_SIZE``) but spools every file part
of a multipart body to disk, however large, before any view runs; and it ignores bodies sent
with ``Transfer-Encoding: chunked`` (no ``Content-Length``) altogether. This middleware, ahead
of everything that reads a body, gives each address a limit: ``MIRRORBENCH_MAX_REQUEST_BYTES``
(64 KB) everywhere except the bundle uploads (``MIRRORBENCH_UPLOAD_VIEWS``), which take
``MIRRORBENCH_MAX_BUNDLE_BYTES`` plus 64 KB for the form's other fields.

- A ``Content-Length`` over the limit is answered 413 at once; nothing of the body is read.
- A chunked body is read through the limit into a spooled temporary file (memory up to
  ``FILE_UPLOAD_MAX_MEMORY_SIZE``, then ``FILE_UPLOAD_TEMP_DIR``): one byte more and it is
  answered 413 and the file deleted. Under the limit, the view reads it as if it had had a
  length.
- Elsewhere than the uploads a multipart body may carry fields but no file: a file part is
  refused (400) as it is met, before any of its bytes are stored. An upload takes one file, in
  its ``bundle`` field.

The proxy in front should refuse the same sizes first (docs/deploy.md: nginx's
``client_max_body_size``), so that an oversized body never reaches a web process at all.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.urls import Resolver404, resolve

# Room for an upload's other fields and the multipart framing, beside the bundle itself.
UPLOAD_FORM_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024


class FilePartRefused(MultiPartParserError):
    """A multipart body carries a file where none is taken.

    A ``MultiPartParserError``: Django marks the body unparsed and DRF answers 400 with it.
    """


class FilePartGuard(FileUploadHandler):
    """Refuse file parts as they are met, before the handlers after it store a byte.

    ``field`` names the one field that may carry a file (``None``: no field may), and at most
    ``most`` files are taken.
    """

    def __init__(self, request: HttpRequest | None = None, *, field: str | None, most: int = 1):
        super().__init__(request)
        self.field, self.most, self.seen = field, most, 0

    def new_file(self, field_name: str, *args: Any, **kwargs: Any) -> None:
        if self.field is None:
            raise FilePartRefused(
                f"this address takes no file uploads (a file came in the field {field_name!r})"
            )
        if field_name != self.field:
            raise FilePartRefused(
                f"this address takes one file, in the field {self.field!r}, not {field_name!r}"
            )
        self.seen += 1
        if self.seen > self.most:
            raise FilePartRefused(f"this address takes one file, in the field {self.field!r}")

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        return raw_data  # passed on to the handlers that store it

    def file_complete(self, file_size: int) -> None:
        return None


def upload_limit() -> int:
    return int(settings.MIRRORBENCH_MAX_BUNDLE_BYTES) + UPLOAD_FORM_BYTES


def _is_upload(request: HttpRequest) -> bool:
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    return match.view_name in settings.MIRRORBENCH_UPLOAD_VIEWS


def _smallest_limit() -> int:
    return min(int(settings.MIRRORBENCH_MAX_REQUEST_BYTES), upload_limit())


def _limit_for(upload: bool) -> tuple[int, str]:
    if upload:
        return upload_limit(), (
            "MIRRORBENCH_MAX_BUNDLE_BYTES, "
            f"{settings.MIRRORBENCH_MAX_BUNDLE_BYTES} bytes, and {UPLOAD_FORM_BYTES} bytes "
            "for the form's other fields"
        )
    return int(settings.MIRRORBENCH_MAX_REQUEST_BYTES), "MIRRORBENCH_MAX_REQUEST_BYTES"


def _size(count: int) -> str:
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


def _refusal(request: HttpRequest, status: int, message: str) -> HttpResponse:
    response: HttpResponse
    if request.path_info.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=status)
    else:
        response = HttpResponse(message + "\n", status=status, content_type="text/plain")
    return response


def _too_large(request: HttpRequest, limit: int, why: str) -> HttpResponse:
    return _refusal(
        request,
        413,
        f"Request body too large: {request.path_info} accepts at most {limit} bytes "
        f"({_size(limit)}; {why}). Nothing was stored.",
    )


def _content_length(request: HttpRequest) -> int | None:
    """The declared length; None when there is none (chunked, or no body at all)."""
    value = request.META.get("CONTENT_LENGTH")
    if value in (None, ""):
        return None
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0  # Django reads nothing of a body whose length it cannot read


def _chunked(request: HttpRequest) -> bool:
    return "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()


class RequestBodyLimitMiddleware:
    """Answer 413 to a body past its address's limit, by its length or as it streams in."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = _content_length(request)
        chunked = length is None and _chunked(request)
        if not chunked and not length:
            return self.get_response(request)
        multipart = request.content_type == "multipart/form-data"
        if length is not None and not multipart and length <= _smallest_limit():
            # Under every address's limit and no file part to guard: which address it is (a
            # URL resolution, most of this middleware's cost) does not matter.
            return self.get_response(request)
        upload = _is_upload(request)
        limit, why = _limit_for(upload)
        if length is not None and length > limit:
            return _too_large(request, limit, why)
        spool = None
        if chunked:
            spool = self._spool(request, limit)
            if spool is None:
                return _too_large(request, limit, why)
        try:
            refused = self._guard_file_parts(request, upload)
            if refused is not None:
                return refused
            return self.get_response(request)
        finally:
            if spool is not None:
                spool.close()

    @staticmethod
    def _spool(request: HttpRequest, limit: int) -> Any:
        """Read a chunked body through ``limit`` into a temporary file the request then reads;
        None (and nothing kept) if it runs past the limit."""
        source = request.META["wsgi.input"]
        spool = tempfile.SpooledTemporaryFile(  # noqa: SIM115 (closed by the caller)
            max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE,
            dir=settings.FILE_UPLOAD_TEMP_DIR,
        )
        size = 0
        while True:
            chunk = source.read(min(READ_CHUNK, limit + 1 - size))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                spool.close()
                return None
            spool.write(chunk)
        spool.seek(0)
        request.META["CONTENT_LENGTH"] = str(size)
        # WSGIRequest reads its body through _stream, made from wsgi.input and the length it
        # saw: none, so nothing. It reads the spooled copy instead.
        stream: Any = LimitedStream(cast(Any, spool), size)
        request._stream = stream
        return spool

    @staticmethod
    def _guard_file_parts(request: HttpRequest, upload: bool) -> HttpResponse | None:
        """Put the file-part guard first among the upload handlers; parse a multipart POST at
        once, so that a refused file is answered here rather than as a server error."""
        if request.content_type != "multipart/form-data":
            return None
        guard = FilePartGuard(request, field="bundle" if upload else None)
        request.upload_handlers = [guard, *request.upload_handlers]
        if request.method != "POST":
            return None  # Django parses only POST bodies; DRF's parser answers 400 to a refusal
        try:
            request.POST  # noqa: B018 (parses the body)
        except FilePartRefused as exc:
            return _refusal(request, 400, f"Refused: {exc}. Nothing was stored.")
        return None
