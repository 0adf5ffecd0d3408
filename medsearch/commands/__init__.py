"""The CLI's commands, one module per concern; :mod:`medsearch.cli` assembles them."""

from __future__ import annotations

import click

from medsearch.commands.check import check
from medsearch.commands.citations import citedby, refs, snowball
from medsearch.commands.evaluate import evaluate
from medsearch.commands.export import export
from medsearch.commands.history import history
from medsearch.commands.info import show, stats
from medsearch.commands.ingest import ingest
from medsearch.commands.mesh import mesh
from medsearch.commands.models import models
from medsearch.commands.quickstart import quickstart
from medsearch.commands.rerank import mark, rerank
from medsearch.commands.retrieve import cite, sentences, similar
from medsearch.commands.screen import screen
from medsearch.commands.search import search
from medsearch.commands.serve import serve
from medsearch.commands.sql import sql
from medsearch.commands.translate import translate
from medsearch.commands.update import update
from medsearch.commands.watch import watch

COMMANDS: list[click.Command] = [
    quickstart,
    ingest,
    update,
    watch,
    search,
    translate,
    history,
    similar,
    sentences,
    cite,
    refs,
    citedby,
    snowball,
    show,
    stats,
    export,
    check,
    screen,
    sql,
    serve,
    mesh,
    evaluate,
    models,
    rerank,
    mark,
]
