"""The program texts the ``passes`` fuzz target adds to the ``parse``
target's corpus: valid programs written to give the passes something to
rewrite (parallel matmuls, low-rank updates, matmul chains, concats of
permuted fields, weights transformed at compile time, what the text rules
``RULES`` of ``passes_pipeline`` match). Data only, kept apart from the
target's code.
"""

PASS_TEXTS = [
    # parallel matmuls sharing their LHS (biases, activations), then attention; weights, one frozen
    '''\
@function(num_input=1, frozen="bk")
def main(x: Tensor((4, 8), "float32"), wq: Tensor((8, 3), "float32"), wk: Tensor((8, 3), "float32"), wv: Tensor((8, 5), "float32"), bq: Tensor((3,), "float32"), bk: Tensor((3,), "float32"), bv: Tensor((5,), "float32")):
    q = matmul(x, wq)
    k = matmul(x, wk)
    v = matmul(x, wv)
    qb = add(q, bq)
    kb = add(bk, k)
    vb = add(v, bv)
    qa = gelu(qb)
    ka = gelu(kb)
    va = relu(vb)
    kt = permute_dims(ka, axes=[1, 0])
    s = matmul(qa, kt)
    p = softmax(s, axis=-1)
    o = matmul(p, va)
    loss = mean(o)
    return loss
''',
    # parallel matmuls sharing their RHS, symbolic rows; a tuple result
    '''\
@function(num_input=2)
def main(a: Tensor(("n", 6), "float64"), b: Tensor(("m", 6), "float64"), w: Tensor((6, 4), "float64"), c: Tensor((4,), "float64")):
    ya = matmul(a, w)
    yb = matmul(b, w)
    za = add(ya, c)
    zb = add(yb, c)
    ta = tanh(za)
    tb = tanh(zb)
    sa = sum(ta)
    sb = sum(tb)
    l = add(sa, sb)
    return (l, ta)
''',
    # batched parallel matmuls
    '''\
@function
def main(x: Tensor((2, 3, 4), "float32"), w1: Tensor((2, 4, 5), "float32"), w2: Tensor((2, 4, 2), "float32"), w3: Tensor((2, 4, 5), "float32")):
    y1 = matmul(x, w1)
    y2 = matmul(x, w2)
    y3 = matmul(x, w3)
    s1 = silu(y1)
    s2 = silu(y2)
    s3 = silu(y3)
    a = sum(s1)
    b = sum(s2)
    c = sum(s3)
    d = add(a, b)
    e = add(d, c)
    return e
''',
    # a low-rank update on the left, weights: (W + B @ A) @ x
    '''\
@function(num_input=1)
def main(x: Tensor((8, 2), "float32"), W: Tensor((6, 8), "float32"), B: Tensor((6, 2), "float32"), A: Tensor((2, 8), "float32")):
    ba = matmul(B, A)
    s = add(W, ba)
    y = matmul(s, x)
    l = sum(y)
    return l
''',
    # the expanded form, inputs: W @ x + B @ (A @ x)
    '''\
@function
def main(x: Tensor((8, "k"), "float64"), W: Tensor((6, 8), "float64"), B: Tensor((6, 2), "float64"), A: Tensor((2, 8), "float64")):
    wx = matmul(W, x)
    ax = matmul(A, x)
    bax = matmul(B, ax)
    y = add(wx, bax)
    return y
''',
    # a low-rank update on the right, LoRA-like, symbolic rank
    '''\
@function(num_input=1)
def main(x: Tensor(("n", 6), "float32"), w: Tensor((6, 5), "float32"), a: Tensor((6, "r"), "float32"), b: Tensor(("r", 5), "float32")):
    ab = matmul(a, b)
    s = add(w, ab)
    y = matmul(x, s)
    r = relu(y)
    l = sum(r)
    return l
''',
    # matmul chains
    '''\
@function
def main(a: Tensor((10, 2), "float64"), b: Tensor((2, 10), "float64"), c: Tensor((10, 3), "float64"), d: Tensor((3, 1), "float64")):
    ab = matmul(a, b)
    abc = matmul(ab, c)
    abcd = matmul(abc, d)
    l = sum(abcd)
    return (l, abcd)
''',
    '''\
@function(num_input=1)
def main(x: Tensor(("n", 4), "float32"), w1: Tensor((4, 16), "float32"), w2: Tensor((16, 2), "float32"), w3: Tensor((2, 3), "float32")):
    h = matmul(x, w1)
    h2 = matmul(h, w2)
    h3 = matmul(h2, w3)
    w12 = matmul(w1, w2)
    g = matmul(x, w12)
    s = sum(h3)
    t = sum(g)
    u = add(s, t)
    return u
''',
    # concats of permuted fields
    '''\
@function
def main(a: Tensor((2, 3, 4), "float32"), b: Tensor((2, 3, 4), "float32"), c: Tensor((2, 3, 1), "float32")):
    pa = permute_dims(a, axes=[2, 0, 1])
    pb = permute_dims(b, axes=[2, 0, 1])
    pc = permute_dims(c, axes=[2, 0, 1])
    cat = concat((pa, pb, pc), axis=0)
    e = exp(cat)
    s = sum(e)
    return s
''',
    '''\
@function
def main(a: Tensor(("n", 3), "float64"), b: Tensor(("m", 3), "float64")):
    pa = permute_dims(a)
    pb = permute_dims(b)
    cat = concat((pa, pb), axis=1)
    t = (cat, pa)
    f = t[0]
    g = t[1]
    return (f, g)
''',
    # weights transformed at compile time; frozen statistics, as a BatchNorm keeps them
    '''\
@function(num_input=1, frozen="running_mean, running_var")
def main(x: Tensor(("n", 4), "float32"), w: Tensor((3, 4), "float32"), gamma: Tensor((3,), "float32"), running_mean: Tensor((3,), "float32"), running_var: Tensor((3,), "float32")):
    wt = permute_dims(w)
    y = matmul(x, wt)
    eps = const(1e-05, "float32")
    v = add(running_var, eps)
    inv = rsqrt(v)
    scale = multiply(gamma, inv)
    c = subtract(y, running_mean)
    z = multiply(c, scale)
    zz = zeros((16,), "int32")
    t = (w, x)
    ww = t[0]
    s = sum(ww)
    o = add(z, s)
    l = sum(o)
    return (l, zz)
''',
    # layer norm and cross entropy, weights, float64
    '''\
@function(num_input=2)
def main(x: Tensor((3, 5), "float64"), y: Tensor((3, 4), "float64"), w: Tensor((5, 4), "float64"), g: Tensor((5,), "float64"), b: Tensor((5,), "float64")):
    n = layer_norm(x, g, b, axes=[-1])
    gw = multiply(g, g)
    h = matmul(n, w)
    lbl = softmax(y, axis=-1)
    ce = cross_entropy_with_logits(h, lbl)
    s = sum(gw)
    l = add(ce, s)
    return l
''',
    # ints and bools among the floats, a tuple of weights
    '''\
@function(num_input=2)
def main(x: Tensor((4, 3), "float32"), i: Tensor((2,), "int64"), e: Tensor((5, 3), "float32"), m: Tensor((3,), "float32")):
    rows = take(e, i, axis=0)
    big = greater(x, const(0.0, "float32"))
    xm = where(big, x, zeros_like(x))
    em = multiply(e, m)
    p = (em, m)
    pe = p[0]
    q = matmul(xm, permute_dims(pe))
    r = sum(q, axis=[1])
    s = sum(rows)
    u = add(r, s)
    v = sum(u)
    return (v, big)
''',
    # attention with batched matmuls and a softmax
    '''\
@function(num_input=1)
def main(x: Tensor((2, 3, 4), "float32"), wq: Tensor((4, 4), "float32"), wk: Tensor((4, 4), "float32")):
    q = matmul(x, wq)
    k = matmul(x, wk)
    kt = permute_dims(k, axes=[0, 2, 1])
    s = matmul(q, kt)
    c = const(0.5, "float32")
    sc = multiply(s, c)
    p = softmax(sc, axis=-1)
    o = matmul(p, x)
    l = sum(o)
    return l
''',
    # what the text rules (RULES) rewrite: transposes of transposes and of matmuls, negatives and relus twice,
    # an astype to the same dtype, a split concatenated back, a sum of a transpose, a value added to itself
    '''\
@function(num_input=1, frozen="v")
def main(x: Tensor((4, 6), "float32"), w: Tensor((6, 4), "float32"), v: Tensor((4, 4), "float32")):
    wt = permute_dims(w)
    w2 = permute_dims(wt)
    h = matmul(x, w2)
    r = relu(h)
    rr = relu(r)
    ht = permute_dims(rr, axes=[1, 0])
    vt = permute_dims(v, axes=[1, 0])
    g = matmul(vt, ht)
    gt = permute_dims(g, axes=[1, 0])
    g2 = permute_dims(gt, axes=[1, 0])
    g3 = permute_dims(g2, axes=[1, 0])
    n = negative(g3)
    nn = negative(n)
    a = astype(nn, "float32")
    d = add(a, a)
    sp = split(d, 2, axis=0)
    s0 = sp[0]
    s1 = sp[1]
    c = concat((s0, s1), axis=0)
    p = permute_dims(c)
    l = sum(p)
    return l
''',
    '''\
@function(num_input=1)
def main(x: Tensor(("n", 3), "float64"), w: Tensor((3, 2), "float64"), b: Tensor((2,), "float64")):
    y = matmul(x, w)
    z = add(y, b)
    zz = astype(z, "float64")
    e = multiply(zz, zz)
    m = negative(negative(e))
    t = permute_dims(m)
    s = sum(t)
    return (s, m)
''',
]
