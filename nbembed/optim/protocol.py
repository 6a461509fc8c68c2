"""The run protocol every method's resumable run follows.

The Explorer widget and the teaching notebooks talk to a method only through
this surface, so a new method appears in the widget without any change to it:

- ``step(n)`` advances ``n`` iterations and returns promptly (tens of
  milliseconds per iteration at most, so a slider stays responsive);
- ``set_params(**live)`` changes live parameters and continues from the
  current embedding (no restart, no jump);
- ``set_annotations(annotations, y)`` replaces the labels and constraints the
  run uses; they take effect at the next iteration;
- ``embedding`` is a copy of the current positions; ``history`` is a list of
  dicts with at least ``iteration`` and ``cost``;
- ``membership`` (class probabilities per point) and ``anchors`` (extra
  points drawn differently, such as Parametric Embedding's classes) are
  optional views a method may provide;
- ``pin(indices, positions=None)``, ``unpin(indices=None)``, ``move(indices,
  positions)`` and ``pinned`` hold points still and place them by hand; every
  gradient-based method's run has them (see
  :class:`~nbembed.optim.run.ObjectiveRun`), callers check with ``hasattr``;
- ``forces(indices=None)`` splits the current gradient into its terms, per
  point (every gradient-based method's run; see docs/forces.md).

Every public method of a run holds :data:`nbembed._config.KERNEL_LOCK` while
it touches the state, so a worker thread stepping the run and the main thread
changing its parameters never interleave inside an iteration.
"""

from __future__ import annotations

from .. import _config
from .._validation import check_number
from .callbacks import as_list, call_all

#: Names used in ``annotation_kinds``: which parts of
#: :class:`~nbembed.Annotations` a method reads.
ANNOTATION_KINDS = ("labels", "soft_labels", "must_link", "cannot_link")


def check_live_params(live_parameters, params, owner):
    """Validate live parameter values against their declarations.

    Parameters
    ----------
    live_parameters : dict
        Name -> :class:`~nbembed.optim.LiveParameter`.
    params : dict
        Name -> proposed value.
    owner : str
        The run or method, for the error message.

    Returns
    -------
    dict
        Name -> validated value.

    Raises
    ------
    ValueError, TypeError
        For an unknown name, or a value outside its interval (NaN included).
    """
    checked = {}
    for name, value in params.items():
        if name not in live_parameters:
            live = ", ".join(live_parameters) or "none"
            raise ValueError(f"{name!r} is not a live parameter of {owner}; live "
                             f"parameters: {live}.")
        checked[name] = live_parameters[name].validate(value)
    return checked


class Run:
    """Base class of resumable runs (the protocol; see the module docstring).

    Attributes
    ----------
    name : str
        Shown in the widget and in log messages.
    live_parameters : dict
        Name -> :class:`~nbembed.optim.LiveParameter` accepted by ``set_params``.
    annotation_kinds : tuple of str
        Subset of :data:`ANNOTATION_KINDS` the run uses.
    iteration : int
        Iterations done so far.
    n_iter : int
        Length of the default schedule.
    history : list of dict
        One record per cost evaluation, each with ``iteration`` and ``cost``.
    """

    name = "run"
    live_parameters: dict = {}
    annotation_kinds: tuple = ()
    #: Iterations between two records in ``history`` (the last one of every
    #: ``step`` call is always recorded).
    record_every = 1
    #: True once further iterations cannot change the embedding (the run
    #: stops early; changing the objective may clear it).
    converged = False

    # -- state ---------------------------------------------------------------
    @property
    def embedding(self):  # pragma: no cover - abstract
        """A copy of the current embedding, shape (n_samples, n_components)."""
        raise NotImplementedError

    @property
    def n_samples(self):
        return self.embedding.shape[0]

    @property
    def remaining(self):
        """Iterations left in the default schedule: what :meth:`run` would do.

        Runs whose schedule does not advance with every iteration (Mbed's,
        while λ is held) count them their own way here; callers that step a
        run in pieces, such as the Explorer's worker, size the pieces by it.
        """
        return max(0, self.n_iter - self.iteration)

    @property
    def done(self):
        """True once the default schedule (``n_iter`` iterations) is complete."""
        return self.iteration >= self.n_iter

    @property
    def membership(self):
        """Class probabilities per point, shape (n_samples, n_classes), or None."""
        return None

    @property
    def anchors(self):
        """Extra positions drawn apart from the points (for example class
        positions), shape (n_anchors, n_components), or None."""
        return None

    def get_params(self):
        """Current values of the live parameters (None: left to the method)."""
        return {name: getattr(self, name) for name in self.live_parameters}

    def params_in_effect(self):
        """The values the live parameters have now: as :meth:`get_params`, except
        that one left to the method (None there) has the value the method
        currently uses, or None while it uses none."""
        return self.get_params()

    def idle_params(self):
        """The live parameters that change nothing now, each with the reason (name ->
        text), such as a must-link weight while there are no must-links."""
        return {}

    # -- control -------------------------------------------------------------
    def step(self, n=1, callbacks=None, *, record_last=True):
        """Advance ``n`` iterations (fewer if a callback asks to stop).

        Parameters
        ----------
        n : int
        callbacks : callable or list of callables, optional
            Called as ``callback(run)`` after each iteration; True stops.
            Objects with ``on_start(run, n)`` / ``on_end(run)`` hear about
            the call's start and end too.
        record_last : bool, default True
            Record the state (and so evaluate the cost) after the call's last
            iteration even when the recording interval does not fall there.
            Callers that step in many short calls (the Explorer) pass False:
            the records then come every ``record_every`` iterations only, as
            in one long call, instead of a cost evaluation per call.

        Returns
        -------
        self
        """
        n = check_number(n, "n", low=0, integer=True)
        callbacks = as_list(callbacks)
        for cb in callbacks:
            if hasattr(cb, "on_start"):
                cb.on_start(self, n)
        try:
            self._advance(n, callbacks, record_last)
        finally:
            for cb in callbacks:
                if hasattr(cb, "on_end"):
                    cb.on_end(self)
        return self

    def _advance(self, n, callbacks, record_last=True):
        """Do up to ``n`` iterations, calling ``callbacks`` after each.

        The one loop of every iterative run: each iteration holds the kernel
        lock while the run moves (``_iterate``), counts, records (every
        ``record_every`` iterations and, with ``record_last``, after the last
        one of the call) and follows its schedule (``_after_iteration``). A
        converged run does nothing; a callback that asks to stop ends the
        call, recorded when ``record_last``.
        """
        if n > 0 and not self.history:
            with _config.KERNEL_LOCK:
                self._record({})
        for k in range(n):
            if self.converged:
                break
            with _config.KERNEL_LOCK:
                stats = self._iterate()
                self.iteration += 1
                recorded = ((record_last and k == n - 1)
                            or self.iteration % self.record_every == 0)
                if recorded:
                    self._record(stats)
                self._after_iteration()
            if callbacks and call_all(callbacks, self):
                if record_last and not recorded:
                    with _config.KERNEL_LOCK:
                        self._record(stats)
                break

    def _iterate(self):  # pragma: no cover - abstract
        """Move the embedding by one iteration; return a dict of its statistics
        for :meth:`_record` (may be empty)."""
        raise NotImplementedError

    def _record(self, stats):  # pragma: no cover - abstract
        """Append a record of the current state (with ``stats``) to ``history``."""
        raise NotImplementedError

    def _after_iteration(self):
        """Follow the schedule once an iteration is counted and recorded."""

    def check_params(self, params):
        """Validate live parameter values without changing anything.

        Returns
        -------
        dict
            Name -> validated value.

        Raises
        ------
        ValueError, TypeError
            For an unknown name or a value outside its range.
        """
        return check_live_params(self.live_parameters, params, self.name)

    def run(self, callbacks=None):
        """Run the rest of the default schedule (what ``fit`` does)."""
        return self.step(self.remaining, callbacks)

    def set_params(self, **params):  # pragma: no cover - abstract
        """Change live parameters and continue from the current embedding."""
        raise NotImplementedError

    def set_annotations(self, annotations=None, y=None):
        """Use these labels and constraints from the next iteration on.

        Runs whose method reads no annotations accept and ignore them.

        Parameters
        ----------
        annotations : Annotations, optional
        y : array-like of int, optional
            Labels with -1 for unlabelled points.

        Returns
        -------
        self
        """
        return self

    def prefer_even_steps(self):
        """The run is stepped live (the Explorer's worker calls this): work that
        would stall one iteration is spread over several where the run can, at
        the price of memory. Nothing here."""

    #: Whether :meth:`prepare_annotations` does work worth a thread of its own
    #: (the Explorer's worker then calls it in one while the run goes on).
    annotations_aside = False

    def prepare_annotations(self, annotations=None, y=None):
        """Work out new labels and constraints without changing the run.

        Of what :meth:`set_annotations` does, the part that may run in
        another thread while this run steps (one call at a time); the rest
        is left to the callable it returns. Here everything is left.

        Parameters
        ----------
        annotations : Annotations, optional
        y : array-like of int, optional

        Returns
        -------
        callable
            ``apply()``: what ``set_annotations(annotations, y)`` would have
            done, given what was worked out. Call it from the thread that steps
            the run, in the order the calls were made.
        """
        return lambda: self.set_annotations(annotations, y)
