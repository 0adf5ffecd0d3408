"""Screening: from a strategy's records to the included studies.

A screening project is its own SQLite file in the data home (:mod:`.project`): the
records (imported or taken from the store, deduplicated on the way in), every decision
as an append-only log committed at once (a ``kill -9`` loses nothing), the exclusion
reasons. Ranking learns from the decisions (:mod:`.features`, :mod:`.model`,
:mod:`.ranker`); :mod:`.stopping` says when screening can stop; :mod:`.simulate` runs a
whole screening on a labelled data set and scores it as ASReview's insights do;
:mod:`.agreement` compares two reviewers; :mod:`.prisma` counts the flow.

Nothing here imports textual or torch: the commands and the TUI call these functions.
"""
