"""fastgraph as a drop-in for HIPS autograd: autograd-style scripts run unchanged but for their
import lines, and give autograd's values and gradients.

Each script below is written for autograd (``import autograd.numpy as np``, ``from autograd
import grad``, ``import autograd.numpy.random as npr``, ``from autograd.scipy.special import
...``), in the style of autograd's README and examples, and ends by setting ``result``.  It runs
once as written and once with only its import lines changed to fastgraph's (``fastgraph.numpy``,
``from fastgraph import``, ``fastgraph.scipy.special``), as a user would change them; the two
results must have the same structure (list/tuple/dict), shapes and dtypes, and values to 1e-12
(relative to each array's largest value: the VJP rules are the same derivatives written
differently, e.g. ``d(a/b)/db`` as ``-g * ans / b`` against autograd's ``-g * a / b**2``, which
rounds differently and shows in high derivatives).

Differences kept on purpose (docs/architecture.md) are not exercised here: ``clip``'s gradient at
a bound (1 here, as PyTorch; autograd gives 0), ``std``'s at zero spread (0; autograd NaN),
``prod`` with zeros (exact; autograd NaN), integer inputs (promoted; autograd refuses them).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

autograd = pytest.importorskip("autograd")

import fastgraph as fg  # noqa: E402
import fastgraph.numpy as fnp  # noqa: E402

SCRIPTS: dict[str, str] = {}

SCRIPTS['tanh_derivatives'] = """
import autograd.numpy as np
from autograd import elementwise_grad as egrad

def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)

x = np.linspace(-7, 7, 200)
d1 = egrad(tanh)
d2 = egrad(egrad(tanh))
d3 = egrad(egrad(egrad(tanh)))
d4 = egrad(egrad(egrad(egrad(tanh))))
result = [tanh(x), d1(x), d2(x), d3(x), d4(x), egrad(np.tanh)(x), egrad(egrad(np.tanh))(x)]
"""

SCRIPTS['logistic_regression'] = """
import autograd.numpy as np
from autograd import grad

def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.) + 1)

def logistic_predictions(weights, inputs):
    return sigmoid(np.dot(inputs, weights))

def training_loss(weights):
    preds = logistic_predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))

inputs = np.array([[0.52, 1.12,  0.77],
                   [0.88, -1.08, 0.15],
                   [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
targets = np.array([True, True, False, True])

training_gradient_fun = grad(training_loss)
weights = np.array([0.0, 0.0, 0.0])
losses = [training_loss(weights)]
for i in range(100):
    weights -= training_gradient_fun(weights) * 0.01
    losses.append(training_loss(weights))
result = [weights, np.array(losses)]
"""

SCRIPTS['neural_net_list_of_tuples'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad
from autograd.scipy.special import logsumexp

def init_random_params(scale, layer_sizes, rs=npr.RandomState(0)):
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]

def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)

def l2_norm(params):
    return sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)

def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik

rs = npr.RandomState(1)
X = rs.randn(20, 4)
labels = rs.randint(0, 3, size=20)
T = np.eye(3)[labels]
params = init_random_params(0.1, [4, 8, 3])
objective = lambda params, it: -log_posterior(params, X, T, 0.01)
g = grad(objective)
step = 0.05
for it in range(20):
    gr = g(params, it)
    params = [(W - step * gW, b - step * gb) for (W, b), (gW, gb) in zip(params, gr)]
result = [params, objective(params, 0), g(params, 0)]
"""

SCRIPTS['gaussian_loglik_linalg'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad, value_and_grad

def make_cov(L_flat, D):
    L = np.reshape(L_flat, (D, D))
    return np.dot(L, L.T) + 0.5 * np.eye(D)

def log_lik(params, X):
    D = X.shape[1]
    mu, L_flat = params[:D], params[D:]
    S = make_cov(L_flat, D)
    diff = X - mu
    sign, logdet = np.linalg.slogdet(S)
    Sinv = np.linalg.inv(S)
    quad = np.sum(np.dot(diff, Sinv) * diff)
    quad2 = np.sum(diff.T * np.linalg.solve(S, diff.T))
    n = X.shape[0]
    return -0.5 * (n * logdet + quad + 0.0 * quad2 + n * D * np.log(2 * np.pi)), quad, quad2

rs = npr.RandomState(0)
X = rs.randn(30, 3) + np.array([1.0, -2.0, 0.5])
params = np.concatenate([np.zeros(3), np.eye(3).ravel()])
f = lambda p: log_lik(p, X)[0]
v, g = value_and_grad(f)(params)
g2 = grad(lambda p: log_lik(p, X)[2])(params)
g3 = grad(lambda p: np.linalg.det(make_cov(p[3:], 3)))(params)
result = [v, g, g2, g3, log_lik(params, X)[1]]
"""

SCRIPTS['bbvi'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad

def log_density(x):
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = -0.5 * (log_sigma ** 2 / 1.35 ** 2) - np.log(1.35)
    mu_density = -0.5 * mu ** 2 / np.exp(log_sigma) ** 2 - log_sigma
    return sigma_density + mu_density

def black_box_variational_inference(logprob, D, num_samples):
    def unpack_params(params):
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    rs = npr.RandomState(0)
    def variational_objective(params, t):
        mean, log_std = unpack_params(params)
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples))
        return -lower_bound

    gradient = grad(variational_objective)
    return variational_objective, gradient, unpack_params

objective, gradient, unpack_params = black_box_variational_inference(log_density, 2, 50)
params = np.array([-1.0, -1.0, -5.0, -5.0])
m = np.zeros(4); v = np.zeros(4)
b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.1
for i in range(50):
    g = gradient(params, i)
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * (g ** 2) + b2 * v
    mhat = m / (1 - b1 ** (i + 1)); vhat = v / (1 - b2 ** (i + 1))
    params = params - lr * mhat / (np.sqrt(vhat) + eps)
result = [params]
"""

SCRIPTS['hessian_vector_products'] = """
import autograd.numpy as np
from autograd import grad, hessian, jacobian, hessian_vector_product

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

def hvp(f):
    return lambda x, v: grad(lambda x: np.dot(grad(f)(x), v))(x)

x = np.array([-1.2, 1.0, 0.5, 2.0])
v = np.array([1.0, -2.0, 0.5, 0.25])
H = hessian(rosenbrock)(x)
result = [rosenbrock(x), grad(rosenbrock)(x), H, hvp(rosenbrock)(x, v), np.dot(H, v),
          jacobian(grad(rosenbrock))(x), hessian_vector_product(rosenbrock)(x, v),
          hessian_vector_product(lambda a, x: a * rosenbrock(x), 1)(2.0, x, v)]
"""

SCRIPTS['grad_wrt_dict'] = """
import autograd.numpy as np
from autograd import grad, value_and_grad

def predict(params, x):
    h = np.tanh(np.dot(x, params["W1"]) + params["b1"])
    return np.dot(h, params["w2"]) + params["b2"]

def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)

rs = np.random.RandomState(3)
x = rs.randn(16, 3); y = rs.randn(16)
params = {"W1": rs.randn(3, 5) * 0.3, "b1": np.zeros(5), "w2": rs.randn(5) * 0.3, "b2": 0.1}
val, g = value_and_grad(loss)(params, x, y)
for _ in range(10):
    g = grad(loss)(params, x, y)
    params = {k: params[k] - 0.1 * g[k] for k in params}
result = [val, g, params, loss(params, x, y)]
"""

SCRIPTS['where_clip_maximum_concat_stack'] = """
import autograd.numpy as np
from autograd import grad, elementwise_grad

def huber(r, delta=1.0):
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))

def f(x):
    h = np.sum(huber(x * 1.5))
    c = np.clip(x, -0.5, 0.8)
    r = np.maximum(x, 0.0) + np.minimum(x, 0.1) * 0.5
    z = np.concatenate([c, r, x[:2] * x[2:4]])
    s = np.stack([x, c, r], axis=1)
    pt = np.array([x[0] * x[1], np.sin(x[2]), 3.0])
    return (h + np.sum(z ** 2) + np.sum(s[:, 1] * s[:, 2]) + np.prod(pt) + np.max(s)
            + np.sum(np.sqrt(np.abs(x) + 1.0)))

x = np.array([-1.3, -0.2, 0.35, 0.9, 2.1, 0.05])
result = [f(x), grad(f)(x), elementwise_grad(huber)(x * 2.0),
          grad(lambda x: np.sum(np.clip(x, -1.0, 1.0) ** 3))(x)]
"""

SCRIPTS['indexing_functional_updates'] = """
import autograd.numpy as np
from autograd import grad

def set_at(x, i, v):
    return np.concatenate([x[:i], np.array([v]), x[i + 1:]])

def f(x):
    M = np.reshape(x, (3, 4))
    MT = M.T
    a = MT[1:3, ::2]
    b = M[[0, 2], :][:, [1, 3]]
    y = set_at(x, 5, x[5] ** 2 + x[0])
    y = set_at(y, 0, np.sum(a))
    col = M[:, -1]
    m = M[M[:, 0] > 0.0]
    row_norms = np.sqrt(np.sum(M ** 2, axis=1))
    return (np.sum(y * np.arange(12)) + np.sum(a * b) + np.dot(col, col) + np.sum(m)
            + np.sum(row_norms) + np.sum(np.transpose(M, (1, 0))[0]) + x.reshape(2, 6)[1, 2]
            + np.squeeze(np.expand_dims(M, 0))[2, 3])

x = np.linspace(-1.0, 2.0, 12)
result = [f(x), grad(f)(x)]
"""

SCRIPTS['reductions_axis_keepdims'] = """
import autograd.numpy as np
from autograd import grad

def standardize(X):
    mu = np.mean(X, axis=0, keepdims=True)
    sd = np.std(X, axis=0, keepdims=True)
    return (X - mu) / sd

def f(X):
    Z = standardize(X)
    v = np.var(X, axis=1)
    s = np.sum(X ** 3, axis=(0, 1))
    m = np.max(X, axis=1)
    p = np.prod(X[:2] + 2.0, axis=0)
    return (np.sum(Z ** 2 * X) + np.sum(v) + s + np.sum(m) + np.sum(p) + np.mean(X ** 2)
            + np.std(X) + np.var(X) + np.sum(np.power(np.abs(X) + 1.0, 1.5)) + np.sum(2.0 ** X)
            + np.sum(np.abs(X) ** X))

X = np.array([[0.3, -1.2, 2.0, 0.7], [1.1, 0.4, -0.6, 1.9], [-0.8, 0.9, 0.25, -1.5]])
result = [f(X), grad(f)(X), standardize(X)]
"""

SCRIPTS['jacobian_hessian'] = """
import autograd.numpy as np
from autograd import jacobian, hessian, grad

def f(x):
    return np.array([x[0] ** 2 * x[1], 5.0 * x[0] + np.sin(x[1]), np.exp(x[0] * x[1])])

def g(x):
    return np.sum(np.log(1.0 + x ** 2)) + np.dot(x, x) * x[0]

def matfun(A):
    return np.dot(A, A.T)

x = np.array([0.5, -1.5])
A = np.arange(6.0).reshape(2, 3) / 5.0
result = [jacobian(f)(x), hessian(g)(np.array([0.3, -0.7, 1.2])), jacobian(matfun)(A),
          jacobian(jacobian(f))(x), grad(lambda x: np.sum(jacobian(f)(x)))(x)]
"""

SCRIPTS['softmax_regression_special'] = """
import autograd.numpy as np
from autograd import grad
from autograd.scipy.special import logsumexp, expit, gammaln, erf

def softmax(z):
    return np.exp(z - logsumexp(z, axis=1, keepdims=True))

def loss(W, X, y_onehot):
    logits = np.dot(X, W)
    lp = logits - logsumexp(logits, axis=1, keepdims=True)
    return -np.mean(np.sum(lp * y_onehot, axis=1)) + 0.01 * np.sum(W * W)

def poisson_nll(log_rate, counts):
    rate = np.exp(log_rate)
    return -np.sum(counts * log_rate - rate - gammaln(counts + 1.0))

rs = np.random.RandomState(7)
X = rs.randn(25, 4); y = rs.randint(0, 3, 25); Y = np.eye(3)[y]
W = np.zeros((4, 3))
for _ in range(25):
    W = W - 0.5 * grad(loss)(W, X, Y)
counts = np.array([0.0, 2.0, 5.0, 1.0])
lr = np.array([0.1, 0.5, 1.5, -0.3])
result = [W, loss(W, X, Y), softmax(np.dot(X, W))[:3], poisson_nll(lr, counts),
          grad(poisson_nll)(lr, counts),
          grad(lambda a: np.sum(expit(a) * erf(a) + gammaln(np.exp(a))))(lr),
          logsumexp(lr), grad(logsumexp)(lr)]
"""

SCRIPTS['euler_integration_loop'] = """
import autograd.numpy as np
from autograd import grad

def simulate(theta, x0, n_steps=50, dt=0.05):
    a, b = theta[0], theta[1]
    x = x0
    traj = [x]
    for _ in range(n_steps):
        dx = np.array([x[1], -a * np.sin(x[0]) - b * x[1]])
        x = x + dt * dx
        traj.append(x)
    return np.stack(traj)

def loss(theta):
    traj = simulate(theta, np.array([1.0, 0.0]))
    target = np.cos(np.linspace(0, 2.5, 51))
    return np.sum((traj[:, 0] - target) ** 2)

theta = np.array([2.0, 0.3])
for _ in range(5):
    theta = theta - 0.01 * grad(loss)(theta)
result = [theta, loss(theta), grad(loss)(theta),
          grad(lambda x0: np.sum(simulate(theta, x0)))(np.array([0.5, 0.1]))]
"""

SCRIPTS['scalar_functions_and_methods'] = """
import autograd.numpy as np
from autograd import grad, value_and_grad

def f(x):
    return np.sin(x) ** 2 + np.log1p(x ** 2) * np.exp(-x / 3.0) + np.arctan(x) / (1.0 + np.cosh(x))

def g(w):
    return (np.dot(w, w) + w.sum() * w.mean() + (w ** 2).sum() + np.dot(w.T, w)
            + w.reshape(2, 2).sum(axis=0)[1]
            + w.max() - w.min() + w.var() + w.std() + w.prod() + w.ravel()[-1]) / len(w)

df = grad(f)
ddf = grad(df)
xs = [0.0, 0.5, 1.0, -2.0, 3.0]
w = np.array([0.5, -1.0, 2.0, 0.25])
result = [[f(x) for x in xs], [df(x) for x in xs], [ddf(x) for x in xs], value_and_grad(g)(w),
          grad(lambda t: t ** 3 + 2 * t)(2.0), grad(lambda t: np.sqrt(t))(4.0)]
"""

SCRIPTS['grad_wrt_list_tuple_argnum'] = """
import autograd.numpy as np
from autograd import grad

def f(params, scale):
    a, b = params
    return scale * np.sum(a ** 2) + np.sum(np.dot(b, a))

a = np.array([1.0, 2.0]); b = np.array([[0.5, -1.0], [2.0, 0.1]])
ga, gb = grad(f)([a, b], 3.0)
gs = grad(f, 1)([a, b], 3.0)
gt = grad(f)((a, b), 3.0)
gk = grad(f, argnum=1)([a, b], 3.0)
nested = grad(lambda p: np.sum(p["w"][0] * p["w"][1]) + p["c"] ** 2)({"w": [a, 2.0 * a], "c": 1.5})
result = [ga, gb, gs, gt, gk, nested]
"""

SCRIPTS['gaussian_process_scipy_optimize'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import value_and_grad
from scipy.optimize import minimize

def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))

def make_gp_funs(cov_func, num_cov_params):
    def unpack_kernel_params(params):
        mean = params[0]
        cov_params = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        prior_mean = mean * np.ones(len(y))
        r = y - prior_mean
        sign, logdet = np.linalg.slogdet(cov_y_y)
        return (-0.5 * np.dot(r, np.linalg.solve(cov_y_y, r)) - 0.5 * logdet
                - 0.5 * len(y) * np.log(2 * np.pi))

    return num_cov_params + 2, log_marginal_likelihood

rs = npr.RandomState(0)
X = np.concatenate([np.linspace(0, 3, 9), np.linspace(6, 8, 9)]).reshape((18, 1))
y = np.cos(X[:, 0]) + rs.randn(18) * 0.1
X = (X - 4.0) / 4.0
num_params, log_ml = make_gp_funs(rbf_covariance, num_cov_params=2)
objective = lambda params: -log_ml(params, X, y)
init_params = 0.1 * rs.randn(num_params)
v0, g0 = value_and_grad(objective)(init_params)
res = minimize(value_and_grad(objective), init_params, jac=True, method="CG",
               options={"maxiter": 4})
result = [v0, g0, res.x, res.fun, res.nit]
"""

SCRIPTS['rnn_loop'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad
from autograd.scipy.special import logsumexp

def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)

def concat_and_multiply(weights, *args):
    cat_state = np.concatenate(args + (np.ones((args[0].shape[0], 1)),), axis=1)
    return np.dot(cat_state, weights)

def create_rnn_params(input_size, state_size, output_size, param_scale=0.01,
                      rs=npr.RandomState(0)):
    return {"init hiddens": rs.randn(1, state_size) * param_scale,
            "change": rs.randn(input_size + state_size + 1, state_size) * param_scale,
            "predict": rs.randn(state_size + 1, output_size) * param_scale}

def rnn_predict(params, inputs):
    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params["change"], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)

    num_sequences = inputs.shape[1]
    hiddens = params["init hiddens"] * np.ones((num_sequences, 1))
    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output

def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)

rs = npr.RandomState(1)
seq = rs.randint(0, 4, size=(6, 3))
onehot = np.eye(4)[seq]
params = create_rnn_params(4, 5, 4, param_scale=0.3)
loss = lambda p: -rnn_log_likelihood(p, onehot, onehot)
g = grad(loss)
for _ in range(5):
    gp = g(params)
    params = {k: params[k] - 0.5 * gp[k] for k in params}
result = [loss(params), g(params)]
"""

SCRIPTS['mixture_of_gaussians'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad
from autograd.scipy.special import logsumexp

def unpack(params, K, D):
    log_proportions = params[:K]
    means = np.reshape(params[K:K + K * D], (K, D))
    log_sigmas = params[K + K * D:]
    return log_proportions - logsumexp(log_proportions), means, log_sigmas

def log_likelihood(params, data, K, D):
    log_props, means, log_sigmas = unpack(params, K, D)
    sq = np.sum((data[:, None, :] - means[None, :, :]) ** 2, axis=2)
    comp = -0.5 * sq / np.exp(2 * log_sigmas) - D * log_sigmas - 0.5 * D * np.log(2 * np.pi)
    return np.sum(logsumexp(comp + log_props, axis=1))

rs = npr.RandomState(2)
data = np.concatenate([rs.randn(15, 2) + 2.0, rs.randn(15, 2) - 1.0])
K, D = 3, 2
params = rs.randn(K + K * D + K) * 0.5
obj = lambda p: -log_likelihood(p, data, K, D)
for _ in range(30):
    params = params - 0.01 * grad(obj)(params)
result = [params, obj(params), unpack(params, K, D)[0]]
"""


# ---- programs using autograd.misc and autograd.builtins, as autograd's examples do -------------
SCRIPTS['neural_net_adam_flatten'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd.scipy.special import logsumexp
from autograd import grad
from autograd.misc.flatten import flatten
from autograd.misc.optimizers import adam

def init_random_params(scale, layer_sizes, rs=npr.RandomState(0)):
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]

def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)

def l2_norm(params):
    flattened, _ = flatten(params)          # differentiated through
    return np.dot(flattened, flattened)

def log_posterior(params, inputs, targets, L2_reg):
    return -L2_reg * l2_norm(params) + np.sum(neural_net_predict(params, inputs) * targets)

def accuracy(params, inputs, targets):
    return np.mean(np.argmax(targets, axis=1) == np.argmax(neural_net_predict(params, inputs),
                                                           axis=1))

rs = npr.RandomState(4)
centers = rs.randn(3, 5) * 2.0
labels = rs.randint(0, 3, 60)
images = centers[labels] + rs.randn(60, 5)
targets = np.eye(3)[labels]
init_params = init_random_params(0.1, [5, 8, 3])
batch_size = 20
num_batches = int(np.ceil(len(images) / batch_size))

def batch_indices(iter):
    idx = iter % num_batches
    return slice(idx * batch_size, (idx + 1) * batch_size)

def objective(params, iter):
    idx = batch_indices(iter)
    return -log_posterior(params, images[idx], targets[idx], 0.1)

log = []
def print_perf(params, iter, gradient):
    if iter % num_batches == 0:
        log.append((accuracy(params, images, targets), objective(params, iter),
                    flatten(gradient)[0]))

optimized_params = adam(grad(objective), init_params, step_size=0.05,
                        num_iters=6 * num_batches, callback=print_perf)
result = [optimized_params, log, accuracy(optimized_params, images, targets)]
"""

SCRIPTS['fixed_points_sqrt'] = """
import autograd.numpy as np
from autograd import grad
from autograd.misc.fixed_points import fixed_point
from autograd.builtins import dict

def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)

def grad_descent_sqrt_iter(a):
    return lambda x: x - 0.05 * (x ** 2 - a)

def distance(x, y):
    return np.abs(x - y)

def sqrt(a, guess=10.0):
    return fixed_point(grad_descent_sqrt_iter, a, guess, distance, 1e-4)

def newton_sqrt(a, guess=10.0):
    return fixed_point(newton_sqrt_iter, a, guess, distance, 1e-10)

def sqrt_vec(a):
    # builtins.dict: the library traces the dict as one value (a plain dict holding traced
    # values would be differentiated through the iterations, not at the fixed point)
    return fixed_point(lambda p: lambda x: x - 0.1 * (x ** 2 - p["a"] * p["s"]),
                       dict(a=a, s=2.0), np.ones(3), lambda x, y: np.max(np.abs(x - y)), 1e-8)

a = np.array([0.5, 1.5, 3.0])
result = [np.sqrt(2.0), sqrt(2.0), grad(np.sqrt)(2.0), grad(sqrt)(2.0),
          grad(grad(np.sqrt))(2.0), grad(grad(sqrt))(2.0), newton_sqrt(5.0), grad(newton_sqrt)(5.0),
          sqrt_vec(a), grad(lambda a: np.sum(sqrt_vec(a) * np.arange(3.0)))(a)]
"""

SCRIPTS['optimizers_sgd_rmsprop_on_dicts'] = """
import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad
from autograd.misc import flatten
from autograd.misc.optimizers import sgd, rmsprop, adam

rs = npr.RandomState(5)
X = rs.randn(30, 3)
y = np.dot(X, np.array([1.0, -2.0, 0.5])) + 0.3 + 0.1 * rs.randn(30)

def loss(params, i):
    pred = np.dot(X, params["w"]) + params["b"][0] * params["b"][1]
    return np.mean((pred - y) ** 2)

params0 = {"w": np.zeros(3), "b": (0.1, np.array(1.0))}
trace = []
cb = lambda p, i, g: trace.append(flatten(p)[0])
p_sgd = sgd(grad(loss), params0, callback=cb, num_iters=30, step_size=0.1, mass=0.8)
p_rms = rmsprop(grad(loss), params0, num_iters=40, step_size=0.05)
p_adam = adam(grad(lambda p, i: loss({"w": p[0], "b": (p[1][0], 1.0)}, i)),
                [np.zeros(3), (0.0,)], num_iters=25, step_size=0.1)
v, unflatten = flatten(params0)
result = [p_sgd, p_rms, p_adam, np.array(trace), v, unflatten(v * 2.0), loss(p_sgd, 0)]
"""

SCRIPTS['builtins_containers_and_make_jvp'] = """
import autograd.numpy as np
from autograd import grad, make_jvp
from autograd.builtins import tuple, list, dict, isinstance

def norm_of_anything(x):
    if isinstance(x, (tuple, list)):
        return sum(norm_of_anything(v) for v in x)
    if isinstance(x, dict):
        return sum(norm_of_anything(x[k]) for k in x)
    if isinstance(x, np.ndarray):
        return np.sum(x ** 2)
    return x ** 2

def f(x):
    pair = tuple((x, np.sin(x)))
    d = dict(w=pair[1] * 2.0, v=list([x[0], x[1] ** 2]))
    return norm_of_anything(pair) + norm_of_anything(d) + norm_of_anything(3.0 * x[2])

x = np.array([0.5, -1.2, 2.0])
ans, jv = make_jvp(lambda x: np.tanh(x) * x[0])(x)(np.array([1.0, 0.0, -1.0]))
result = [f(x), grad(f)(x), grad(lambda x: np.sum(x) if isinstance(x, np.ndarray) else 0.0)(x),
          ans, jv, make_jvp(lambda a, b: a * b, 1)(2.0, x)(np.ones(3))[1]]
"""


_IMPORTS = [  # autograd's import lines -> fastgraph's, as a user edits them
    ("import autograd.numpy", "import fastgraph.numpy"),
    ("from autograd.scipy.special import", "from fastgraph.scipy.special import"),
    ("from autograd.misc", "from fastgraph.misc"),
    ("from autograd.builtins import", "from fastgraph.builtins import"),
    ("from autograd import", "from fastgraph import"),
]


def _to_fastgraph(src: str) -> str:
    for old, new in _IMPORTS:
        src = src.replace(old, new)
    assert "autograd" not in src
    return src


def _run(src: str):
    namespace: dict = {"__name__": "autograd_script"}
    exec(compile(src, "<script>", "exec"), namespace)
    return namespace["result"]


def _assert_same(ref, got, path="result"):
    """Same containers (type, length, keys), same array shapes and dtypes, values to 1e-12."""
    if isinstance(ref, (list, tuple, dict)):
        assert type(got) is type(ref), \
            f"{path}: {type(got).__name__}, autograd {type(ref).__name__}"
        assert len(got) == len(ref), f"{path}: length {len(got)}, autograd {len(ref)}"
        if isinstance(ref, dict):
            assert list(got) == list(ref), f"{path}: keys {list(got)}, autograd {list(ref)}"
            for k in ref:
                _assert_same(ref[k], got[k], f"{path}[{k!r}]")
        else:
            for i, (r, g) in enumerate(zip(ref, got)):
                _assert_same(r, g, f"{path}[{i}]")
        return
    assert not isinstance(got, fg.Tensor), f"{path}: a Tensor came back, not a NumPy value"
    r, g = np.asarray(ref), np.asarray(got)
    assert g.shape == r.shape, f"{path}: shape {g.shape}, autograd {r.shape}"
    assert g.dtype == r.dtype, f"{path}: dtype {g.dtype}, autograd {r.dtype}"
    scale = float(np.max(np.abs(r))) if r.size and r.dtype.kind in "fc" else 0.0
    np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12 * scale, err_msg=path)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_autograd_script_runs_unchanged_with_fastgraph(name):
    src = textwrap.dedent(SCRIPTS[name])
    _assert_same(_run(src), _run(_to_fastgraph(src)))


# ---- the pieces those scripts rely on, each on its own ------------------------------------------
def test_numpy_submodules_import_as_autograd_numpys_do():
    # ``fastgraph.numpy`` handed out NumPy's ``__path__``: ``import fastgraph.numpy.linalg``
    # loaded a second copy of numpy.linalg over the differentiable one, and ``.random`` a second
    # numpy.random with its own global seed.  A fresh interpreter, so a regression cannot leave
    # this one with a broken ``fnp.linalg``.
    code = textwrap.dedent("""
        import numpy, fastgraph, fastgraph.linalg, fastgraph.fft
        import fastgraph.numpy.random as npr
        import fastgraph.numpy.linalg as la
        import fastgraph.numpy.fft as fft
        import fastgraph.numpy as np
        assert npr is numpy.random and fft is fastgraph.fft and np.fft is fft, (npr, fft)
        assert fft.fftfreq is numpy.fft.fftfreq     # NumPy's other fft functions
        assert la is fastgraph.linalg and np.linalg is fastgraph.linalg, (la, np.linalg)
        numpy.random.seed(3); a = npr.rand(); numpy.random.seed(3)
        assert a == numpy.random.rand()
        g = fastgraph.grad(lambda x: la.slogdet(x)[1])(numpy.eye(2) * 2.0)
        assert (g == numpy.eye(2) * 0.5).all(), g
        try:
            import fastgraph.numpy.polynomial  # noqa: F401  (not one of autograd.numpy's)
        except ModuleNotFoundError:
            pass
        else:
            raise AssertionError("fastgraph.numpy is not a package")
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_grad_of_list_tuple_and_dict_arguments():
    a, b = np.array([1.0, 2.0]), np.array([[0.5, -1.0], [2.0, 0.1]])
    f = lambda p, s: s * fnp.sum(p[0] ** 2) + fnp.sum(fnp.dot(p[1], p[0]))  # noqa: E731
    ga, gb = fg.grad(f)([a, b], 3.0)
    np.testing.assert_array_equal(ga, 6.0 * a + b.sum(axis=0))
    np.testing.assert_array_equal(gb, np.broadcast_to(a, (2, 2)))
    assert type(fg.grad(f)([a, b], 3.0)) is list and type(fg.grad(f)((a, b), 3.0)) is tuple
    g = fg.grad(lambda p: p["w"][0] * p["w"][1] + p["c"] ** 2)({"w": (2.0, 5.0), "c": 1.5})
    assert g == {"w": (5.0, 2.0), "c": 3.0}
    v, (gp, gs) = fg.value_and_grad(f, argnums=(0, 1))([a, b], 3.0)
    assert type(gp) is list and gs == np.sum(a ** 2)
    assert fg.grad(lambda p: 1.0)([a, {"k": b}])[1]["k"].shape == (2, 2)  # constant: zeros
    J = fg.jacobian(lambda p: p[0] * p[1][0])([a, b])  # one Jacobian per array, JAX's layout
    assert type(J) is list and J[0].shape == (2, 2) and J[1].shape == (2, 2, 2)
    H = fg.hessian(lambda p: fnp.sum(p["x"] ** 3) * p["y"])({"x": a, "y": 2.0})
    np.testing.assert_array_equal(H["x"]["x"], np.diag(12.0 * a))
    np.testing.assert_array_equal(H["x"]["y"], 3 * a ** 2)


def test_grad_of_containers_while_tracing():
    # fg.function: the transforms see graph Nodes inside the list/dict and differentiate them
    loss = lambda p, x: fnp.sum(fnp.tanh(fnp.dot(x, p["W"]) + p["b"][0]) * p["b"][1])  # noqa

    @fg.function
    def step(W, b, x):
        return fg.value_and_grad(loss)({"W": W, "b": (b, 2.0)}, x)

    W, b, x = np.full((3, 2), 0.1), np.zeros(2), np.arange(6.0).reshape(2, 3)
    (v, g), (v_ref, g_ref) = step(W, b, x), fg.value_and_grad(loss)({"W": W, "b": (b, 2.0)}, x)
    assert list(g) == ["W", "b"] and type(g["b"]) is tuple
    for got, ref in ((v, v_ref), (g["W"], g_ref["W"]), (g["b"][0], g_ref["b"][0]),
                     (g["b"][1], g_ref["b"][1])):
        np.testing.assert_allclose(got, ref, rtol=1e-14)


def test_argnum_is_autograds_spelling_of_argnums():
    f = lambda x, y: fnp.sum(x * y ** 2)  # noqa: E731
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_array_equal(fg.grad(f, argnum=1)(x, y), 2 * x * y)
    np.testing.assert_array_equal(fg.value_and_grad(f, argnum=1)(x, y)[1], 2 * x * y)
    np.testing.assert_array_equal(fg.jacobian(f, argnum=1)(x, y), 2 * x * y)
    np.testing.assert_array_equal(fg.hessian(f, argnum=1)(x, y), np.diag(2 * x))
    np.testing.assert_array_equal(fg.elementwise_grad(lambda x, y: x * y, argnum=1)(x, y), x)
    with pytest.raises(TypeError, match="not both"):
        fg.grad(f, 1, argnum=1)


def test_elementwise_grad_is_the_vjp_with_ones():
    x = np.array([-1.0, 0.0, 0.5, 2.0])
    np.testing.assert_array_equal(fg.elementwise_grad(fnp.tanh)(x), 1.0 - np.tanh(x) ** 2)
    np.testing.assert_array_equal(fg.elementwise_grad(fg.elementwise_grad(lambda x: x ** 3))(x),
                                  6.0 * x)
    M = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(fg.elementwise_grad(lambda m: fnp.dot(m, x[:3]))(M),
                                  np.broadcast_to(x[:3], (2, 3)))
    assert fg.elementwise_grad(lambda x: x ** 2)(3.0) == 6.0
    np.testing.assert_array_equal(fg.elementwise_grad(lambda x: np.ones(3))(x), np.zeros(4))
    with pytest.raises(TypeError, match="got list"):
        fg.elementwise_grad(lambda x: [x])(x)


def test_hessian_vector_product():
    f = lambda x: fnp.sum(x ** 3) + x[0] * x[1]  # noqa: E731
    x, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    H = fg.hessian(f)(x)
    np.testing.assert_allclose(fg.hessian_vector_product(f)(x, v), H @ v, rtol=1e-15)
    hv = fg.hessian_vector_product(lambda s, x: s * f(x), argnum=1)(3.0, x, v)
    np.testing.assert_allclose(hv, 3.0 * (H @ v), rtol=1e-15)
    with pytest.raises(TypeError, match="one argument"):
        fg.hessian_vector_product(f, (0, 1))


def test_flatten_order_round_trip_and_gradient():
    from fastgraph.misc import flatten, flatten_func
    params = {"w": np.arange(4.0).reshape(2, 2), "b": [np.ones(1), 2.0], "a": (np.zeros(0),)}
    v, unflatten = flatten(params)
    assert v.tolist() == [1.0, 2.0, 0.0, 1.0, 2.0, 3.0]       # autograd's order: sorted keys
    back = unflatten(v)
    assert list(back) == ["w", "b", "a"] and type(back["b"]) is list and type(back["a"]) is tuple
    np.testing.assert_array_equal(back["w"], params["w"])
    assert back["b"][1].shape == () and back["a"][0].shape == (0,)
    # both directions carry gradients, eagerly and traced
    sq = lambda p: fnp.dot(flatten(p)[0], flatten(p)[0])  # noqa: E731
    g = fg.grad(sq)(params)
    np.testing.assert_array_equal(g["w"], 2 * params["w"])
    assert g["b"][1] == 4.0
    g_traced = fg.function(fg.grad(sq))(params)
    np.testing.assert_array_equal(g_traced["w"], g["w"])
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(unflatten(x)["w"] ** 2))(v),
                                  [0.0, 0.0, 0.0, 2.0, 4.0, 6.0])
    f, unflatten2, x0 = flatten_func(lambda p: {"y": p["w"] * 2.0}, params)
    assert f(x0).tolist() == [0.0, 2.0, 4.0, 6.0]
    with pytest.raises(ValueError, match=r"vector has shape \(5,\); this structure flattens "
                                         r"to shape \(6,\)"):
        unflatten(np.ones(5))


BUILTINS_CASES = [  # (value, class, isinstance as autograd answers it for the traced value)
    (fg.tensor([1.0]), np.ndarray, True), (fg.tensor(1.0), float, True),
    (fg.tensor(1.0), np.ndarray, True), (fg.tensor([1.0]), float, False),
    (fg.tensor([1.0]), fg.Tensor, True), ((1.0, 2.0), tuple, True), ([1.0], list, True),
    ({}, dict, True), ([1.0], tuple, False), (np.ones(2), np.ndarray, True),
]


@pytest.mark.parametrize("value,cls,expected", BUILTINS_CASES)
def test_builtins_isinstance_answers_for_the_traced_value(value, cls, expected):
    import fastgraph.builtins as fb
    assert fb.isinstance(value, cls) is expected
    assert fb.tuple is tuple and fb.list is list and fb.dict is dict
    if isinstance(value, fg.Tensor):
        assert fb.type(value) is np.ndarray


def test_fixed_point_gradients_eager_traced_forward_and_second_order():
    from fastgraph.misc.fixed_points import fixed_point

    def sqrt(a):
        return fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, np.ones(2),
                           lambda x, y: np.max(np.abs(x - y)), 1e-12)

    a = np.array([2.0, 9.0])
    np.testing.assert_allclose(sqrt(a), np.sqrt(a), rtol=1e-15)
    total = lambda a: fnp.sum(sqrt(a))  # noqa: E731
    np.testing.assert_allclose(fg.grad(total)(a), 0.5 / np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(fg.function(fg.grad(total))(a), 0.5 / np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(fg.hessian(total)(a), np.diag(-0.25 * a ** -1.5), rtol=1e-10)
    np.testing.assert_allclose(fg.jvp(sqrt, (a,), (np.ones(2),))[1], 0.5 / np.sqrt(a),
                               rtol=1e-12)
    # the parameter may be a structure; x0 carries no gradient (the fixed point ignores it)
    g = fg.grad(lambda p: fnp.sum(fixed_point(lambda p: lambda x: 0.5 * (x + p[0] * p[1] / x),
                                              p, 1.0, lambda x, y: abs(x - y), 1e-12)))((2.0, 8.0))
    np.testing.assert_allclose(g, (0.5 * 8.0 / 4.0, 0.5 * 2.0 / 4.0), rtol=1e-12)


@pytest.mark.parametrize("name", ["sgd", "rmsprop", "adam"])
def test_optimizer_runs_differentiate_in_their_step_size(name):
    # the updates are fastgraph.numpy arithmetic: through a run, the gradient of the final loss
    # in the step size is the central difference's
    import fastgraph.misc.optimizers as opt
    loss = lambda p, i: fnp.sum((p["x"] - 1.0) ** 2 * np.array([1.0, 3.0]))  # noqa: E731

    def final(step):
        return loss(getattr(opt, name)(fg.grad(loss), {"x": np.zeros(2)}, num_iters=5,
                                       step_size=step), 0)

    eps = 1e-6
    numeric = (final(0.1 + eps) - final(0.1 - eps)) / (2 * eps)
    assert abs(numeric) > 1e-3
    np.testing.assert_allclose(fg.grad(final)(0.1), numeric, rtol=1e-6)
