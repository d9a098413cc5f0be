"""What the numbers say. A chapter's claims are judged on where a rebuild here would land
(:mod:`~perfguide.report.verdicts.claims`, with the ratios they rest on in
:mod:`~perfguide.report.verdicts.ratios`, memory's in
:mod:`~perfguide.report.verdicts.memory_claims`, and a winner named only where it is separated
in :mod:`~perfguide.report.verdicts.ranking`); ``perfguide compare`` judges two results files by
a significance test (:mod:`~perfguide.report.verdicts.compare_files`; docs/reading.md says why
the two rules differ); :mod:`~perfguide.report.verdicts.rebuilds` sets two builds' verdicts
side by side.
"""
