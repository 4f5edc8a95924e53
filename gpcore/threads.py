"""TensorFlow thread pools, set deliberately.

GP matrices here are small (tens to a few thousand points); oversubscribed
thread pools make them slower, not faster (DESIGN.md, "Measured").
"""
from __future__ import annotations

import os


def configure_threads(intra_op: int | None = None, inter_op: int | None = None) -> None:
    """Sets TF's intra-op and inter-op thread counts.

    Must run before TensorFlow starts its runtime (before the first op);
    afterwards TF refuses, and this raises RuntimeError unless the requested
    counts are already in force. None reads TF_NUM_INTRAOP_THREADS /
    TF_NUM_INTEROP_THREADS from the environment, else leaves TF's default.
    """
    import tensorflow as tf

    intra_op = intra_op if intra_op is not None else _env_int("TF_NUM_INTRAOP_THREADS")
    inter_op = inter_op if inter_op is not None else _env_int("TF_NUM_INTEROP_THREADS")
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


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else None
