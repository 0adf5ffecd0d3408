"""NLM's Medical Subject Headings, offline: the tables, heading explosion and automatic
term mapping (docs/mesh.md)."""
