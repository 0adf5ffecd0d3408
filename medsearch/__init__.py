"""medsearch: a private, local search engine for PubMed."""

__version__ = "0.1.0"
