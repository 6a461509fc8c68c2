#!/usr/bin/env python
"""The lasso-to-every-row workflow of notebook 14 at a size of one's choosing.

``notebooks/14-label-millions-with-dask.ipynb`` runs on 10^4 rows so that it
finishes in a minute or two; its ``ROWS, CHUNK, SAMPLE`` line scales it. This
script executes that notebook, unchanged but for that line, in a fresh kernel
(the rows generated chunk by chunk into a zarr store, a two-worker
``LocalCluster``, the Explorer on the sample, five lassos, HSSNE and Mbed
fitted on the labelled sample, every row placed and classified on the
cluster, Parquet written), and prints:

* the seconds of each code cell, named by its first line;
* the peak resident memory of the notebook's kernel and of the largest Dask
  worker (the process tree is sampled every second);
* the notebook's last printed result (rows placed, and how each true group
  came out).

The executed notebook is written to ``--out`` for inspection.

Usage (from the repository root; needs the ``dask`` extra, zarr and nbclient)::

    PYTHONPATH=. python benchmarks/bench_dask_workflow.py                    # as stored
    PYTHONPATH=. python benchmarks/bench_dask_workflow.py --rows 10000000 \\
        --chunk 100000 --sample 100000 --out /tmp/notebook14-1e7.ipynb
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOTEBOOK = ROOT / "notebooks" / "14-label-millions-with-dask.ipynb"
sys.path.insert(0, str(HERE))

from bench_hssne import git_state, markdown_table  # noqa: E402

#: The notebook's line that sets its size.
SIZE_LINE = re.compile(r"^ROWS, CHUNK, SAMPLE = .*$", re.MULTILINE)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--chunk", type=int, default=2_500)
    p.add_argument("--sample", type=int, default=1_000)
    p.add_argument("--out", type=Path, default=None,
                   help="where to write the executed notebook")
    return p.parse_args(argv)


def sized_notebook(rows, chunk, sample):
    """Notebook 14 with its size line set to ``rows, chunk, sample``."""
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    sized = [cell for cell in nb.cells
             if cell.cell_type == "code" and SIZE_LINE.search(cell.source)]
    if len(sized) != 1:
        raise SystemExit(f"{NOTEBOOK.name}: expected one 'ROWS, CHUNK, SAMPLE = ...' line")
    sized[0].source = SIZE_LINE.sub(f"ROWS, CHUNK, SAMPLE = {rows}, {chunk}, {sample}",
                                    sized[0].source)
    return nb


class PeakMemory:
    """Peak resident memory of this process's descendants, sampled every ``every`` s:
    the kernel (the child that runs ipykernel) and the largest other process
    (a Dask worker or nanny)."""

    def __init__(self, every=1.0):
        import psutil

        self._me = psutil.Process()
        self.every = every
        self.kernel = self.other = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        import psutil

        while not self._stop.wait(self.every):
            for proc in self._me.children(recursive=True):
                try:
                    rss = proc.memory_info().rss
                    is_kernel = "ipykernel" in " ".join(proc.cmdline())
                except psutil.Error:
                    continue
                if is_kernel:
                    self.kernel = max(self.kernel, rss)
                else:
                    self.other = max(self.other, rss)


def main(argv=None):
    import nbclient

    args = parse_args(argv)
    nb = sized_notebook(args.rows, args.chunk, args.sample)
    starts = {}

    def started(cell, cell_index, **_):
        starts[cell_index] = time.perf_counter()

    def finished(cell, cell_index, **_):
        seconds = time.perf_counter() - starts[cell_index]
        first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
        print(f"{datetime.datetime.now():%H:%M:%S} cell {cell_index}: {seconds:8.1f} s  {first}",
              flush=True)
        timings.append([cell_index, f"{seconds:.1f}", f"`{first}`"])

    timings = []
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    client = nbclient.NotebookClient(nb, timeout=None, kernel_name="python3",
                                     on_cell_execute=started, on_cell_executed=finished)
    print(f"nbembed {git_state()}; notebook 14 with {args.rows:,} rows in chunks of "
          f"{args.chunk:,}, a sample of {args.sample:,}", flush=True)
    start = time.perf_counter()
    with PeakMemory() as memory:
        client.execute(env=env)
    total = time.perf_counter() - start
    if args.out is not None:
        import nbformat

        nbformat.write(nb, args.out)
    print(markdown_table(["cell", "seconds", "first line"], timings))
    print(f"whole notebook {total:.0f} s; peak RSS: kernel {memory.kernel / 2**30:.2f} GiB, "
          f"largest other process (a worker) {memory.other / 2**30:.2f} GiB")
    last = [out for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "stream"]
    if last:
        print(last[-1]["text"])


if __name__ == "__main__":
    main()
