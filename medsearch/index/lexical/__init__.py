"""The lexical index: BM25 over tantivy, its schema, query building, shards and snippets."""
