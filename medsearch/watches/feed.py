"""One Atom feed (RFC 4287) per watch: any feed reader can subscribe to the local file.

The feed holds a watch's latest :data:`FEED_ENTRIES` hits. Its ``id`` and each entry's
``id`` are stable URNs (``urn:medsearch:watch:NAME`` and ``...:pmid:N``), so a reader
that polls the file again shows only entries it has not seen; ``updated`` is when the
run found the hit, and each entry links to the article on PubMed.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

from medsearch.records import Article
from medsearch.safe_text import xml_text
from medsearch.watches.model import REFERENCES, Watch, WatchHit

ATOM = "http://www.w3.org/2005/Atom"
FEED_ENTRIES = 100
PUBMED = "https://pubmed.ncbi.nlm.nih.gov/"


def feed_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.atom"


def write_feed(
    folder: Path,
    watch: Watch,
    hits: Sequence[WatchHit],
    articles: Mapping[int, Article],
    updated: str,
) -> Path:
    """Write ``folder/NAME.atom`` atomically (a reader never sees half a file)."""
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")
    _text(feed, "id", f"urn:medsearch:watch:{watch.name}")
    _text(feed, "title", f"medsearch watch {watch.name}: {watch.query}")
    _text(feed, "updated", updated)
    author = ET.SubElement(feed, f"{{{ATOM}}}author")
    _text(author, "name", "medsearch")
    _text(feed, "generator", "medsearch")
    for hit in hits[:FEED_ENTRIES]:
        article = articles.get(hit.pmid)
        entry = ET.SubElement(feed, f"{{{ATOM}}}entry")
        _text(entry, "id", f"urn:medsearch:watch:{watch.name}:pmid:{hit.pmid}")
        title = article.title if article is not None and article.title else f"PMID {hit.pmid}"
        _text(entry, "title", title)
        _text(entry, "updated", hit.found)
        link = ET.SubElement(entry, f"{{{ATOM}}}link")
        link.set("rel", "alternate")
        link.set("href", f"{PUBMED}{hit.pmid}/")
        if article is not None:
            where = ", ".join(str(x) for x in (article.journal, article.year) if x)
            kind = "revised record" if hit.change == "replaced" else "new article"
            if watch.kind == REFERENCES:
                kind = hit.change + (f": notice PMID {hit.notice}" if hit.notice else "")
            _text(entry, "summary", f"{kind}; {where}" if where else kind)
    folder.mkdir(parents=True, exist_ok=True)
    final = feed_path(folder, watch.name)
    part = final.with_suffix(".atom.part")
    ET.ElementTree(feed).write(part, encoding="utf-8", xml_declaration=True)
    os.replace(part, final)
    return final


def _text(parent: ET.Element, tag: str, text: str) -> ET.Element:
    """An element holding ``text`` with what XML 1.0 forbids replaced (a control
    character or U+FFFE in one title made the whole feed unreadable)."""
    element = ET.SubElement(parent, f"{{{ATOM}}}{tag}")
    element.text = xml_text(text)
    return element
