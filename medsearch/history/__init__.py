"""The search history: every search recorded with what reproduces it.

Each line keeps the query as typed and as run, the mode and restrictions, the count, the
corpus snapshot it ran against and, for a set query of at most ``SET_LIMIT`` articles,
the set itself; ``#N`` combines earlier lines, ``history rerun`` reports what changed
since, and ``history --export prisma`` writes the search log a systematic review reports.
"""
