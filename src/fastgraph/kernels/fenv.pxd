# The floating-point exception flags of <fenv.h>, declared once.  Loops that must behave like
# NumPy's ufuncs (which report these after each call, as np.errstate says) clear them before a
# loop and test them after, handing the call back to NumPy when one was raised:
#     from fastgraph.kernels.fenv cimport fetestexcept, feclearexcept, FE_INVALID, ...
cdef extern from "<fenv.h>" nogil:
    int fetestexcept(int excepts)
    int feclearexcept(int excepts)
    int FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID
