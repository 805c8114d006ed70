"""``python tests/paused_run.py HANDSHAKE_DIR K MODULE ARGS...``: ``python -m MODULE ARGS`` (``ltr.train``,
``ltr.compare``) that pauses in boosting round K.

A test-only handshake for a test that must act while training is in progress (kill the MLflow server
under it) without guessing how long training takes: in boosting round K the training process sends
the live curve points it holds (rounds 0..K) to the tracker, creates ``HANDSHAKE_DIR/paused`` and waits
until the test creates ``HANDSHAKE_DIR/resume`` (at most 10 minutes); then training goes on as usual.
The first fit that reaches round K pauses (a comparison: the first system with K rounds). Nothing else
differs from ``python -m MODULE``: the module runs as ``__main__`` (as ``-m`` runs it), after the same
process set-up, and every other round's curve points are buffered as ltr buffers them.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path


def main() -> None:
    folder, pause_at, module, args = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]

    from ltr.cli.running import configure_process_environment

    configure_process_environment()  # before the engines load, as python -m ltr.train/compare does

    import ltr.experiment.record as record

    class PausingCurveBuffer(record.CurveBuffer):
        def __call__(self, iteration: int, values: dict[str, float]) -> None:
            super().__call__(iteration, values)
            if iteration == pause_at and not (folder / "paused").exists():
                with self._lock:
                    self._flush()  # rounds 0..K are on the server before the test acts
                (folder / "paused").touch()
                deadline = time.monotonic() + 600
                while not (folder / "resume").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)

    record.CurveBuffer = PausingCurveBuffer
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
