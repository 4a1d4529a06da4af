"""pyjax.numpy: NumPy's API on pyjax arrays (thin re-exports of pyjax._src.numpy)."""
from pyjax._src.numpy.array_constructors import *  # noqa: F401,F403
from pyjax._src.numpy.creation import *  # noqa: F401,F403
from pyjax._src.numpy.ufuncs import *  # noqa: F401,F403
from pyjax._src.numpy.reductions import *  # noqa: F401,F403
from pyjax._src.numpy.manipulation import *  # noqa: F401,F403
from pyjax._src.numpy.linalg_ops import *  # noqa: F401,F403
from pyjax._src.numpy.sorting import *  # noqa: F401,F403
from pyjax._src.numpy.indexing import *  # noqa: F401,F403
from pyjax._src.numpy.dtypes_api import *  # noqa: F401,F403
from pyjax._src.numpy.constants import *  # noqa: F401,F403
from pyjax._src.numpy.setops import *  # noqa: F401,F403
from pyjax._src.numpy.statistics import *  # noqa: F401,F403
from pyjax._src.numpy.index_tricks import *  # noqa: F401,F403
from pyjax._src.numpy.polynomial import *  # noqa: F401,F403
from pyjax._src.numpy.windows import *  # noqa: F401,F403
from pyjax._src.numpy.numerical import *  # noqa: F401,F403
from pyjax._src.numpy.vectorize import *  # noqa: F401,F403
from pyjax._src.numpy.ufunc_objects import *  # noqa: F401,F403
from pyjax.numpy import linalg, fft  # noqa: F401,E402
from pyjax._src.numpy import array_methods as _array_methods  # attaches operators/methods

_array_methods.install()
