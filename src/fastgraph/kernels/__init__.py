"""fastgraph's compiled kernels: extension modules that see only arrays and raw buffers.

=================  ==========================================================================
``vm``             the fused-kernel VM: a block interpreter for register programs
``elementwise``    an op's inner loop called directly on small float arrays, the VJP building
                   blocks' loops, and the column sum of bias gradients
``softmax``        softmax, log_softmax and cross-entropy row loops
``blas``           the BLAS calls NumPy's API cannot make (scaled gemm, axpy update, gemm with beta = 1)
``alloc``          the caching data allocator installed while a compiled plan runs
``toposort``       topological sort over CSR arrays (the tape walker's and the planner's)
``update``         in-place parameter updates of the eager optimizers
``openmp``         build facts about OpenMP
=================  ==========================================================================

Their C lives in ``include/`` (``fg_*.h``): the VM's opcode list (``fg_opcodes.h``), its maths
and loops per instruction set, and the helpers every module shares.  They import no other
fastgraph module: policy lives in the layers above, which import these.
"""
