"""gunicorn's access log (``manage.py serve --verbose``) without password-reset tokens.

A reset link, ``/accounts/reset/<uid>/<token>/``, sets the account's password until it is used
or expires: whoever reads it in a log could use it first. Every field of a logged request (the
request line, the path, the referrer, any header) has the token replaced by ``[token]``.
Django itself swaps the link for ``/accounts/reset/<uid>/set-password/`` at once, so the
request that carries the token is the first one only; a proxy's access log needs the same care.
"""

from __future__ import annotations

import re
from typing import Any

from gunicorn.glogging import Logger

RESET_LINK = re.compile(r"(/accounts/reset/[^/\s?#]+/)(?!set-password/)[^/\s?#]+")
CONFIRM_LINK = re.compile(r"(/accounts/confirm/)[^/\s?#]+")
"""An address-confirmation link (``services.mail``): it confirms the address it was sent to."""


def redact(text: str) -> str:
    return CONFIRM_LINK.sub(r"\1[token]", RESET_LINK.sub(r"\1[token]", text))


class AccessLogger(Logger):
    """gunicorn's logger, its access-log fields redacted."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {k: redact(v) if isinstance(v, str) else v for k, v in atoms.items()}
