"""jax.scipy.special, part 2: exponential and sine/cosine integrals, Spence's function,
Dawson, Fresnel, Faddeeva (wofz), scaled erfc (erfcx) and Owen's T.

Same algorithms as JAX (Cephes rational approximations, Weideman's series for wofz, the
Cephes continued fraction and series for E_n, a 13-point quadrature for Owen's T) with
JAX's custom derivatives."""
from __future__ import annotations

from functools import partial

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.api_ad import custom_jvp
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.util import promote_args_inexact
from pyjax._src.scipy import _loops
from pyjax._src.scipy.special import (
    _c, _is_complex, _no_complex, _piecewise, _polyval, gammaln, promote_args_complex)
from pyjax._src.scipy import _custom
import pyjax.numpy as jnp

__all__ = ["dawsn", "erfcx", "exp1", "expi", "expn", "fresnel", "owens_t", "sici", "spence",
           "wofz"]


# --- Faddeeva function and erfcx ----------------------------------------------------------
_WOFZ_L = 4.756828460010884  # 2**(1/4) * sqrt(32 / sqrt(2))
_WOFZ_C = np.array([
    -1.3034426067909105e-12, 3.741183837373847e-12, 8.030427700497756e-12,
    -2.154359355749088e-11, -5.544244996323793e-11, 1.165824698850374e-10,
    4.1537441121999766e-10, -5.231020211492061e-10, -3.2080151339721323e-09,
    8.124886421653591e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
    4.401531731283225e-06, 6.821031944357515e-06, -2.1409619201999998e-05,
    -0.0001307544925457942, -0.00024532980270038237, 0.00039259136070109705,
    0.004519541105349309, 0.0190061557848455, 0.05730440352983728, 0.14060716226893755,
    0.2954445107150874, 0.5460139720639338, 0.9019254893648001, 1.345544169234545,
    1.8256696296324815, 2.2635372999002676, 2.5722534081245696])


def _wofz_upper_half(z):
  """Weideman's rational series for w(z), Im z >= 0."""
  re = lax.real(z)
  L = lax.complex(_c(re, _WOFZ_L), _c(re, 0.0))
  iz = lax.complex(lax.neg(lax.imag(z)), re)
  den = L - iz
  Z = (L + iz) / den
  p = _polyval(_WOFZ_C, Z)
  isp = lax.complex(_c(re, 1.0 / np.sqrt(np.pi)), _c(re, 0.0))
  return 2 * p / (den * den) + isp / den


@custom_jvp
def _wofz(z):
  z = jnp.asarray(z)
  upper = lax.ge(lax.imag(z), _c(lax.real(z), 0.0))
  w = _wofz_upper_half(lax.select(upper, z, lax.neg(z)))
  return lax.select(upper, w, 2 * lax.exp(lax.neg(z * z)) - w)


_custom.defjvps(_wofz, lambda g, ans, z: g * (lax.neg(2 * z * ans) + lax.complex(
    _c(lax.real(z), 0.0), _c(lax.real(z), 2.0 / np.sqrt(np.pi)))))


def wofz(z):
  """The Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)`` (complex output)."""
  z, = promote_args_complex("wofz", z)
  return _wofz(z)


def erfcx(x):
  """The scaled complementary error function ``exp(x**2) erfc(x)``."""
  x, = promote_args_inexact("erfcx", x)
  if _is_complex(x):
    return _wofz(lax.complex(lax.neg(lax.imag(x)), lax.real(x)))
  return _erfcx(x)


@custom_jvp
def _erfcx(x):
  x = jnp.asarray(x)
  if x.dtype == np.float64:
    return _erfcx_impl(x, 9)
  if x.dtype == np.float32:
    return _erfcx_impl(x, 5)
  return _erfcx_impl(x.astype(np.float32), 5).astype(x.dtype)


_custom.defjvps(_erfcx, lambda g, ans, x: g * (2 * x * ans - _c(x, 2.0 / np.sqrt(np.pi))))

_ERFCX_ASYMP = [7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875, 0.75,
                -0.5, 1.0]


def _erfcx_impl(x, nterms):
  big = x > _c(x, np.sqrt(np.log(float(dtypes.finfo(x.dtype).max))))
  sx = lax.select(big, lax.full_like(x, 1.0), x)
  direct = lax.exp(lax.square(sx)) * lax.erfc(sx)
  t = _c(x, 1.0) / lax.square(x)
  asymp = _polyval(_ERFCX_ASYMP[-nterms:], t) / (x * _c(x, np.sqrt(np.pi)))
  return lax.select(big, asymp, direct)


# --- Dawson's integral --------------------------------------------------------------------
_DAWSN_AN = [1.13681498971755972054E-11, 8.49262267667473811108E-10,
             1.94434204175553054283E-8, 9.53151741254484363489E-7, 3.07828309874913200438E-6,
             3.52513368520288738649E-4, -8.50149846724410912031E-4, 4.22618223005546594270E-2,
             -9.17480371773452345351E-2, 9.99999999999999994612E-1]
_DAWSN_AD = [2.40372073066762605484E-11, 1.48864681368493396752E-9,
             5.21265281010541664570E-8, 1.27258478273186970203E-6, 2.32490249820789513991E-5,
             3.25524741826057911661E-4, 3.48805814657162590916E-3, 2.79448531198828973716E-2,
             1.58874241960120565368E-1, 5.74918629489320327824E-1, 1.00000000000000000539E0]
_DAWSN_BN = [5.08955156417900903354E-1, -2.44754418142697847934E-1,
             9.41512335303534411857E-2, -2.18711255142039025206E-2, 3.66207612329569181322E-3,
             -4.23209114460388756528E-4, 3.59641304793896631888E-5, -2.14640351719968974225E-6,
             9.10010780076391431042E-8, -2.40274520828250956942E-9, 3.59233385440928410398E-11]
_DAWSN_BD = [1.00000000000000000000E0, -6.31839869873368190192E-1,
             2.36706788228248691528E-1, -5.31806367003223277662E-2, 8.48041718586295374409E-3,
             -9.47996768486665330168E-4, 7.81025592944552338085E-5, -4.55875153252442634831E-6,
             1.89100358111421846170E-7, -4.91324691331920606875E-9, 7.18466403235734541950E-11]
_DAWSN_CN = [-5.90592860534773254987E-1, 6.29235242724368800674E-1,
             -1.72858975380388136411E-1, 1.64837047825189632310E-2, -4.86827613020462700845E-4]
_DAWSN_CD = [1.00000000000000000000E0, -2.69820057197544900361E0, 1.73270799045947845857E0,
             -3.93708582281939493482E-1, 3.44278924041233391079E-2, -9.73655226040941223894E-4]


def dawsn(x):
  """Dawson's integral ``exp(-x**2) * int_0^x exp(t**2) dt``."""
  x, = promote_args_inexact("dawsn", x)
  _no_complex("dawsn", x)
  return _dawsn(x)


@custom_jvp
def _dawsn(x):
  x = jnp.asarray(x)
  if x.dtype in (np.float32, np.float64):
    return _dawsn_impl(x)
  return _dawsn_impl(x.astype(np.float32)).astype(x.dtype)


_custom.defjvps(_dawsn, lambda g, ans, x: g * (_c(x, 1.0) - _c(x, 2.0) * x * ans))


def _dawsn_impl(x):
  sign = jnp.sign(x)
  ax = lax.abs(x)
  one = lax.full_like(ax, 1.0)
  t = _c(x, 1.0) / lax.square(ax)
  r1 = ax < _c(x, 3.25)
  r2 = (ax >= _c(x, 3.25)) & (ax < _c(x, 6.25))
  r3 = ax >= _c(x, 6.25)
  a1 = lax.select(r1, ax, one)
  v1 = a1 * _polyval(_DAWSN_AN, lax.square(a1)) / _polyval(_DAWSN_AD, lax.square(a1))
  t2, a2 = lax.select(r2, t, lax.full_like(t, 1.0)), lax.select(r2, ax, one)
  v2 = _c(x, 0.5) / a2 * (_c(x, 1.0) + t2 * _polyval(_DAWSN_BN, t2) / _polyval(_DAWSN_BD, t2))
  t3, a3 = lax.select(r3, t, lax.full_like(t, 1.0)), lax.select(r3, ax, one)
  v3 = _c(x, 0.5) / a3 * (_c(x, 1.0) + t3 * _polyval(_DAWSN_CN, t3) / _polyval(_DAWSN_CD, t3))
  return sign * lax.select(r1, v1, lax.select(ax < _c(x, 6.25), v2, v3))


# --- exponential integrals ----------------------------------------------------------------
# Cephes' rational approximations of Ei(x) on (0, 2], (2, 4], ..., (32, 64].
_EXPINT_A1 = [-5.350447357812542947283e0, 2.185049168816613393830e2,
              -4.176572384826693777058e3, 5.541176756393557601232e4,
              -3.313381331178144034309e5, 1.592627163384945414220e6]
_EXPINT_B1 = [1.0, -5.250547959112862969197e1, 1.259616186786790571525e3,
              -1.756549581973534652631e4, 1.493062117002725991967e5,
              -7.294949239640527645655e5, 1.592627163384945429726e6]
_EXPINT_K = [
    ([1.981808503259689673238e-2, -1.271645625984917501326e0, -2.088160335681228318920e0,
      2.755544509187936721172e0, -4.409507048701600257171e-1, 4.665623805935891391017e-2,
      -1.545042679673485262580e-3, 7.059980605299617478514e-5],
     [1.0, 1.476498670914921440652e0, 5.629177174822436244827e-1, 1.699017897879307263248e-1,
      2.291647179034212017463e-2, 4.450150439728752875043e-3, 1.727439612206521482874e-4,
      3.953167195549672482304e-5]),
    ([-1.373215375871208729803e0, -7.084559133740838761406e-1, 1.580806855547941010501e0,
      -2.601500427425622944234e-1, 2.994674694113713763365e-2, -1.038086040188744005513e-3,
      4.371064420753005429514e-5, 2.141783679522602903795e-6],
     [1.0, 8.585231423622028380768e-1, 4.483285822873995129957e-1, 7.687932158124475434091e-2,
      2.449868241021887685904e-2, 8.832165941927796567926e-4, 4.590952299511353531215e-4,
      -4.729848351866523044863e-6, 2.665195537390710170105e-6]),
    ([-2.106934601691916512584e0, 1.732733869664688041885e0, -2.423619178935841904839e-1,
      2.322724180937565842585e-2, 2.372880440493179832059e-4, -8.343219561192552752335e-5,
      1.363408795605250394881e-5, -3.655412321999253963714e-7, 1.464941733975961318456e-8,
      6.176407863710360207074e-10],
     [1.0, -2.298062239901678075778e-1, 1.105077041474037862347e-1,
      -1.566542966630792353556e-2, 2.761106850817352773874e-3, -2.089148012284048449115e-4,
      1.708528938807675304186e-5, -4.459311796356686423199e-7, 1.394634930353847498145e-8,
      6.150865933977338354138e-10]),
    ([-2.458119367674020323359e-1, -1.483382253322077687183e-1, 7.248291795735551591813e-2,
      -1.348315687380940523823e-2, 1.342775069788636972294e-3, -7.942465637159712264564e-5,
      2.644179518984235952241e-6, -4.239473659313765177195e-8],
     [1.0, -1.044225908443871106315e-1, -2.676453128101402655055e-1, 9.695000254621984627876e-2,
      -1.601745692712991078208e-2, 1.496414899205908021882e-3, -8.462452563778485013756e-5,
      2.728938403476726394024e-6, -4.239462431819542051337e-8]),
    ([1.212561118105456670844e-1, -5.823133179043894485122e-1, 2.348887314557016779211e-1,
      -3.040034318113248237280e-2, 1.510082146865190661777e-3, -2.523137095499571377122e-5],
     [1.0, -1.002252150365854016662e0, 2.928709694872224144953e-1,
      -3.337004338674007801307e-2, 1.560544881127388842819e-3, -2.523137093603234562648e-5]),
    ([-7.657847078286127362028e-1, 6.886192415566705051750e-1, -2.132598113545206124553e-1,
      3.346107552384193813594e-2, -3.076541477344756050249e-3, 1.747119316454907477380e-4,
      -6.103711682274170530369e-6, 1.218032765428652199087e-7, -1.086076102793290233007e-9],
     [1.0, -1.888802868662308731041e0, 1.066691687211408896850e0, -2.751915982306380647738e-1,
      3.930852688233823569726e-2, -3.414684558602365085394e-3, 1.866844370703555398195e-4,
      -6.345146083130515357861e-6, 1.239754287483206878024e-7, -1.086076102793126632978e-9]),
]


def _expint_small(x):
  f = _polyval(_EXPINT_A1, x) / _polyval(_EXPINT_B1, x)
  return x * f + np.euler_gamma + jnp.log(x)


def _expint_k(k):
  A, B = _EXPINT_K[k]

  def f(x):
    one = _c(x, 1.0)
    w = one / x
    r = w * (_polyval(A, w) / _polyval(B, w)) + one
    return jnp.exp(x) * w * r
  return f


def _expi_pos(x):
  conds = [(_c(x, 0) < x) & (x <= _c(x, 2))] + [
      (_c(x, 2 ** i) < x) & (x <= _c(x, 2 ** (i + 1))) for i in range(1, 6)]
  return _piecewise(x, conds, [_expint_small] + [_expint_k(k) for k in range(6)])


@custom_jvp
@jit
def _expi(x):
  return _piecewise(x, [x < 0], [lambda x: -exp1(-x), _expi_pos])


@partial(_custom.defjvp, _expi)
@jit
def _expi_jvp(primals, tangents):
  (x,), (xd,) = primals, tangents
  return _expi(x), jnp.exp(x) / x * xd


def expi(x):
  """The exponential integral ``Ei(x)``."""
  x, = promote_args_inexact("expi", x)
  _no_complex("expi", x)
  return _expi(x)


def _expn_series(x, n, act):
  """E_n(x) for x <= 1 by the power series (Cephes)."""
  one, zero = _c(x, 1.0), _c(x, 0.0)
  eps = float(dtypes.finfo(x.dtype).eps)
  # psi(n) = -euler - log(x) + sum_{i=1}^{n-1} 1/i
  psi0 = -np.euler_gamma - jnp.log(x)
  i0 = jnp.ones_like(n)
  _, psi = _loops.masked_while(lambda s: act & (s[0] < n),
                               lambda s: (s[0] + 1, s[1] + one / s[0]), (i0, psi0))
  n1 = jnp.where(n == 1, one + one, n)
  state = dict(xk=zero * x, yk=one + zero * x, pk=one - n,
               ans=jnp.where(n == 1, zero, one / (one - n1)), t=jnp.full_like(x, np.inf))
  z = -x

  def body(d):
    d = dict(d)
    d["xk"] = d["xk"] + one
    d["yk"] = d["yk"] * (z / d["xk"])
    d["pk"] = d["pk"] + one
    d["ans"] = d["ans"] + jnp.where(d["pk"] != zero, d["yk"] / d["pk"], zero)
    d["t"] = jnp.where(d["ans"] != zero, abs(d["yk"] / d["ans"]), one)
    return d

  d = _loops.masked_while(lambda d: act & (x > 0) & (d["t"] > eps), body, state)
  return z ** (n - 1) * psi / jnp.exp(gammaln(n)) - d["ans"]


def _expn_cfrac(x, n, act):
  """E_n(x) for x > 1 by the continued fraction (Cephes)."""
  big = _c(x, 1.44115188075855872e17)
  one, zero = _c(x, 1.0), _c(x, 0.0)
  eps = float(dtypes.finfo(x.dtype).eps)
  d = dict(k=jnp.ones_like(n), pkm2=jnp.ones_like(x), qkm2=x, pkm1=jnp.ones_like(x),
           qkm1=x + n, ans=one / (x + n), t=jnp.full_like(x, np.inf), r=jnp.zeros_like(x))

  def body(d):
    d = dict(d)
    k = d["k"] + 1
    d["k"] = k
    odd = k % 2 == 1
    yk = jnp.where(odd, one, x)
    xk = jnp.where(odd, n + (k - 1) / 2, k / 2)
    pk = d["pkm1"] * yk + d["pkm2"] * xk
    qk = d["qkm1"] * yk + d["qkm2"] * xk
    nz = qk != zero
    r = jnp.where(nz, pk / qk, d["r"])
    d["r"] = r
    d["t"] = jnp.where(nz, abs((d["ans"] - r) / r), one)
    d["ans"] = jnp.where(nz, r, d["ans"])
    d["pkm2"], d["pkm1"], d["qkm2"], d["qkm1"] = d["pkm1"], pk, d["qkm1"], qk
    scale = abs(pk) > big
    for key in ("pkm1", "pkm2", "qkm1", "qkm2"):
      d[key] = jnp.where(scale, d[key] / big, d[key])
    return d

  d = _loops.masked_while(lambda d: act & (x > 0) & (d["t"] > eps), body, d)
  return d["ans"] * jnp.exp(-x)


def _expn_large_n(x, n):
  one = _c(x, 1.0)
  xk = x + n
  yk = one / (xk * xk)
  ans = yk * n * (_c(x, 6) * x * x - _c(x, 8) * n * x + n * n)
  ans = yk * (ans + n * (n - _c(x, 2) * x))
  ans = yk * (ans + n)
  return (ans + one) * jnp.exp(-x) / xk


@partial(custom_jvp, nondiff_argnums=(0,))
def _expn(n, x):
  n, x = jnp.broadcast_arrays(jnp.asarray(n), jnp.asarray(x))
  one, zero = _c(x, 1), _c(x, 0)
  bad = (n < 0) | (x < zero)
  x0_small = (x == zero) & (n < 2)
  x0_big = (x == zero) & (n >= 2)
  n0 = (n == 0) & (x >= zero)
  large_n = n >= 5000
  cf = x > one
  rest = ~(bad | x0_small | x0_big | n0 | large_n | cf)
  safe_x = jnp.where(x > 0, x, one)
  n1 = jnp.where(n == 1, n + n, n)
  series = _expn_series(jnp.where(rest, x, one * 0.5), jnp.where(rest, n, one), rest)
  frac_act = cf & ~(bad | x0_small | x0_big | n0 | large_n)
  frac = _expn_cfrac(jnp.where(frac_act, x, one * 2), jnp.where(frac_act, n, one), frac_act)
  # piecewise: later conditions win (NumPy/JAX semantics)
  out = series
  out = jnp.where(cf, frac, out)
  out = jnp.where(large_n, _expn_large_n(x, n), out)
  out = jnp.where(n0, jnp.exp(-safe_x) / safe_x, out)
  out = jnp.where(x0_big, one / n1, out)
  out = jnp.where(x0_small, np.inf, out)
  out = jnp.where(bad, np.nan, out)
  return out.astype(x.dtype)


@partial(_custom.defjvp, _expn)
def _expn_jvp(n, primals, tangents):
  (x,), (xd,) = primals, tangents
  return _expn(n, x), lax.mul(lax.neg(xd), _expn(lax.sub(n, _c(n, 1)), x))


def expn(n, x):
  """The generalized exponential integral ``E_n(x) = int_1^inf exp(-x t) / t**n dt``."""
  n, x = promote_args_inexact("expn", n, x)
  _no_complex("expn", x)
  return _expn(n, x)


def exp1(x):
  """The exponential integral ``E_1(x)``."""
  x, = promote_args_inexact("exp1", x)
  _no_complex("exp1", x)
  return _expn(_c(x, 1), x)


# --- sine and cosine integrals ------------------------------------------------------------
_SICI_SN = [-8.39167827910303881427E-11, 4.62591714427012837309E-8, -9.75759303843632795789E-6,
            9.76945438170435310816E-4, -4.13470316229406538752E-2, 1.00000000000000000302E0]
_SICI_SD = [2.03269266195951942049E-12, 1.27997891179943299903E-9, 4.41827842801218905784E-7,
            9.96412122043875552487E-5, 1.42085239326149893930E-2, 9.99999999999999996984E-1]
_SICI_CN = [2.02524002389102268789E-11, -1.35249504915790756375E-8, 3.59325051419993077021E-6,
            -4.74007206873407909465E-4, 2.89159652607555242092E-2, -1.00000000000000000080E0]
_SICI_CD = [4.07746040061880559506E-12, 3.06780997581887812692E-9, 1.23210355685883423679E-6,
            3.17442024775032769882E-4, 5.10028056236446052392E-2, 4.00000000000000000080E0]
_SICI_FN4 = [4.23612862892216586994E0, 5.45937717161812843388E0, 1.62083287701538329132E0,
             1.67006611831323023771E-1, 6.81020132472518137426E-3, 1.08936580650328664411E-4,
             5.48900223421373614008E-7]
_SICI_FD4 = [1, 8.16496634205391016773E0, 7.30828822505564552187E0, 1.86792257950184183883E0,
             1.78792052963149907262E-1, 7.01710668322789753610E-3, 1.10034357153915731354E-4,
             5.48900252756255700982E-7]
_SICI_GN4 = [8.71001698973114191777E-2, 6.11379109952219284151E-1, 3.97180296392337498885E-1,
             7.48527737628469092119E-2, 5.38868681462177273157E-3, 1.61999794598934024525E-4,
             1.97963874140963632189E-6, 7.82579040744090311069E-9]
_SICI_GD4 = [1, 1.64402202413355338886E0, 6.66296701268987968381E-1, 9.88771761277688796203E-2,
             6.22396345441768420760E-3, 1.73221081474177119497E-4, 2.02659182086343991969E-6,
             7.82579218933534490868E-9]
_SICI_FN8 = [4.55880873470465315206E-1, 7.13715274100146711374E-1, 1.60300158222319456320E-1,
             1.16064229408124407915E-2, 3.49556442447859055605E-4, 4.86215430826454749482E-6,
             3.20092790091004902806E-8, 9.41779576128512936592E-11, 9.70507110881952024631E-14]
_SICI_FD8 = [1.0, 9.17463611873684053703E-1, 1.78685545332074536321E-1,
             1.22253594771971293032E-2, 3.58696481881851580297E-4, 4.92435064317881464393E-6,
             3.21956939101046018377E-8, 9.43720590350276732376E-11, 9.70507110881952025725E-14]
_SICI_GN8 = [6.97359953443276214934E-1, 3.30410979305632063225E-1, 3.84878767649974295920E-2,
             1.71718239052347903558E-3, 3.48941165502279436777E-5, 3.47131167084116673800E-7,
             1.70404452782044526189E-9, 3.85945925430276600453E-12, 3.14040098946363334640E-15]
_SICI_GD8 = [1.0, 1.68548898811011640017E0, 4.87852258695304967486E-1,
             4.67913194259625806320E-2, 1.90284426674399523638E-3, 3.68475504442561108162E-5,
             3.57043223443740838771E-7, 1.72693748966316146736E-9, 3.87830166023954706752E-12,
             3.14040098946363335242E-15]


def _sici_series(x):
  t = x * x
  si = x * _polyval(_SICI_SN, t) / _polyval(_SICI_SD, t)
  ci = np.euler_gamma + jnp.log(x) + t * _polyval(_SICI_CN, t) / _polyval(_SICI_CD, t)
  return jnp.where(x == 0, 0.0, si), jnp.where(x == 0, -np.inf, ci)


def _sici_asymptotic(x):
  s, c = jnp.sin(x), jnp.cos(x)
  z = 1.0 / (x * x)
  f4 = _polyval(_SICI_FN4, z) / (x * _polyval(_SICI_FD4, z))
  g4 = z * _polyval(_SICI_GN4, z) / _polyval(_SICI_GD4, z)
  f8 = _polyval(_SICI_FN8, z) / (x * _polyval(_SICI_FD8, z))
  g8 = z * _polyval(_SICI_GN8, z) / _polyval(_SICI_GD8, z)
  small = x < 8.0
  f = jnp.where(small, f4, f8)
  g = jnp.where(small, g4, g8)
  return np.pi / 2 - f * c - g * s, f * s - g * c


def _sici_far(x):
  si = np.pi / 2 - jnp.cos(x) / x
  ci = jnp.sin(x) / x
  inf = jnp.isposinf(x)
  return jnp.where(inf, np.pi / 2, si), jnp.where(inf, 0.0, ci)


@custom_jvp
@jit
def _sici(x):
  ax = jnp.abs(x)
  s1, c1 = _sici_series(ax)
  s2, c2 = _sici_asymptotic(ax)
  s3, c3 = _sici_far(ax)
  near = ax <= 4
  mid = (ax > 4) & (ax <= 1e9)
  si = jnp.sign(x) * jnp.select([near, mid], [s1, s2], s3)
  ci = jnp.where(jnp.isneginf(x), np.nan, jnp.select([near, mid], [c1, c2], c3))
  return si, ci


@partial(_custom.defjvp, _sici)
@jit
def _sici_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _sici(x), (jnp.sinc(x / np.pi) * t, jnp.cos(x) / x * t)


def sici(x):
  """The sine and cosine integrals ``(Si(x), Ci(x))``."""
  x, = promote_args_inexact("sici", x)
  if _is_complex(x):
    raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype {x.dtype}.")
  return _sici(x)


# --- Spence's function --------------------------------------------------------------------
_SPENCE_A = [4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0]
_SPENCE_B = [6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1]


def _spence_core(x):
  over2 = x > 2.0
  x = jnp.where(over2, 1.0 / x, x)
  over15 = x > 1.5
  under05 = x < 0.5
  flip = over2 | over15
  w = jnp.where(over15, 1.0 / x - 1.0, jnp.where(under05, -x, x - 1.0))
  y = -w * _polyval(_SPENCE_A, w) / _polyval(_SPENCE_B, w)
  y = jnp.where(under05, np.pi ** 2 / 6.0 - jnp.log(x) * jnp.log(1.0 - x) - y, y)
  return jnp.where(flip, -0.5 * jnp.log(x) ** 2 - y, y)


def spence(x):
  """Spence's function (the dilogarithm ``Li2(1 - x)``); NaN for ``x < 0``."""
  x = jnp.asarray(x)
  if x.dtype not in (np.float32, np.float64):
    raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported types.")
  return _piecewise(x, [x < 0.0, x == 1.0, x == 0.0], [np.nan, 0, np.pi ** 2 / 6, _spence_core])


# --- Fresnel integrals --------------------------------------------------------------------
_FRESNEL32 = dict(
    sn=[+1.647629463788700e-9, -1.522754752581096e-7, +8.424748808502400e-6,
        -3.120693124703272e-4, +7.244727626597022e-3, -9.228055941124598e-2,
        +5.235987735681432e-1],
    cn=[+1.416802502367354e-8, -1.157231412229871e-6, +5.387223446683264e-5,
        -1.604381798862293e-3, +2.818489036795073e-2, -2.467398198317899e-1,
        +9.999999760004487e-1],
    fn=[-1.903009855649792e12, +1.355942388050252e11, -4.158143148511033e9,
        +7.343848463587323e7, -8.732356681548485e5, +8.560515466275470e3,
        -1.032877601091159e2, +2.999401847870011e0],
    gn=[-1.860843997624650e11, +1.278350673393208e10, -3.779387713202229e8,
        +6.492611570598858e6, -7.787789623358162e4, +8.602931494734327e2,
        -1.493439396592284e1, +9.999841934744914e-1])
_FRESNEL64 = dict(
    sn=[-2.99181919401019853726e3, +7.08840045257738576863e5, -6.29741486205862506537e7,
        +2.54890880573376359104e9, -4.42979518059697779103e10, +3.18016297876567817986e11],
    sd=[+1.0, +2.81376268889994315696e2, +4.55847810806532581675e4,
        +5.17343888770096400730e6, +4.19320245898111231129e8, +2.24411795645340920940e10,
        +6.07366389490084639049e11],
    cn=[-4.98843114573573548651e-8, +9.50428062829859605134e-6, -6.45191435683965050962e-4,
        +1.88843319396703850064e-2, -2.05525900955013891793e-1, +9.99999999999999998822e-1],
    cd=[+3.99982968972495980367e-12, +9.15439215774657478799e-10, +1.25001862479598821474e-7,
        +1.22262789024179030997e-5, +8.68029542941784300606e-4, +4.12142090722199792936e-2,
        +1.00000000000000000118e0],
    fn=[+4.21543555043677546506e-1, +1.43407919780758885261e-1, +1.15220955073585758835e-2,
        +3.45017939782574027900e-4, +4.63613749287867322088e-6, +3.05568983790257605827e-8,
        +1.02304514164907233465e-10, +1.72010743268161828879e-13, +1.34283276233062758925e-16,
        +3.76329711269987889006e-20],
    fd=[+1.0, +7.51586398353378947175e-1, +1.16888925859191382142e-1,
        +6.44051526508858611005e-3, +1.55934409164153020873e-4, +1.84627567348930545870e-6,
        +1.12699224763999035261e-8, +3.60140029589371370404e-11, +5.88754533621578410010e-14,
        +4.52001434074129701496e-17, +1.25443237090011264384e-20],
    gn=[+5.04442073643383265887e-1, +1.97102833525523411709e-1, +1.87648584092575249293e-2,
        +6.84079380915393090172e-4, +1.15138826111884280931e-5, +9.82852443688422223854e-8,
        +4.45344415861750144738e-10, +1.08268041139020870318e-12, +1.37555460633261799868e-15,
        +8.36354435630677421531e-19, +1.86958710162783235106e-22],
    gd=[+1.0, +1.47495759925128324529e0, +3.37748989120019970451e-1,
        +2.53603741420338795122e-2, +8.14679107184306179049e-4, +1.27545075667729118702e-5,
        +1.04314589657571990585e-7, +4.60680728146520428211e-10, +1.10273215066240270757e-12,
        +1.38796531259578871258e-15, +8.39158816283118707363e-19, +1.86958710162783236342e-22])


@jit
def _sincospi_half_sq(x):
  """``(sin(pi x**2 / 2), cos(pi x**2 / 2))`` with the argument reduced exactly mod 2."""
  x = jnp.abs(x)
  s = jnp.fmod(x, 2.0)
  r = jnp.fmod(s * (x - s / 2), 2.0)
  sinpi = jnp.where(r < 0.5, jnp.sin(np.pi * r),
                    jnp.where(r > 1.5, jnp.sin(np.pi * (r - 2.0)), -jnp.sin(np.pi * (r - 1.0))))
  cospi = jnp.where(r == 0.5, 0.0,
                    jnp.where(r < 1.0, -jnp.sin(np.pi * (r - 0.5)), jnp.sin(np.pi * (r - 1.5))))
  return sinpi, cospi


@custom_jvp
def fresnel(x):
  """The Fresnel integrals ``(S(x), C(x))`` (Cephes; half types computed in float32)."""
  xa, = promote_args_inexact("fresnel", x)
  out_dtype = xa.dtype
  if _is_complex(xa):
    raise NotImplementedError("Support for complex-valued inputs is not implemented yet.")
  if xa.dtype in (np.float32, np.float16, dtypes.bfloat16):
    xa = xa.astype(np.float32)
  elif xa.dtype != np.float64:
    raise NotImplementedError(f"Support for {xa.dtype} dtype is not implemented yet.")
  single = xa.dtype == np.float32
  K = _FRESNEL32 if single else _FRESNEL64
  x = jnp.abs(xa)
  x2 = x * x
  t = x2 * x2
  if single:
    s_small = x * x2 * _polyval(K["sn"], t)
    c_small = x * _polyval(K["cn"], t)
  else:
    s_small = x * x2 * _polyval(K["sn"], t) / _polyval(K["sd"], t)
    c_small = x * _polyval(K["cn"], t) / _polyval(K["cd"], t)
  sinpi, cospi = _sincospi_half_sq(x)
  if single:
    c_large = s_large = 0.5
  else:
    c_large = 0.5 + 1 / (np.pi * x) * sinpi
    s_large = 0.5 - 1 / (np.pi * x) * cospi
  t = np.pi * x2
  u = 1.0 / (t * t)
  t = 1.0 / t
  if single:
    f = 1.0 - u * _polyval(K["fn"], u)
    g = t * _polyval(K["gn"], u)
  else:
    f = 1.0 - u * _polyval(K["fn"], u) / _polyval(K["fd"], u)
    g = t * _polyval(K["gn"], u) / _polyval(K["gd"], u)
  t = np.pi * x
  c_mid = 0.5 + (f * sinpi - g * cospi) / t
  s_mid = 0.5 - (f * cospi + g * sinpi) / t
  inf = jnp.isinf(xa)
  small = x2 < 2.5625
  large = x > 36974.0
  s = jnp.where(inf, 0.5, jnp.where(small, s_small, jnp.where(large, s_large, s_mid)))
  c = jnp.where(inf, 0.5, jnp.where(small, c_small, jnp.where(large, c_large, c_mid)))
  neg = xa < 0.0
  s = jnp.where(neg, -s, s)
  c = jnp.where(neg, -c, c)
  if out_dtype != xa.dtype:
    s, c = s.astype(out_dtype), c.astype(out_dtype)
  return s, c


@partial(_custom.defjvp, fresnel)
def _fresnel_jvp(primals, tangents):
  (x,), (xd,) = primals, tangents
  sinpi, cospi = _sincospi_half_sq(x)
  return fresnel(x), (sinpi * xd, cospi * xd)


# --- Owen's T -----------------------------------------------------------------------------
_OWENS_T_PTS = np.array([
    0.0035082039676451716, 0.031279042338030756, 0.08526682628321945, 0.16245071730812277,
    0.25851196049125436, 0.3680755384069753, 0.485010929056047, 0.6027751415261857,
    0.7147788421775323, 0.814755109887601, 0.8971102975594897, 0.9572380808594426,
    0.991788329746297])
_OWENS_T_WTS = np.array([
    0.018831438115323503, 0.01856708624397765, 0.018042093461223385, 0.017263829606398752,
    0.016243219975989858, 0.014994592034116705, 0.013535474469662087, 0.011886351605820165,
    0.010070377242777432, 0.008113054574229958, 0.006041900952847024, 0.0038862217010742057,
    0.001679303108454609])


def _owens_t_quad(h, a):
  pts = jnp.expand_dims(_OWENS_T_PTS, tuple(range(a.ndim)))
  r = jnp.square(a)[..., None] * pts
  f = jnp.exp(-0.5 * jnp.square(h)[..., None] * (1.0 + r)) / (1.0 + r)
  return a * (f @ _OWENS_T_WTS)


@custom_jvp
def _owens_t(h, a):
  h, a = jnp.asarray(h), jnp.asarray(a)
  h = jnp.abs(h)
  aa = jnp.abs(a)
  rt2 = _c(h, np.sqrt(2))
  hn = h / rt2
  ma = jnp.where(aa <= 1.0, aa, jnp.reciprocal(aa))
  mh = jnp.where(aa <= 1.0, h, aa * h)
  out = _owens_t_quad(mh, ma)
  out = jnp.where(mh == 0.0, jnp.arctan(ma) / (2 * np.pi), out)
  out = jnp.where(ma == 1.0, 0.125 * lax.erfc(-mh / rt2) * lax.erfc(mh / rt2), out)
  nh = lax.erfc(hn)
  nah = lax.erfc(aa * hn)
  out = jnp.where(aa > 1.0,
                  jnp.where(aa * h <= 0.67,
                            0.25 - 0.25 * lax.erf(hn) * lax.erf(aa * hn) - out,
                            0.25 * (nh + nah - nh * nah) - out),
                  out)
  out = lax.sign(a) * out
  return jnp.where(jnp.isnan(a) | jnp.isnan(h), jnp.full_like(out, np.nan), out)


@partial(_custom.defjvp, _owens_t)
def _owens_t_jvp(primals, tangents):
  (h, a), (dh, da) = primals, tangents
  out = _owens_t(h, a)
  rt2 = _c(h, np.sqrt(2))
  d_h = (-lax.exp(-0.5 * lax.square(h)) * lax.erf(a * h / rt2)
         / (2.0 * _c(h, np.sqrt(2.0 * np.pi))))
  d_a = lax.exp(-0.5 * (lax.square(a) + 1.0) * lax.square(h)) / (2.0 * np.pi
                                                                  * (lax.square(a) + 1.0))
  return out, (d_h * dh + d_a * da).astype(out.dtype)


def owens_t(h, a):
  """Owen's T function ``T(h, a)``."""
  h, a = promote_args_inexact("owens_t", h, a)
  return _owens_t(h, a)
