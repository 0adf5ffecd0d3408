"""The store's schema as numbered migrations.

A migration is applied once, in order, inside a transaction, and ``meta.schema_version``
records the last one. Never edit a released migration: add the next number.
"""

from __future__ import annotations

import sqlite3

from medsearch.errors import StoreError

MIGRATIONS: tuple[str, ...] = (
    # 1: articles, deletions, the file ledger
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        checksum TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        articles INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        replaced INTEGER NOT NULL DEFAULT 0,
        deleted INTEGER NOT NULL DEFAULT 0,
        books INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        finished_at TEXT NOT NULL,
        seconds REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE articles (
        pmid INTEGER PRIMARY KEY,
        version INTEGER NOT NULL,
        year INTEGER,
        content_hash TEXT NOT NULL,
        file_id INTEGER,
        data BLOB NOT NULL
    );
    CREATE TABLE deleted (
        pmid INTEGER PRIMARY KEY,
        file_id INTEGER
    );
    """,
    # 2: which article/sentence vectors exist, for which text and which model profile
    """
    CREATE TABLE encoded (
        pmid INTEGER NOT NULL,
        kind TEXT NOT NULL,
        profile TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        items INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (kind, pmid)
    ) WITHOUT ROWID;
    """,
    # 3: zstd dictionaries the records are compressed with (id = zstd's own dictionary id,
    # which every record's frame header carries)
    """
    CREATE TABLE dictionaries (
        id INTEGER PRIMARY KEY,
        data BLOB NOT NULL,
        records INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
    # 4: the file ledger keyed by content (checksum), not by name: two different files may
    # share a name (efetch and the PubMed web export call every file pubmed.xml). Rows and
    # their ids are kept (articles.file_id points at them); a store that ingested the same
    # bytes under two names keeps both rows, and lookups prefer the 'done' one.
    """
    CREATE TABLE files_by_content (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        checksum TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        articles INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        replaced INTEGER NOT NULL DEFAULT 0,
        deleted INTEGER NOT NULL DEFAULT 0,
        books INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        finished_at TEXT NOT NULL,
        seconds REAL NOT NULL DEFAULT 0
    );
    INSERT INTO files_by_content
        SELECT id, name, path, size, checksum, status, articles, added, replaced, deleted,
               books, error, finished_at, seconds
        FROM files;
    DROP TABLE files;
    ALTER TABLE files_by_content RENAME TO files;
    CREATE INDEX files_checksum ON files(checksum);
    CREATE INDEX files_name ON files(name);
    """,
    # 5: the store you can query with SQL (medsearch.store.columns): the compressed
    # records move to ``records``; ``articles`` becomes a plain table of the columns people
    # filter and count on, with side tables for major MeSH headings and publication types.
    # The writer inserts side rows with the articles (sorted: half a trigger's cost at
    # PubMed's cardinalities, BENCHMARKS.md); triggers replace them when an article's
    # values change and remove them with it. Rows of an older store are filled in
    # afterwards, from the records, by medsearch.store.backfill (``meta.articles_backfill``
    # says how far it got: it is there until every record has its row).
    """
    ALTER TABLE articles RENAME TO records;
    CREATE TABLE articles (
        pmid INTEGER PRIMARY KEY,
        title TEXT,
        year INTEGER,
        journal TEXT,
        journal_iso TEXT,
        first_author TEXT,
        last_author TEXT,
        doi TEXT,
        pmcid TEXT,
        language TEXT NOT NULL DEFAULT '[]',
        publication_types TEXT NOT NULL DEFAULT '[]',
        mesh_major TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX articles_year ON articles(year);
    CREATE INDEX articles_journal_iso_year ON articles(journal_iso, year);
    CREATE TABLE articles_mesh_major (
        heading TEXT NOT NULL,
        pmid INTEGER NOT NULL,
        PRIMARY KEY (heading, pmid)
    ) WITHOUT ROWID;
    CREATE TABLE articles_publication_types (
        publication_type TEXT NOT NULL,
        pmid INTEGER NOT NULL,
        PRIMARY KEY (publication_type, pmid)
    ) WITHOUT ROWID;
    CREATE TRIGGER articles_update_mesh_major AFTER UPDATE OF mesh_major ON articles
    WHEN old.mesh_major IS NOT new.mesh_major BEGIN
        DELETE FROM articles_mesh_major WHERE pmid = old.pmid
            AND heading IN (SELECT value FROM json_each(old.mesh_major));
        INSERT OR IGNORE INTO articles_mesh_major(heading, pmid)
            SELECT value, new.pmid FROM json_each(new.mesh_major);
    END;
    CREATE TRIGGER articles_update_publication_types
    AFTER UPDATE OF publication_types ON articles
    WHEN old.publication_types IS NOT new.publication_types BEGIN
        DELETE FROM articles_publication_types WHERE pmid = old.pmid
            AND publication_type IN (SELECT value FROM json_each(old.publication_types));
        INSERT OR IGNORE INTO articles_publication_types(publication_type, pmid)
            SELECT value, new.pmid FROM json_each(new.publication_types);
    END;
    CREATE TRIGGER articles_delete AFTER DELETE ON articles BEGIN
        DELETE FROM articles_mesh_major WHERE pmid = old.pmid
            AND heading IN (SELECT value FROM json_each(old.mesh_major));
        DELETE FROM articles_publication_types WHERE pmid = old.pmid
            AND publication_type IN (SELECT value FROM json_each(old.publication_types));
    END;
    INSERT INTO meta(key, value) SELECT 'articles_backfill', '0'
        WHERE EXISTS (SELECT 1 FROM records);
    """,
    # 6: how many records the store holds, kept by the writer in the transactions that
    # add and remove them: COUNT(*) reads the whole record table (7 s at 10M articles
    # here, ~30 s or minutes cold at 40.9M), and every search that loads the Delta
    # reranker asks for it. Counted once here, at the upgrade.
    """
    INSERT OR REPLACE INTO meta(key, value) SELECT 'record_count', COUNT(*) FROM records;
    """,
    # 7: PMIDs written or deleted since the vector stage last finished a pass of a kind
    # of vectors, so that the next pass reads those instead of joining every record
    # with ``encoded`` (13 s per kind at 10M articles here, a read of the whole store
    # cold: minutes per daily update file at 40.9M). Kept per kind only once a pass of
    # that kind has finished (``meta`` key ``queue:<kind>``, see ingest/encoded.py).
    """
    CREATE TABLE stale_queue (
        kind TEXT NOT NULL,
        pmid INTEGER NOT NULL,
        PRIMARY KEY (kind, pmid)
    ) WITHOUT ROWID;
    """,
    # 8: PMIDs whose change the store has committed and the lexical index may not have:
    # the two cannot commit together, so ingest commits the store (these rows with it),
    # then the index, then empties the table. A full disk or a kill between the two
    # leaves the PMIDs here for the next writer to re-index (see ingest/lexical_sync.py).
    # A row holds a batch of PMIDs (little-endian 64-bit integers): a row per PMID cost
    # ~2.5 us each here, minutes of the writer's time over all of PubMed.
    """
    CREATE TABLE unindexed (id INTEGER PRIMARY KEY, pmids BLOB NOT NULL);
    """,
    # retractions, expressions of concern, errata and updates (medsearch.notices): four
    # columns of ``articles``, the one people filter on indexed only where it is set
    # (a few hundred thousand of 40.9M rows). Records stored before this migration were
    # parsed without their CommentsCorrections links, so their rows can only say what
    # their publication types say, which is filled here from the side table (an index
    # lookup, not a pass over the records); re-ingesting their files brings the links.
    """
    ALTER TABLE articles ADD COLUMN retracted INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE articles ADD COLUMN notice TEXT;
    ALTER TABLE articles ADD COLUMN notices TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE articles ADD COLUMN notice_for TEXT NOT NULL DEFAULT '[]';
    CREATE INDEX articles_notice ON articles(notice) WHERE notice IS NOT NULL;
    UPDATE articles SET retracted = 1, notice = 'retracted',
        notices = json_array(json_object(
            'status', 'retracted', 'type', 'Retracted Publication', 'pmid', NULL))
    WHERE pmid IN (SELECT pmid FROM articles_publication_types
                   WHERE publication_type = 'Retracted Publication');
    UPDATE articles SET notice_for = json_array(json_object(
            'status', 'retracted', 'type', 'Retraction of Publication', 'pmid', NULL))
    WHERE pmid IN (SELECT pmid FROM articles_publication_types
                   WHERE publication_type = 'Retraction of Publication');
    UPDATE articles SET notice_for = json_array(json_object(
            'status', 'expression of concern', 'type', 'Expression of Concern', 'pmid', NULL))
    WHERE pmid IN (SELECT pmid FROM articles_publication_types
                   WHERE publication_type = 'Expression of Concern');
    UPDATE articles SET notice_for = json_array(json_object(
            'status', 'corrected', 'type', 'Published Erratum', 'pmid', NULL))
    WHERE pmid IN (SELECT pmid FROM articles_publication_types
                   WHERE publication_type = 'Published Erratum');
    """,
    # which PMIDs each applied file added, replaced or deleted, written in the file's own
    # transaction: what is new since a saved search last ran (or since any point in the
    # ledger) is read from the rows after that point, never from the records (a scan of
    # 40.9M rows). A row holds a batch of PMIDs (little-endian 64-bit integers), ~8 bytes
    # a PMID: ~330 MB for the whole baseline, ~240 KB for a daily update file.
    """
    CREATE TABLE file_changes (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL,
        change TEXT NOT NULL CHECK (change IN ('added', 'replaced', 'deleted')),
        pmids BLOB NOT NULL
    );
    CREATE INDEX file_changes_file ON file_changes(file_id);
    """,
    # NLM's MeSH (medsearch.mesh.tables): descriptors, their tree numbers, entry terms and
    # allowed qualifiers, and supplementary concepts with the headings they map to. Keys
    # are field_keys.name_key of a name, so a query's words meet them casefolded. A tree
    # number's descendants are a range of the primary key (``C04.557.`` to ``C04.557/``).
    # IF NOT EXISTS: a test that rebuilds an older store drops only what it knows of.
    """
    CREATE TABLE IF NOT EXISTS mesh_descriptors (
        ui TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        scope_note TEXT NOT NULL DEFAULT '',
        descriptor_class TEXT NOT NULL DEFAULT '1'
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mesh_descriptors_name ON mesh_descriptors(name_key);
    CREATE TABLE IF NOT EXISTS mesh_tree_numbers (
        tree_number TEXT PRIMARY KEY,
        ui TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mesh_tree_numbers_ui ON mesh_tree_numbers(ui);
    CREATE TABLE IF NOT EXISTS mesh_terms (
        term_key TEXT NOT NULL,
        ui TEXT NOT NULL,
        term TEXT NOT NULL,
        PRIMARY KEY (term_key, ui)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mesh_terms_ui ON mesh_terms(ui);
    CREATE TABLE IF NOT EXISTS mesh_qualifiers (
        ui TEXT NOT NULL,
        qualifier_ui TEXT NOT NULL,
        name TEXT NOT NULL,
        abbreviation TEXT NOT NULL,
        PRIMARY KEY (ui, qualifier_ui)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS mesh_supplementals (
        ui TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT ''
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mesh_supplementals_name ON mesh_supplementals(name_key);
    CREATE TABLE IF NOT EXISTS mesh_supplemental_headings (
        ui TEXT NOT NULL,
        descriptor_ui TEXT NOT NULL,
        qualifier_ui TEXT,
        major INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (ui, descriptor_ui)
    ) WITHOUT ROWID;
    """,
    # the citation graph (medsearch.store.refs): per citing PMID, its cited PMIDs as one
    # sorted little-endian uint32 array and where each edge came from; the citing PMIDs
    # changed since the cited-by arrays were built, with their edges as built. Records
    # stored before this carry no references, so there is nothing to fill in.
    """
    CREATE TABLE article_refs (pmid INTEGER PRIMARY KEY, edges BLOB NOT NULL, sources BLOB);
    CREATE TABLE refs_changed (pmid INTEGER PRIMARY KEY, edges BLOB);
    """,
    # references that give only a DOI (medsearch.store.ref_dois): queued with their
    # record until the ingest resolves them; those whose DOI no stored article has wait,
    # keyed by citing PMID and by a 64-bit hash of the DOI, for the article to arrive
    """
    CREATE TABLE IF NOT EXISTS ref_dois_queue (citing INTEGER NOT NULL, doi TEXT NOT NULL,
        PRIMARY KEY (citing, doi)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS ref_dois (citing INTEGER NOT NULL, key INTEGER NOT NULL,
        PRIMARY KEY (citing, key)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS ref_dois_key ON ref_dois(key);
    """,
    # MeSH's pharmacological actions (medsearch.mesh.tables): substance (descriptor D... or
    # supplementary concept C...) -> action descriptor, keyed by action for [pa]; and
    # NLM's subheading tree from the qualifier file, a subheading's narrower ones the key
    # range of its tree number, for [sh]. Filled by the next `medsearch mesh import`.
    """
    CREATE TABLE IF NOT EXISTS mesh_actions (
        action_ui TEXT NOT NULL,
        ui TEXT NOT NULL,
        PRIMARY KEY (action_ui, ui)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS mesh_subheadings (
        ui TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        abbreviation TEXT NOT NULL DEFAULT ''
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mesh_subheadings_name ON mesh_subheadings(name_key);
    CREATE TABLE IF NOT EXISTS mesh_subheading_trees (
        tree_number TEXT PRIMARY KEY,
        ui TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mesh_subheading_trees_ui ON mesh_subheading_trees(ui);
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
RECORDS_SCHEMA = 5
"""The migration that moved the records to ``records`` and made ``articles`` the SQL table."""
COUNT_KEY = "record_count"
"""``meta`` key holding the number of records (see migration 6)."""
QUEUE_KEY = "queue:"
"""``meta`` key prefix: ``queue:<kind>`` holds the profile whose pass of that kind of
vectors last finished; the store then queues every PMID it writes or deletes for that
kind in ``stale_queue`` (see migration 7)."""
BACKFILL_KEY = "articles_backfill"
"""``meta`` key present while older records still lack their ``articles`` row; its value
is the PMID the fill has reached (see :mod:`medsearch.store.backfill`)."""


def schema_version(conn: sqlite3.Connection) -> int:
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


def statements(script: str) -> list[str]:
    """The statements of a migration, one by one (``executescript`` would commit the
    transaction a migration runs in). Split at semicolons that end a complete statement,
    so a trigger's ``BEGIN ... END`` stays whole."""
    out: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        raise StoreError(f"an incomplete statement in a migration: {pending.strip()[:60]}")
    return out


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database up to ``target`` (the newest, :data:`SCHEMA_VERSION`, unless a
    test builds an older store); returns the version found before."""
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the store was written by a newer medsearch (schema {found}, this one knows "
            f"{SCHEMA_VERSION}); upgrade medsearch"
        )
    for number in range(found + 1, target + 1):
        script = MIGRATIONS[number - 1]
        conn.execute("BEGIN")
        try:
            for statement in statements(script):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (str(number),),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return found
