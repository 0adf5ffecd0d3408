"""The service's token: a secret in ``<home>/serve.token`` that only its owner can read.

A Unix socket is already guarded by its file mode, but ``--port`` opens 127.0.0.1 to
every local user, and a browser page can reach 127.0.0.1 too. So every request carries
the token, as ``Authorization: Bearer`` or, for E-utilities clients that can only add a
parameter, as their usual ``api_key``. The file is created 0600 and kept across restarts
so scripts keep working; deleting it makes the next start write a new one.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat

from medsearch.errors import HomeError
from medsearch.paths import Paths

PRIVATE = 0o600


def ensure_token(paths: Paths) -> str:
    """The home's token, created (0600) when missing; a readable-by-others file is
    tightened to 0600 rather than trusted as it is."""
    file = paths.serve_token
    try:
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    except FileExistsError:
        if stat.S_IMODE(file.stat().st_mode) != PRIVATE:
            os.chmod(file, PRIVATE)
        token = read_token(paths)
        if token:
            return token
        file.unlink()
        return ensure_token(paths)
    except OSError as exc:
        raise HomeError(f"cannot write the service token {file}: {exc.strerror or exc}") from exc
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return token


def read_token(paths: Paths) -> str | None:
    """The token a client sends; None when there is none (or it cannot be read)."""
    try:
        return paths.serve_token.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def token_matches(expected: str, given: str | None) -> bool:
    """Constant-time comparison, so timing tells nothing about the token."""
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())
