"""``Summary``: what a result's ``summary()`` returns -- its text and its HTML from one source,
as statsmodels' ``Summary`` gives ``as_text`` and ``as_html``.  It IS the text (a ``str``:
``print(res.summary())`` and ``res.summary().splitlines()`` work as before), and keeps the
structure it was written from -- a head line and items, each a line or a nested ``Summary``
-- so that the command line, the dashboard and the reports show the same words."""

from __future__ import annotations

import html

__all__ = ["Summary"]


class Summary(str):
    """A result's summary: ``str(s)`` / ``s.as_text()`` the lines (nested items indented by two
    spaces), ``s.as_html()`` the same as a heading paragraph and a list (Jupyter shows it).

    Parameters
    ----------
    head : str
        The first line (the result's verdict).
    items : iterable of str or Summary
        The lines below it; a nested Summary is indented (text) or a nested list (HTML).
    """

    head: str
    items: tuple

    def __new__(cls, head, items=()):
        items = tuple(items)
        obj = super().__new__(cls, "\n".join([head] + [line for it in items for line in _indented(it)]))
        obj.head = head
        obj.items = items
        return obj

    def as_text(self) -> str:
        """The summary as plain text (what ``print`` shows)."""
        return str.__str__(self)

    def as_html(self) -> str:
        """The summary as HTML: the head line in bold and the items as a list, every word escaped."""
        return f"<div class=\"sdccore-summary\"><p><b>{html.escape(self.head)}</b></p>{_html_items(self.items)}</div>"

    def _repr_html_(self):
        return self.as_html()


def _indented(item):
    if isinstance(item, Summary):
        return ["  " + line for line in [item.head] + [x for it in item.items for x in _indented(it)]]
    return ["  " + line for line in str(item).splitlines()]


def _html_items(items):
    if not items:
        return ""
    out = []
    for it in items:
        if isinstance(it, Summary):
            out.append(f"<li>{html.escape(it.head)}{_html_items(it.items)}</li>")
        else:
            out.append(f"<li>{html.escape(str(it))}</li>")
    return "<ul>" + "".join(out) + "</ul>"
