"""Soft committee machines trained by online SGD: the Saad-Solla / Goldt overlap ODE for any activation.

Setting: x ~ N(0, I_d); student fields lambda_k = J_k.x (k <= K), teacher fields nu_n = B_n.x (n <= M),
T = B B^T (``teacher_overlap``); prediction sum_k v_k g(lambda_k), teacher sum_n v*_n g(nu_n) + sigma zeta; SGD on
the squared error / 2 with step eta/d on J and eta_v/d on v (the run options ``lr``, ``lr_v``; weight decay
wd = ``weight_decay`` on both layers, at each layer's step); time t = steps/d; order parameters Q = J J^T, R = J B^T;
eg = E[(student - noise-free teacher)^2]/2. Saad & Solla's activation is g(x) = erf(x/sqrt 2), i.e.
``activations.get("erf").rescaled(1/sqrt(2))`` (``Problem.saad_solla``); the name "erf" is popdyn's plain erf.

Modules: ``problem``, ``integrals`` (I2, I3, I4, J2), ``ode`` (drift, ODE, plateau, escape time) and
``predict`` (registers :func:`popdyn.predict`).
"""
from .integrals import Integrals, integrals
from .ode import drift, escape_time, generalisation_error, ode, plateau
from .problem import Problem
from .predict import check_dimension, initial_overlaps

__all__ = ["Problem", "Integrals", "integrals", "drift", "generalisation_error", "ode", "plateau", "escape_time",
           "initial_overlaps", "check_dimension"]
