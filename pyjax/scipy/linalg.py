"""pyjax.scipy.linalg (thin re-exports of pyjax._src.scipy.linalg*)."""
from pyjax._src.scipy.linalg import (  # noqa: F401
    block_diag, cho_factor, cho_solve, cholesky, det, eigh, expm, expm_frechet, inv, lu,
    lu_factor, lu_solve, qr, qr_multiply, schur, solve, solve_triangular, svd)
from pyjax._src.scipy.linalg_funcs import (  # noqa: F401
    eigh_tridiagonal, funm, hessenberg, polar, rsf2csf, solve_sylvester, sqrtm)
from pyjax._src.scipy.linalg_special import (  # noqa: F401
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard,
    hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz)
