"""The Delta reranker (Mohan, Fiorini, Kim and Lu, WWW 2018), trained on the user's corpus.

A small convolutional relevance model over word2vec vectors that reorders the first
stage's top 500 in milliseconds on a CPU, so every search gets a learned ranking even
without a GPU or a cross-encoder. Modules, one concern each:

- :mod:`~medsearch.rerank.text`: the paper's tokenizer (lower case, number classes).
- :mod:`~medsearch.rerank.lexmatch`: IDF table and the three "Lex3" match features.
- :mod:`~medsearch.rerank.scorer`: the trained model as NumPy arrays; scores a query's
  candidates without importing torch.
- :mod:`~medsearch.rerank.loading`: finding the installed model and the rule of whether
  it still fits the corpus.
- :mod:`~medsearch.rerank.install`: where the model lives on disk, replaced atomically.
- :mod:`~medsearch.rerank.marks`: the user's own signals (opened, marked, exported, cited).
- :mod:`~medsearch.rerank.plan`: which rerankers a search uses (``auto``/``delta``/...).

Training runs searches, so it sits above retrieval, in :mod:`medsearch.training`.
"""
