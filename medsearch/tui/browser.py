"""Opening a link in the reader's browser, and knowing when that did not happen."""

from __future__ import annotations

from typing import Any

from textual.app import App


def open_in_browser(app: App[Any], url: str) -> bool:
    """Open ``url``; False when no browser could be started.

    Textual's ``App.open_url`` drops the answer of ``webbrowser.open``, and on a server
    reached over ssh there is usually no browser at all: the caller must know, to show
    the link instead. Served to a web browser (``textual serve``), the reader's own
    browser opens it.
    """
    if app.is_web:
        app.open_url(url)
        return True
    import webbrowser

    return webbrowser.open(url)
