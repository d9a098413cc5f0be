"""What a build publishes and where: the table of chapters
(:mod:`~perfguide.report.publishing.chapters`), results files
(:mod:`~perfguide.report.publishing.results`, memory's in
:mod:`~perfguide.report.publishing.memory_results`), each chapter's short answer and its advice
(:mod:`~perfguide.report.publishing.answers`), a result shown wherever a chapter runs
(:mod:`~perfguide.report.publishing.show`), and the checks the site check runs on what was
published (:mod:`~perfguide.report.publishing.page_checks`).
"""
