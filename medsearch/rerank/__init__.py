"""The Delta reranker (Mohan, Fiorini, Kim and Lu, WWW 2018), trained on the user's corpus.

A small convolutional relevance model over word2vec vectors that reorders the first
stage's top 500 in milliseconds on a CPU, so every search gets a learned ranking even
without a GPU or a cross-encoder. Modules, one concern each:

- :mod:`~medsearch.rerank.text`: the paper's tokenizer (lower case, number classes).
- :mod:`~medsearch.rerank.lexmatch`: IDF table and the three "Lex3" match features.
- :mod:`~medsearch.rerank.scorer`: the trained model as NumPy arrays; scores a query's
  candidates without importing torch.
- :mod:`~medsearch.rerank.net`: the same network in torch, for training (the reference
  forward the fast scorer is tested against).
- :mod:`~medsearch.rerank.train`: pseudo-queries, candidates, word2vec and the pairwise
  training loop behind ``medsearch rerank train``.
- :mod:`~medsearch.rerank.marks`: the user's own signals (opened, marked, exported, cited).
- :mod:`~medsearch.rerank.plan`: which rerankers a search uses (``auto``/``delta``/...).
"""
