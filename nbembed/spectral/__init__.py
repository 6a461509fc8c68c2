"""Numerics of the semi-supervised spectral framework: costs, the eigenproblem
solver and the KPCA trick. The graphs the costs are built from live in
:mod:`nbembed.affinity.knn_graphs` and :mod:`nbembed.affinity.label_graphs`;
the estimators in :mod:`nbembed.methods.spectral` and
:mod:`nbembed.methods.spectral_presets`."""
