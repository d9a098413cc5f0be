"""Measurements set out as tables, as text in a terminal and as HTML on the site
(:mod:`~perfguide.report.tables.table`): a comparison of variants
(:mod:`~perfguide.report.tables.comparison`), a profile's top ops
(:mod:`~perfguide.report.tables.ops`) and memory's growth and peaks
(:mod:`~perfguide.report.tables.memory`).
"""
