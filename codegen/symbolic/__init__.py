"""Symbolic maths over the model, as CasADi expressions: rigid and elastic dynamics, base parameters
and the regressor, Fourier excitation, contact, the closed-loop simulator's expressions."""
