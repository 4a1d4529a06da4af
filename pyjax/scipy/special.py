"""pyjax.scipy.special (thin re-exports of pyjax._src.scipy.special*)."""
from pyjax._src.scipy.special import (  # noqa: F401
    beta, betainc, betaln, boxcox, boxcox1p, comb, digamma, entr, erf, erfc, erfinv, expit,
    factorial, gamma, gammainc, gammaincc, gammaln, gammasgn, i0, i0e, i1, i1e, kl_div,
    log_ndtr, log_softmax, loggamma, logit, logsumexp, multigammaln, ndtr, ndtri, poch,
    polygamma, rel_entr, softmax, xlog1py, xlogy, zeta)
from pyjax._src.scipy.special_expint import (  # noqa: F401
    dawsn, erfcx, exp1, expi, expn, fresnel, owens_t, sici, spence, wofz)
from pyjax._src.scipy.special_hyp import (  # noqa: F401
    bernoulli, bessel_jn, hyp1f1, hyp2f1, sph_harm_y)
