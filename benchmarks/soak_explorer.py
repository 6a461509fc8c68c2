#!/usr/bin/env python
"""Soak test of the Explorer: random user actions at a steady rate for a long time.

An Explorer runs HSSNE on the 1797 digits while this script sends it, through
the same message handler the browser's messages reach, ``--rate`` actions a
second for ``--seconds`` seconds (an hour by default): slider moves (α, ρ),
lasso selections of 2 to 60 neighbouring points, labels (also into new
classes), must-links, cannot-links, pins, undo and redo, exports and imports
of earlier exports, and a share of bad messages (unknown types, broken
selections, files that are not annotations). After every fifth action, before
every undo or redo (so that undoing cannot hide a wrong state) and at the end
it checks the Explorer against a mirror kept with the
:class:`~nbembed.Annotations` API alone (the pinned points every fifth action;
after the other actions, only that the run has not failed):

* **lost or duplicated annotations**: ``ex.annotations`` must equal the
  mirror, and no must-link group, pair or cannot-link pair of selections may
  be stored twice;
* **pins**: the pinned points must be those the actions asked for;
* **exceptions**: errors logged by nbembed, a run that failed, and valid
  messages the Explorer refused;
* **memory**: the process's resident set size, sampled every 10 s, with the
  memory malloc has handed out (live data, NumPy arrays included, without what
  the allocator keeps of freed memory), the Python objects allocated and the
  size of the annotations (as JSON), so that growth of the data the user made
  can be told from a leak and from memory kept by the allocator. The
  growth is measured from the end of the warm-up, when the bounded histories
  have filled (the undo history holds its ``MAX_UNDO_STEPS`` steps) and at
  least ``--warm-up`` seconds have passed, to the end of the run; each end is
  the mean of a minute of samples, since one sample can fall on a slider
  move's transient arrays.

It prints a summary and exits 1 when any check failed. Usage (from the
repository root)::

    PYTHONPATH=. python benchmarks/soak_explorer.py                    # one hour
    PYTHONPATH=. python benchmarks/soak_explorer.py --seconds 60 --warm-up 10
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import sys
import threading
import time

import numpy as np

#: States the mirror keeps: the soak undoes at most this deep.
MIRROR_DEPTH = 200

#: Exported files the soak keeps to import again (a browser would hold them, not
#: the kernel, so they are few: the soak's own memory should not grow with them).
EXPORTS_KEPT = 8


class RecordingComm:
    """Stands in for the kernel's comm: keeps what the widget sends."""

    kernel = object()
    comm_id = "soak"

    def __init__(self):
        self.exports = []

    def on_msg(self, callback):
        pass

    def close(self):
        pass

    def send(self, data=None, buffers=None):
        content = (data or {}).get("content") or {}
        if data and data.get("method") == "custom" and content.get("type") == "annotations_json":
            self.exports = (self.exports + [content["text"]])[-EXPORTS_KEPT:]


class ErrorCounter(logging.Handler):
    """Counts the records of level ERROR and above that nbembed logs."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def rss_mib():
    """Resident set size of this process, MiB (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * 4096 / 2**20


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h)."""

    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def allocated_mib():
    """Bytes that malloc has handed out and not had back (MiB): live C-level data,
    NumPy arrays included, without what freed memory the heaps keep; NaN where the
    C library is not glibc 2.33 or later."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return float("nan")
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


def memory_sample(ex):
    """The resident set size (MiB), the memory malloc has handed out (MiB), the
    Python objects allocated, and the size of the Explorer's annotations as JSON
    (KiB)."""
    return (rss_mib(), allocated_mib(), sys.getallocatedblocks(),
            len(ex.annotations.to_json()) / 1024)


def custom(content, buffers=()):
    return {"content": {"data": {"method": "custom", "content": content}},
            "buffers": [memoryview(b) for b in buffers]}


def update(state):
    state = dict(state)
    paths, buffers = [], []
    for key, value in list(state.items()):
        if isinstance(value, bytes):
            paths.append([key])
            buffers.append(memoryview(value))
            state[key] = None
    return {"content": {"data": {"method": "update", "state": state, "buffer_paths": paths}},
            "buffers": buffers}


def same_annotations(a, b):
    """Whether two annotations hold the same classes, labels and constraints (all
    that their JSON holds), compared without writing it."""
    if (a.n_samples, a.n_classes, a.class_names) != (b.n_samples, b.n_classes, b.class_names):
        return False
    if not (np.array_equal(a.soft_label_matrix(), b.soft_label_matrix())
            and np.array_equal(a.confidences(), b.confidences())):
        return False
    if a.counts() != b.counts():
        return False
    selections = zip(a.cannot_link_groups(include_pairs=True),
                     b.cannot_link_groups(include_pairs=True))
    return (all(map(np.array_equal, a.must_link_groups(), b.must_link_groups()))
            and np.array_equal(a.must_link_pairs(groups=False), b.must_link_pairs(groups=False))
            and all(np.array_equal(x, y) for pa, pb in selections for x, y in zip(pa, pb)))


def duplicates(annotations):
    """Constraints stored more than once in annotations (there should be none)."""
    groups = [g.tobytes() for g in annotations.must_link_groups()]
    selections = [(a.tobytes(), b.tobytes()) for a, b in annotations.cannot_link_groups()]
    found = len(groups) - len(set(groups)) + len(selections) - len(set(selections))
    for pairs in (annotations.must_link_pairs(groups=False),
                  annotations.cannot_link_pairs(groups=False)):
        found += len(pairs) - len(np.unique(pairs, axis=0))
    return found


class Soak:
    """Sends random actions to an Explorer and checks it against a mirror."""

    def __init__(self, ex, comm, rng):
        from nbembed import Annotations
        from nbembed.widget.traits import UINT32, encode

        self.Annotations, self.UINT32, self.encode = Annotations, UINT32, encode
        self.ex, self.comm, self.rng = ex, comm, rng
        self.n = ex.annotations.n_samples
        # The mirror: the state after each kept action (a copy of the annotations,
        # pinned points), and the undone ones. Copies share the constraints'
        # arrays, which annotations never change in place.
        self.states = [(ex.annotations.copy(), ())]
        self.undone = []
        self.selection = np.empty(0, dtype=np.int64)
        self.pending = None
        self.failures = []
        self.counts = {}
        self.refused_valid = 0
        self._exported = {}  # exported text -> the mirror's annotations at the export
        self.actions = 0
        self.next_kind = self._draw_kind()

    # -- the mirror ---------------------------------------------------------------
    @property
    def expected(self):
        """(annotations, pinned points) the Explorer should hold now (not to be changed)."""
        return self.states[-1]

    def _kept(self, annotations, pinned, moved=False):
        """An action changed something (or ``moved`` pinned points): it is the new
        state, and nothing can be redone."""
        held, held_pins = self.expected
        if moved or pinned != held_pins or not same_annotations(annotations, held):
            self.states = (self.states + [(annotations, pinned)])[-MIRROR_DEPTH:]
            self.undone = []

    def _mirror_annotations(self, operation):
        """The annotations of the current state after ``operation`` (on a copy)."""
        ann = self.expected[0].copy()
        operation(ann)
        # A copy again, without the membership index the operation built (about 1.4
        # MiB for 900 groups and 950 pairs of selections): the mirror keeps 200 states.
        return ann.copy()

    # -- actions --------------------------------------------------------------------
    def lasso(self):
        """Points near a random point of the current map, as a lasso would take them."""
        Y = self.ex.embedding
        centre = Y[self.rng.integers(self.n)]
        k = int(self.rng.integers(2, 61))
        return np.sort(np.argsort(((Y - centre) ** 2).sum(axis=1))[:k])

    KINDS = ("slider", "select", "label", "label", "must_link", "cannot_link", "pin",
             "undo", "undo", "redo", "export", "import", "bad")

    def _draw_kind(self):
        return self.KINDS[self.rng.integers(len(self.KINDS))]

    def act(self):
        """One random action, then the checks: all of them after every fifth action,
        the annotations before every undo or redo (so that an undo cannot hide a
        state that was wrong), the run's status after the others."""
        kind = self.next_kind
        self.next_kind = self._draw_kind()
        self.counts[kind] = self.counts.get(kind, 0) + 1
        getattr(self, f"_{kind}")()
        self.actions += 1
        if self.actions % 5 == 0 or self.next_kind in ("undo", "redo"):
            # Waiting for the worker to compare the pins only every fifth action
            # keeps the rate: the worker may be rebuilding the affinities.
            self.check(kind, pins=self.actions % 5 == 0)
        else:
            self.check_status()

    def _send(self, message, valid=True):
        before = self.ex.notice
        self.ex._handle_msg(message)
        if valid and self.ex.notice != before and \
                self.ex.notice.startswith("Ignored a message from the browser"):
            self.refused_valid += 1
            self.failures.append(f"a valid message was refused: {self.ex.notice}")

    def _slider(self):
        name = ("alpha", "rho")[self.rng.integers(2)]
        value = float(self.rng.uniform(0.5, 2.0) if name == "alpha" else self.rng.uniform(0, 1))
        self._send(update({"params": {**self.ex.params, name: value}}))

    def _select(self):
        self.selection = self.lasso()
        self._send(update({"_selection": self.encode(self.selection, self.UINT32)}))

    def _label(self):
        names = self.expected[0].class_names
        selection = self.lasso()
        self.selection = selection
        if not names or (len(names) < 10 and self.rng.random() < 0.1):
            name = f"class {len(names)}"
            content = {"type": "apply", "mode": "soft_label", "label": "__new__",
                       "new_class": name, "confidence": 1.0}

            def operation(a):
                a.set_labels(selection, a.add_class(name), 1.0)
        else:
            k = int(self.rng.integers(len(names)))
            confidence = float(self.rng.choice([1.0, 0.5]))
            content = {"type": "apply", "mode": "soft_label", "label": k,
                       "confidence": confidence}

            def operation(a):
                a.set_labels(selection, k, confidence)
        self._send(update({"_selection": self.encode(selection, self.UINT32)}))
        self._send(custom(content, [self.encode(selection, self.UINT32)]))
        self._kept(self._mirror_annotations(operation), self.expected[1])

    def _must_link(self):
        selection = self.lasso()
        self._send(custom({"type": "apply", "mode": "must_link"},
                          [self.encode(selection, self.UINT32)]))
        self._kept(self._mirror_annotations(lambda a: a.add_must_link(selection)),
                   self.expected[1])

    def _cannot_link(self):
        selection = self.lasso()
        if self.pending is not None:
            selection = np.setdiff1d(selection, self.pending)
            if not len(selection):
                return
        self._send(custom({"type": "apply", "mode": "cannot_link"},
                          [self.encode(selection, self.UINT32)]))
        if self.pending is None:
            self.pending = selection
            return
        a, self.pending = self.pending, None
        self._kept(self._mirror_annotations(lambda ann: ann.add_cannot_link(a, selection)),
                   self.expected[1])

    def _pin(self):
        pinned = np.array(self.expected[1], dtype=np.int64)
        if self.rng.random() < 0.2:
            self._send(custom({"type": "unpin_all"}))
            self._kept(self.expected[0], ())
            return
        self._select()
        if np.isin(self.selection, pinned).all():
            after = np.setdiff1d(pinned, self.selection)
        else:
            after = np.union1d(pinned, self.selection)
        self._send(custom({"type": "toggle_pins"}))
        self._kept(self.expected[0], tuple(after.tolist()))

    def _undo(self):
        if len(self.states) > 1:  # not deeper than the mirror remembers
            self._send(custom({"type": "undo"}))
            self.undone.append(self.states.pop())

    def _redo(self):
        self._send(custom({"type": "redo"}))
        if self.undone:
            self.states.append(self.undone.pop())

    def _export(self):
        before = self.comm.exports[-1:]
        self._send(custom({"type": "export_annotations"}))
        if self.comm.exports[-1:] != before:
            # What the file should hold: the mirror now (the checks compare the two).
            self._exported = {t: self._exported[t] for t in self.comm.exports
                              if t in self._exported}
            self._exported[self.comm.exports[-1]] = self.expected[0]

    def _import(self):
        if not self.comm.exports:
            return
        text = self.comm.exports[int(self.rng.integers(len(self.comm.exports)))]
        self._send(custom({"type": "import_annotations", "text": text}))
        data = json.loads(text)
        pins = data.get("pinned", {"indices": []})["indices"]
        source = self._exported.get(text)
        if source is None:
            source = self.Annotations.from_json(text)
        merged = self._mirror_annotations(lambda a: a.merge(source))
        # Pins in the file move those points to where the file has them: an action.
        self._kept(merged, tuple(np.union1d(self.expected[1], pins).astype(int).tolist()),
                   moved=bool(pins))

    def _bad(self):
        bad = [custom({"type": "explode"}),
               custom({"type": "apply", "mode": "must_link"}, [b"\x01\x02\x03"]),
               custom({"type": "apply", "mode": "soft_label", "label": 99, "confidence": 1.0},
                      [self.encode(np.array([0, 1]), self.UINT32)]),
               custom({"type": "import_annotations", "text": "{not json"}),
               custom({"type": "import_annotations", "text": self.Annotations(5).to_json()}),
               update({"params": {**self.ex.params, "alpha": "x"}}),
               custom(["not", "an", "object"])]
        self._send(bad[self.rng.integers(len(bad))], valid=False)

    # -- checks ---------------------------------------------------------------------
    def settled(self):
        """Whether the worker made every change queued so far (within 30 s)."""
        done = threading.Event()
        self.ex._worker.submit(lambda run: done.set())
        return done.wait(30)

    def check_status(self):
        """The run has not failed (restarted if it has)."""
        if self.ex.status == "error":
            self.failures.append(f"the run failed: {self.ex.error}")
            self.ex.restart()

    def check(self, kind, pins=True):
        """Compare the Explorer with the mirror; the pins once the worker has made
        every pin change queued (it shows what the run holds afterwards)."""
        ex = self.ex
        expected, pinned = self.expected
        held = ex.annotations
        if not same_annotations(held, expected):
            self.failures.append(f"after {kind}: the annotations differ from the mirror "
                                 f"({held.counts()} vs {expected.counts()})")
            self.states[-1] = (held.copy(), pinned)
        if pins and not self.settled():
            self.failures.append(f"after {kind}: the worker did not take a change in 30 s")
        elif pins and tuple(ex.pinned.tolist()) != pinned:
            self.failures.append(f"after {kind}: pinned {ex.pinned.size} points, expected "
                                 f"{len(pinned)}")
            self.states[-1] = (self.states[-1][0], tuple(ex.pinned.tolist()))
        twice = duplicates(held)
        if twice:
            self.failures.append(f"after {kind}: {twice} constraint(s) stored twice")
        self.check_status()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--rate", type=float, default=10.0, help="actions per second")
    parser.add_argument("--warm-up", type=float, default=120.0,
                        help="fewest seconds before the memory baseline is taken")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report-every", type=float, default=300.0,
                        help="seconds between progress lines (memory, rate, annotations)")
    args = parser.parse_args(argv)

    from nbembed import HSSNE
    from nbembed.annotations.history import MAX_UNDO_STEPS
    from nbembed.datasets import load_digits
    from nbembed.widget import Explorer

    errors = ErrorCounter()
    logging.getLogger("nbembed").addHandler(errors)
    X, y = load_digits()
    ex = Explorer(X, method=HSSNE(alpha=1.0, random_state=0), colors=y)
    ex.comm = comm = RecordingComm()
    ex.wait(iteration=5, timeout=600)
    soak = Soak(ex, comm, np.random.default_rng(args.seed))
    start = time.monotonic()
    samples, actions, next_sample = [], 0, start
    warmed_up = None  # index of the first sample after the warm-up
    next_report = start + args.report_every
    try:
        while (now := time.monotonic()) - start < args.seconds:
            soak.act()
            actions += 1
            if now >= next_sample:
                samples.append((now - start, *memory_sample(ex)))
                next_sample += 10.0
                if (warmed_up is None and now - start >= args.warm_up
                        and len(ex.annotations) >= MAX_UNDO_STEPS):
                    warmed_up = len(samples) - 1
            if now >= next_report:
                next_report += args.report_every
                _, mib, allocated, blocks, kib = samples[-1]
                print(f"{now - start:6.0f} s: {actions} actions, RSS {mib:.0f} MiB "
                      f"({allocated:.0f} MiB allocated), {blocks} Python objects, "
                      f"annotations {kib:.0f} KiB {ex.annotations.counts()}", flush=True)
            time.sleep(max(0.0, start + actions / args.rate - time.monotonic()))
        elapsed = time.monotonic() - start
        soak.check("the last action")
        final = rss_mib()
        ann = ex.annotations
        rss = [sample[1] for sample in samples]
        allocated = [sample[2] for sample in samples]
        if warmed_up is None:
            print("the warm-up did not end (undo history not full): growth from the start")
            warmed_up = 0
        baseline = float(np.mean(rss[warmed_up:warmed_up + 6]))
        end = float(np.mean(rss[-6:]))
        growth = (end - baseline) / baseline
        print(f"{actions} actions in {elapsed:.0f} s ({actions / elapsed:.1f}/s): "
              + ", ".join(f"{k} {v}" for k, v in sorted(soak.counts.items())))
        print(f"run: iteration {ex.run.iteration}, status {ex.status}; annotations "
              f"{ann.counts()}, {len(ann)} undo steps, {ex.pinned.size} pinned")
        print(f"exceptions logged: {len(errors.messages)}; valid messages refused: "
              f"{soak.refused_valid}; mirror mismatches and duplicates: "
              f"{len(soak.failures) - soak.refused_valid}")
        print(f"RSS: {rss[0]:.0f} MiB at the start, {baseline:.0f} MiB after the warm-up "
              f"({samples[warmed_up][0]:.0f} s), {max(rss):.0f} MiB at most, {end:.0f} MiB in "
              f"the last minute ({final:.0f} MiB at the end): growth {100 * growth:+.1f}% "
              f"(goal <= 10%), {100 * (end - rss[0]) / rss[0]:+.1f}% from the start")
        (_, _, _, blocks_0, kib_0), (_, _, _, blocks_1, kib_1) = samples[warmed_up], samples[-1]
        print(f"over the same span: memory allocated (live data) "
              f"{np.mean(allocated[warmed_up:warmed_up + 6]):.0f} -> "
              f"{np.mean(allocated[-6:]):.0f} MiB, Python objects {blocks_0} -> {blocks_1}, "
              f"annotations {kib_0:.0f} -> {kib_1:.0f} KiB as JSON")
        for failure in (soak.failures + errors.messages)[:20]:
            print("  ", failure)
        ok = not soak.failures and not errors.messages and growth <= 0.10
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        ex.close()


if __name__ == "__main__":
    sys.exit(main())
