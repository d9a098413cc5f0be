"""Reporting, grouped by idea: :mod:`~perfguide.report.verdicts` (what the numbers say: claims
judged on their rerun intervals, rankings, and ``perfguide compare``'s significance test),
:mod:`~perfguide.report.tables` (measurements set out as text and HTML),
:mod:`~perfguide.report.plots` (the same as figures) and :mod:`~perfguide.report.publishing`
(the table of chapters, results files, short answers, and the checks of a built page), all
writing numbers through :mod:`~perfguide.report.format`.
"""
