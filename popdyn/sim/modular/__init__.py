"""Training the k-input modular-addition models in torch ([Shi24] Ch. 4, App. C.10.1), one module per problem class.

- :mod:`popdyn.sim.modular.network`: ``simulate`` of :class:`popdyn.models.modular.Problem` (the network (4.2))
  and its batched ``logits``.
- :mod:`popdyn.sim.modular.transformer`: ``simulate`` of :class:`popdyn.models.modular.TransformerProblem` and its
  batched ``forward``.
- :mod:`popdyn.sim.modular._training`: the training protocol both share (split, optimizer with warm-up,
  minibatch epochs, recorded steps).

``popdyn.simulate`` imports the module it needs (named in ``popdyn/models/modular/predict.py``).
"""
