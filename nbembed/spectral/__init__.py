"""Numerics of the semi-supervised spectral framework: graphs, costs, the
eigenproblem solver and the KPCA trick. The estimators live in
:mod:`nbembed.methods.spectral`."""
