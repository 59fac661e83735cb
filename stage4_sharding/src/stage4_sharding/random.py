"""``jax.random``: stage 3's, with ``out_sharding=`` on the samplers (replicated otherwise).

Example:
    >>> import stage4_sharding as jax
    >>> from stage4_sharding.sharding import NamedSharding, P
    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> x = jax.random.normal(jax.random.key(0), (16,), out_sharding=NamedSharding(mesh, P("data")))
    >>> print(jax.typeof(x))
    float32[16@data]
"""

from stage3_vmap.random import *  # noqa: F403

from stage3_vmap import random as _stage3

from .out_sharding import with_out_sharding

bits = with_out_sharding(_stage3.bits)
uniform = with_out_sharding(_stage3.uniform)
normal = with_out_sharding(_stage3.normal)
bernoulli = with_out_sharding(_stage3.bernoulli)
randint = with_out_sharding(_stage3.randint)
gumbel = with_out_sharding(_stage3.gumbel)
permutation = with_out_sharding(_stage3.permutation)
categorical = with_out_sharding(_stage3.categorical)
# The distributions of stage 1's random_distributions.py that take ``out_sharding`` in JAX.
beta = with_out_sharding(_stage3.beta)
ball = with_out_sharding(_stage3.ball)
cauchy = with_out_sharding(_stage3.cauchy)
chisquare = with_out_sharding(_stage3.chisquare)
dirichlet = with_out_sharding(_stage3.dirichlet)
exponential = with_out_sharding(_stage3.exponential)
f = with_out_sharding(_stage3.f)
gamma = with_out_sharding(_stage3.gamma)
geometric = with_out_sharding(_stage3.geometric)
generalized_normal = with_out_sharding(_stage3.generalized_normal)
laplace = with_out_sharding(_stage3.laplace)
loggamma = with_out_sharding(_stage3.loggamma)
logistic = with_out_sharding(_stage3.logistic)
lognormal = with_out_sharding(_stage3.lognormal)
maxwell = with_out_sharding(_stage3.maxwell)
multivariate_normal = with_out_sharding(_stage3.multivariate_normal)
orthogonal = with_out_sharding(_stage3.orthogonal)
pareto = with_out_sharding(_stage3.pareto)
poisson = with_out_sharding(_stage3.poisson)
rademacher = with_out_sharding(_stage3.rademacher)
rayleigh = with_out_sharding(_stage3.rayleigh)
t = with_out_sharding(_stage3.t)
truncated_normal = with_out_sharding(_stage3.truncated_normal)
triangular = with_out_sharding(_stage3.triangular)
wald = with_out_sharding(_stage3.wald)
