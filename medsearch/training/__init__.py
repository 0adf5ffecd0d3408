"""Training the Delta reranker on the user's corpus (``medsearch rerank train``).

Training runs searches for its negatives, so this package sits above retrieval; the
trained model is read at search time by :mod:`medsearch.rerank`, below it. Modules:

- :mod:`~medsearch.training.train`: the resumable stages and the pairwise training loop.
- :mod:`~medsearch.training.examples`: pseudo-queries, pairs, held-out queries, nDCG.
- :mod:`~medsearch.training.words`: the sentences file and the word2vec vectors.
- :mod:`~medsearch.training.net`: the network in torch (the reference forward the
  NumPy scorer is tested against).
"""
