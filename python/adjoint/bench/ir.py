"""IR benchmark: parse, print, verify, hash and compare modules of 10k, 100k
and 200k bindings; reports the 200k/100k ratio to show linear growth.

Goal (issue 2): 100k bindings parse + print under 1 s on one core; the
200k/100k time ratio at most 2.3. A second table times what users do with a
big module in a notebook: its clipped repr and HTML, a pickle round trip and
`aj.viz.diff` against a variant, at the same sizes.
"""

from __future__ import annotations

import pickle

import adjoint as aj
from adjoint.bench import median_seconds, print_table

SIZES = (10_000, 100_000, 200_000)

_T = 'Tensor((8,), "float32")'


def generate_text(n: int) -> str:
    """A function of n bindings mixing elementwise ops, matmul, sums, a tuple
    and an item, in canonical text."""
    lines = [
        "@function(num_input=1)",
        f'def main(x: {_T}, w: Tensor((8, 8), "float32")) -> {_T}:',
        f"    lv0: {_T} = add(x, x)",
        f"    lv1: {_T} = multiply(lv0, x)",
    ]
    for k in range(2, n):
        a, b = f"lv{k - 1}", f"lv{k - 2}"
        r = k % 6
        if r == 0:
            lines.append(f"    lv{k}: {_T} = matmul(w, {a})")
        elif r == 1:
            lines.append(f'    lv{k}: Tensor((1,), "float32") = sum({a}, axis=[0], keepdims=True)')
        elif r == 2:
            lines.append(f"    lv{k}: {_T} = add({a}, {b})")
        elif r == 3:
            lines.append(f"    lv{k}: {_T} = maximum({a}, {b})")
        elif r == 4:
            lines.append(f"    lv{k}: {_T} = subtract({a}, x)")
        else:
            lines.append(f"    lv{k}: {_T} = multiply({a}, {b})")
    last = n - 1 if (n - 1) % 6 != 1 else n - 2
    lines.append(f"    return lv{last}")
    return "\n".join(lines) + "\n"


def run(repeat: int = 3) -> None:
    rows = []
    per_size = {}
    for n in SIZES:
        text = generate_text(n)
        mod = aj.parse(text)
        other = aj.parse(text)
        t = {
            "parse": median_seconds(lambda: aj.parse(text), repeat),
            "print": median_seconds(lambda: mod.script(), repeat),
            "verify": median_seconds(lambda: aj.analysis.verify(mod), repeat),
            "hash": median_seconds(lambda: aj.structural_hash(mod), repeat),
            "compare": median_seconds(lambda: aj.structural_equal(mod, other), repeat),
        }
        assert aj.structural_equal(mod, other)
        t["parse+print"] = t["parse"] + t["print"]
        per_size[n] = t
        rows.append([n] + [t[k] for k in ("parse", "print", "parse+print", "verify", "hash", "compare")])
    print("IR benchmark: seconds, median of", repeat, "runs (one thread)")
    print_table(["bindings", "parse", "print", "parse+print", "verify", "hash", "compare"], rows)
    big, mid = per_size[SIZES[2]], per_size[SIZES[1]]
    print()
    print_table(
        ["200k/100k ratio", "parse", "print", "parse+print", "verify", "hash", "compare"],
        [["ratio"] + [big[k] / mid[k] for k in ("parse", "print", "parse+print", "verify", "hash", "compare")]],
    )
    ok = mid["parse+print"] < 1.0 and big["parse+print"] / mid["parse+print"] <= 2.3
    print()
    print(f"goal: 100k parse+print < 1 s and 200k/100k <= 2.3: {'met' if ok else 'NOT met'}"
          f" ({mid['parse+print']:.3f} s, ratio {big['parse+print'] / mid['parse+print']:.2f})")
    print()
    tools(repeat)


def variant(text: str) -> str:
    """The same program with every 'maximum' turned into 'minimum': a diff of
    one changed binding in six."""
    return text.replace("= maximum(", "= minimum(")


def tools(repeat: int, sizes: tuple[int, ...] = SIZES) -> None:
    rows = []
    for n in sizes:
        text = generate_text(n)
        mod, other = aj.parse(text), aj.parse(variant(text))
        rows.append([
            n,
            median_seconds(lambda: (repr(mod), mod._repr_html_()), repeat),
            median_seconds(lambda: pickle.loads(pickle.dumps(mod)), repeat),
            median_seconds(lambda: (lambda d: (str(d), d._repr_html_()))(aj.viz.diff(mod, other)), repeat),
        ])
    print("Displays and round trips: seconds, median of", repeat, "runs")
    print_table(["bindings", "repr+html", "pickle round trip", "viz.diff+show"], rows)
