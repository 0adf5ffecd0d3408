"""Encoders, the cross-encoder, model profiles, device selection and batching.

Importing this package (or ``profiles``, ``cache``, ``device``, ``batching``) does not
import torch or transformers, so the CLI can list profiles and validate options fast;
``encoders`` and ``cross`` load them. Typical use::

    from medsearch.models.profiles import resolve_profile
    from medsearch.models.encoders import load_encoder
    from medsearch.models.cross import load_cross_encoder

    profile = resolve_profile(None, paths)          # medcpt if cached, else minilm
    encoder = load_encoder(profile, device="auto", paths=paths)
    vectors = encoder.encode_articles([(title, abstract), ...])
"""
