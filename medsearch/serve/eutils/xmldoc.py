"""E-utilities documents: NCBI's declarations and DOCTYPEs, and their error shapes.

Clients find the DTD by the DOCTYPE's file name (Biopython ships NCBI's and validates
against them), so each document names the DTD NCBI's own answer names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from lxml import etree

Element = etree._Element

DTD = "https://eutils.ncbi.nlm.nih.gov/eutils/dtd"
DOCTYPES = {
    "eSearchResult": f'"-//NLM//DTD esearch 20060628//EN" "{DTD}/20060628/esearch.dtd"',
    "eInfoResult": (  # version 1.0, NCBI's default: DbInfo is one record, not a list
        '"-//NLM//DTD eInfoResult, 11 May 2002//EN"'
        ' "https://www.ncbi.nlm.nih.gov/entrez/query/DTD/eInfo_020511.dtd"'
    ),
    "eSummaryResult": f'"-//NLM//DTD esummary v1 20041029//EN" "{DTD}/20041029/esummary-v1.dtd"',
    "eSummaryResult2": (
        f'"-//NLM//DTD esummary pubmed 20250101//EN" "{DTD}/20250101/esummary_pubmed.dtd"'
    ),
    "eLinkResult": f'"-//NLM//DTD elink 20101123//EN" "{DTD}/20101123/elink.dtd"',
    "ePostResult": f'"-//NLM//DTD epost 20090526//EN" "{DTD}/20090526/epost.dtd"',
    "eSpellResult": (
        '"-//NLM//DTD eSpellResult, 23 November 2004//EN"'
        ' "https://eutils.ncbi.nlm.nih.gov/corehtml/query/DTD/eSpell.dtd"'
    ),
}


def add(parent: Element, tag: str, text: object = None, **attrs: str) -> Element:
    child = etree.SubElement(parent, tag, attrs)
    if text is not None:
        child.text = str(text)
    return child


def document(root: Element, doctype: str | None = None) -> bytes:
    """``root`` with the XML declaration and its DOCTYPE (keyed by the root's tag)."""
    name = str(root.tag)
    public = DOCTYPES[doctype or name]
    body = etree.tostring(root, encoding="unicode", pretty_print=True)
    head = f'<?xml version="1.0" encoding="UTF-8" ?>\n<!DOCTYPE {name} PUBLIC {public}>\n'
    return (head + body).encode()


def build(tag: str, fill: Callable[[Element], object], doctype: str | None = None) -> bytes:
    root = etree.Element(tag)
    fill(root)
    return document(root, doctype)


def error_xml(root_tag: str, message: str) -> bytes:
    """NCBI's error shape: the utility's own root holding one ``ERROR``."""
    return build(root_tag, lambda root: add(root, "ERROR", message))


def json_bytes(obj: Any) -> bytes:
    return orjson.dumps(obj)


def json_header(kind: str) -> dict[str, str]:
    return {"type": kind, "version": "0.3"}
