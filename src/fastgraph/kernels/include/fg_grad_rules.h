/* Elementwise gradient rules compiled by both the small-array kernels (kernels/elementwise.pyx:
 * NumPy-style inner loops) and the fused-kernel VM (kernels/vm.pyx: block loops), written once so
 * the two cannot drift apart.
 * Each is the op's NumPy VJP (ops/elementwise.py) operation by operation, in the same rounding
 * order; includers compile them with FMA contraction off, so results are NumPy's bit for bit. */
#ifndef FASTGRAPH_GRAD_RULES_H
#define FASTGRAPH_GRAD_RULES_H
/* tanh_grad(t, g) = g * (1 - t * t), t = tanh(x) */
#define FG_TANH_GRAD(T, t, g) ((g) * ((T)1 - (t) * (t)))
/* sigmoid_grad(s, g) = g * s * (1 - s), s = sigmoid(x) */
#define FG_SIGMOID_GRAD(T, s, g) (((g) * (s)) * ((T)1 - (s)))
/* mul_greater(g, x, y) = g * (x > y), NumPy's g * (x > y): the mask cast to 1.0 / 0.0, one exact
   product (relu's gradient with y = 0).  isgreater: a quiet compare, so a NaN raises no flag
   NumPy would not. */
#define FG_MUL_GREATER(T, g, x, y) ((g) * (T)isgreater((x), (y)))
#endif
