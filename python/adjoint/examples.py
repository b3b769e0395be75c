"""Example modules in the text format: those of DESIGN.md, used by the demo,
the docs and the tests."""

TRANSPOSED_MATMUL = '''\
@function
def main(x: Tensor((3, 3), "float32"), y: Tensor((3, 3), "float32")) -> Tensor((), "float32"):
    lv1: Tensor((3, 3), "float32") = permute_dims(x)
    lv2: Tensor((3, 3), "float32") = permute_dims(y)
    lv3: Tensor((3, 3), "float32") = matmul(lv1, lv2)
    gv: Tensor((), "float32") = sum(lv3)
    return gv
'''

MLP_SYMBOLIC = '''\
@function(num_input=1)
def main(x: Tensor(("n", 784), "float32"), w: Tensor((784, 10), "float32")) -> Tensor((), "float32"):
    lv: Tensor(("n", 10), "float32") = matmul(x, w)
    lv1: Tensor((), "float32") = sum(lv)
    return lv1
'''

TUPLES_AND_ATTRS = '''\
@function
def main(a: Tensor((2, 3), "float64"), b: Tensor((2, 3), "float64")) -> Tensor((4, 1), "float64"):
    t: Tuple(Tensor((2, 3), "float64"), Tensor((2, 3), "float64")) = (a, b)
    c: Tensor((4, 3), "float64") = concat(t)
    parts: Tuple(Tensor((4, 1), "float64"), Tensor((4, 2), "float64")) = split(c, [1], axis=1)
    first: Tensor((4, 1), "float64") = parts[0]
    return first
'''

ALL = {
    "transposed_matmul": TRANSPOSED_MATMUL,
    "mlp_symbolic": MLP_SYMBOLIC,
    "tuples_and_attrs": TUPLES_AND_ATTRS,
}
