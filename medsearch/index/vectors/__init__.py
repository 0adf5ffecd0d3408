"""Vector collections: float16 rows on disk, Faiss (flat, IVF-PQ parts), sentences."""
