"""Two ways to add up the norms of a matrix's rows, timed against each other in fresh processes.

Run it from its folder (the worker processes import it by name from there)::

    python row_norms.py
"""

import tensorflow as tf

from perfguide.workloads.base import Workload, call_of


def loop(x):
    return tf.add_n([tf.norm(x[i]) for i in range(x.shape[0])])


def one_op(x):
    return tf.reduce_sum(tf.norm(x, axis=1))


VARIANTS = {"loop": loop, "one-op": one_op}


def make_call(variant, rows):
    return call_of(VARIANTS[variant], tf.random.normal([rows, 16]))


WORKLOAD = Workload(
    name="row-norms",
    question="Does one op over the rows beat a Python loop over them?",
    unit="call",
    size_name="rows",
    default_size=32,
    baseline="loop",
    variants=tuple(VARIANTS),
    make_call=make_call,
)

if __name__ == "__main__":
    from perfguide.processes.pool import Workers
    from perfguide.report.tables.comparison import Comparison
    from perfguide.report.verdicts.claims import ClaimReport, Faster

    claims = [Faster("one-op", "loop")]
    with Workers() as workers:
        measured = workers.run("row_norms:WORKLOAD", settle=claims)
    print(Comparison(measured, baseline="loop"))
    print(ClaimReport.of(claims, measured))
