"""What each model computes on the backend this process was started with: run as a script with
``KERAS_BACKEND`` (or ``TF_USE_LEGACY_KERAS=1``) set, it writes an ``.npz`` to the path it is
given: every model's inference output on one batch, and, where the backend trains, the loss
``evaluate`` reads from the shared weights and the loss and weights after one ``fit`` step from
them (dropout off: it draws random masks). It starts as a worker does: the workloads, which load
Keras and its backend, are imported only after :func:`import_tensorflow_lean`."""

import sys

import numpy as np

from perfguide.processes.fresh import import_tensorflow_lean


def results() -> dict[str, np.ndarray]:
    from perfguide.workloads import keras_backends as kb
    from perfguide.workloads import keras_processes

    found = {"backend": np.asarray(kb.backend_in_process())}
    for model, spec in kb.MODELS.items():
        x, y = kb.make_data(model)
        x, y = x[:8], y[:8]
        found[f"{model}/output"] = kb.call_and_read(kb.built(model), x)
        if kb.backend_in_process() in keras_processes.INFERENCE_ONLY:
            continue
        network = kb.compiled(model, jit_compile=False, dropout=0.0)
        found[f"{model}/evaluated"] = np.float64(kb.evaluate_epoch(network, x, y, spec.batch))
        found[f"{model}/loss"] = np.float64(kb.fit_epoch(network, x, y, batch_size=spec.batch))
        for i, weight in enumerate(network.get_weights()):
            found[f"{model}/weight{i}"] = weight
    return found


if __name__ == "__main__":
    import_tensorflow_lean()
    np.savez(sys.argv[1], **results())
