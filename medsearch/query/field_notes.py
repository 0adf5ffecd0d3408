"""What runs differently from PubMed for want of MeSH's data: the notes a search
carries when a heading, a subheading or a pharmacological action would explode.

Split from :mod:`medsearch.query.parser`; the searcher and MeSH's translation ask it.
"""

from __future__ import annotations

from medsearch.query.nodes import Node, Not, ParsedQuery, Phrase, Prefix, Tagged, Term, YearRange

MESH_NOTE = (
    "[mh]/[majr] match the heading itself: narrower headings are not included"
    " until MeSH is installed (`medsearch ingest --download mesh`)"
)
"""PubMed explodes a heading to the ones under it in the MeSH tree; that needs NLM's MeSH
data, which this index does not hold yet."""


SUBHEADING_NOTE = (
    "[sh] matches the subheading itself: the narrower subheadings PubMed adds"
    " (therapy[sh]: drug therapy ...) are not included until NLM's subheading tree is"
    " installed (`medsearch ingest --download mesh`, or `medsearch mesh import"
    " qual20XX.xml`); name each one, or write [sh:noexp] to ask for this one alone"
)
"""PubMed explodes a subheading through NLM's subheading tree (help page, "Subheadings");
the tree is NLM's qualifier file, which ``medsearch mesh import`` reads."""
ACTION_NOTE = (
    "[pa] matches the action's own MeSH heading: the substances MeSH lists under a"
    " pharmacological action are not installed, so records indexed only with a substance"
    " that has the action are missed (`medsearch ingest --download mesh` installs them)"
)
"""PubMed's [pa] finds the records indexed with any substance MeSH gives the action (help
page, "Pharmacological Action"); MeSH's PharmacologicalActionList, read by ``medsearch
mesh import``, lists them."""


def mesh_note(parsed: ParsedQuery) -> str | None:
    """What runs differently from PubMed for want of MeSH's data, one clause each: the
    :data:`MESH_NOTE` when ``parsed`` searches a heading with ``[mh]`` or ``[majr]``
    that would explode (``[mh:noexp]`` asks for the heading alone, which is what runs),
    :data:`SUBHEADING_NOTE` for an exploding ``[sh]`` and :data:`ACTION_NOTE` for
    ``[pa]``."""
    return "; ".join(field_notes(parsed, mesh=False)) or None


def field_notes(
    parsed: ParsedQuery, *, mesh: bool, subheading_tree: bool = False, actions: bool = False
) -> list[str]:
    """The notes of :func:`mesh_note`; with ``mesh`` (MeSH installed, so headings
    explode) only those for ``[sh]`` and ``[pa]``, and none for them either where the
    subheading tree (``subheading_tree``) or the pharmacological actions (``actions``)
    are installed with it."""
    tags = _exploding_tags(parsed.node)
    notes = [] if mesh or not tags & {"mh", "majr"} else [MESH_NOTE]
    if "sh" in tags and not (mesh and subheading_tree):
        notes.append(SUBHEADING_NOTE)
    if "pa" in tags and not (mesh and actions):
        notes.append(ACTION_NOTE)
    return notes


def _exploding_tags(node: Node | None) -> set[str]:
    if node is None or isinstance(node, Term | Phrase | Prefix | YearRange):
        return set()
    if isinstance(node, Tagged):
        return ({node.tag} if not node.noexp else set()) | _exploding_tags(node.node)
    if isinstance(node, Not):
        return _exploding_tags(node.child)
    return set().union(*(_exploding_tags(child) for child in node.children))
