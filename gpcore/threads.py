"""TensorFlow thread pools, set deliberately.

GP matrices here are small (tens to a few thousand points); oversubscribed
thread pools make them slower, not faster (docs/design.md, "Measured facts").
"""
from __future__ import annotations


def configure_threads(intra_op: int | None = None, inter_op: int | None = None) -> None:
    """Sets TF's intra-op and inter-op thread counts.

    Must run before TensorFlow starts its runtime (before the first op);
    afterwards TF refuses, and this raises RuntimeError unless the requested
    counts are already in force. None leaves that count as it is. The caller
    decides the counts (the pipeline lets TF_NUM_INTRAOP_THREADS /
    TF_NUM_INTEROP_THREADS win: pipeline/runtime.py).
    """
    import tensorflow as tf

    for value, getter, setter in (
        (intra_op, tf.config.threading.get_intra_op_parallelism_threads,
         tf.config.threading.set_intra_op_parallelism_threads),
        (inter_op, tf.config.threading.get_inter_op_parallelism_threads,
         tf.config.threading.set_inter_op_parallelism_threads),
    ):
        if value is None or getter() == value:
            continue
        try:
            setter(value)
        except RuntimeError as err:
            raise RuntimeError(
                "TensorFlow thread counts must be set before TensorFlow runs its "
                f"first op (wanted {value}, in force {getter()})") from err
