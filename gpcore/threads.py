"""TensorFlow's process-wide settings, set deliberately: thread pools and
graph rewrites.

GP matrices here are small (tens to a few thousand points); oversubscribed
thread pools make them slower, not faster (docs/design.md, "Measured facts").
Grappler's graph rewrites cost a third of the fitter's first call and buy
nothing after it (docs/design.md, "Start-up").
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


def skip_graph_rewrites() -> None:
    """Turns off Grappler, TensorFlow's graph optimiser, for this process.

    Measured on the fitter (1 thread): its first call (trace, rewrite and
    run) takes 1.8 s with the rewrites and 1.3 s without; a fit afterwards
    takes the same CPU either way (its ops are already large, fused where it
    matters by hand). Any time before TensorFlow builds a graph.
    """
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
