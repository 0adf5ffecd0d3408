"""NCBI's E-utilities for PubMed, answered from the local store and indexes.

The paths, parameters, formats and error shapes are NCBI's
(https://www.ncbi.nlm.nih.gov/books/NBK25499/), so Biopython's ``Bio.Entrez``, rentrez
or EDirect need only their base URL changed. docs/service.md lists the subset and what
differs from NCBI's.
"""
