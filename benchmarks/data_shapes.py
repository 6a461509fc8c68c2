"""Differently shaped benchmark data of any size, so that no default is tuned to one generator.

Each function returns ``(X, y)`` with ``n`` rows, float64 features and integer
labels (for 10-NN accuracy), and is deterministic for a given ``seed``:

* :func:`image_like`: high-dimensional images. scikit-learn's 8 x 8 digits
  upsampled to 28 x 28 (784 dimensions, MNIST's shape), each copy shifted by
  up to two pixels, with pixel noise;
* :func:`mixture`: a 50-D Gaussian mixture of 10 clusters with unequal sizes
  (Dirichlet shares) and widths (0.5 to 3, log-uniform), centres 10 apart on
  average;
* :func:`manifold`: a curved manifold, a Swiss roll (3-D) turned at random
  into 50 dimensions with noise; the label is the position along the roll in
  10 bins;
* :func:`rotated_objects`: many classes on rings. Each class is one digit
  image (upsampled to 32 x 32, 1024 dimensions) turned through a full circle
  in equal steps, like an object photographed from many angles.

``load(name)`` reads names of the form ``kind-n`` (``mixture-70000``).
"""

from __future__ import annotations

import numpy as np

KINDS = ("image_like", "mixture", "manifold", "rotated_objects")


def image_like(n, seed=0):
    """Digits upsampled to 28 x 28, shifted by up to 2 pixels, with noise of std 0.05."""
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    base, labels = load_digits(return_X_y=True)
    big = zoom(base.reshape(-1, 8, 8) / 16.0, (1, 3.5, 3.5), order=1)  # (1797, 28, 28)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(big), n)
    images = big[pick]
    shifts = rng.integers(-2, 3, size=(n, 2))
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            rows = np.flatnonzero((shifts[:, 0] == dy) & (shifts[:, 1] == dx))
            if len(rows) and (dy or dx):
                images[rows] = np.roll(images[rows], (dy, dx), axis=(1, 2))
    X = np.clip(images.reshape(n, 784) + 0.05 * rng.standard_normal((n, 784)), 0.0, 1.0)
    return X, labels[pick]


def mixture(n, seed=0, dim=50, clusters=10):
    """Gaussian clusters of unequal sizes and widths in ``dim`` dimensions."""
    rng = np.random.default_rng(seed)
    shares = rng.dirichlet(np.full(clusters, 2.0))
    y = rng.choice(clusters, size=n, p=shares)
    centres = rng.normal(scale=10.0 / np.sqrt(2.0), size=(clusters, dim))
    widths = np.exp(rng.uniform(np.log(0.5), np.log(3.0), clusters))
    X = centres[y] + widths[y, None] * rng.standard_normal((n, dim))
    return X, y


def manifold(n, seed=0, dim=50, noise=0.3):
    """A Swiss roll turned into ``dim`` dimensions; labels are 10 bins along the roll."""
    rng = np.random.default_rng(seed)
    t = 1.5 * np.pi * (1.0 + 2.0 * rng.random(n))
    height = 20.0 * rng.random(n)
    roll = np.column_stack([t * np.cos(t), height, t * np.sin(t)])
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, 3)))
    X = roll @ rotation.T + noise * rng.standard_normal((n, dim))
    y = np.minimum(((t - t.min()) / np.ptp(t) * 10).astype(int), 9)
    return X, y


def rotated_objects(n, seed=0, classes=20):
    """``classes`` digit images, each rotated through 360 degrees in ``n // classes`` steps."""
    from scipy.ndimage import rotate, zoom
    from sklearn.datasets import load_digits

    base, digit = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    # distinct images, spread over the ten digits as evenly as the count allows
    pick = np.concatenate([rng.permutation(np.flatnonzero(digit == d))[:classes // 10 + 1]
                           for d in range(10)])
    pick = pick[np.argsort(np.arange(pick.size) % (classes // 10 + 1), kind="stable")][:classes]
    images = np.pad(zoom(base[pick].reshape(-1, 8, 8) / 16.0, (1, 3, 3), order=1),
                    ((0, 0), (4, 4), (4, 4)))  # (classes, 32, 32): room to turn
    n_angles = n // classes
    X = np.empty((classes * n_angles, 1024))
    for c, image in enumerate(images):
        for a, angle in enumerate(np.arange(n_angles) * 360.0 / n_angles):
            X[c * n_angles + a] = rotate(image, angle, reshape=False, order=1).ravel()
    return X, np.repeat(np.arange(classes), n_angles)


def load(name):
    """``(X, y)`` for a name ``kind-n``, ``kind`` one of :data:`KINDS`."""
    kind, _, size = name.rpartition("-")
    if kind not in KINDS or not size.isdigit():
        raise ValueError(f"unknown data {name!r}; expected kind-n with kind in {KINDS}")
    return globals()[kind](int(size))
