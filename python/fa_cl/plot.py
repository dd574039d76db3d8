# SPDX-License-Identifier: Apache-2.0
"""TFLOP/s against sequence length from benchmark JSON files.

    python -m fa_cl.plot bench.json [torch_*.json ...] -o bench.png

Needs matplotlib (pip install fa_cl[plot]); `import fa_cl` does not import this module.

bench.json: fa_cl_bench --json (its rows: fused, and the CLBlast reference where it ran). Any other
file given: scripts/torch_sdpa_anchor.py --json (one shape, a row per PyTorch backend) or the
anchor's printed output (any number of shapes), drawn beside the fa_cl row of the same dtype,
head_dim and mask. One panel per (dtype, head_dim, causal) series.
"""
import argparse
import json
import re
import sys


def _series_key(dtype, d, causal):
    return "%s, d=%d%s" % (dtype, d, ", causal" if causal else "")


_ANCHOR_SHAPE = re.compile(r"^# .* B=(\d+) H=(\d+) Hkv=(\d+) Sq=(\d+) Sk=(\d+) d=(\d+) (\w+) causal=(True|False)(.*)$")
_ANCHOR_ROW = re.compile(r"^([A-Z_]+)\s+([0-9.]+) ms\s+([0-9.]+) TFLOP/s")


def anchor_text(text):
    """The documents torch_sdpa_anchor.py's printed output holds (one per '# ...' shape line), as
    its --json would have written them."""
    docs = []
    for line in text.splitlines():
        m = _ANCHOR_SHAPE.match(line)
        if m:
            b, h, hkv, sq, sk, d = (int(x) for x in m.groups()[:6])
            docs.append({"B": b, "H": h, "Hkv": hkv, "Sq": sq, "Sk": sk, "d": d, "dtype": m.group(7),
                         "causal": m.group(8) == "True", "backward": "backward" in m.group(9), "rows": []})
            continue
        r = _ANCHOR_ROW.match(line)
        if r and docs:
            docs[-1]["rows"].append({"backend": r.group(1), "ms": float(r.group(2)), "tflops": float(r.group(3))})
    return docs


def _documents(path):
    with open(path) as f:
        text = f.read()
    try:
        return [json.loads(text)]
    except ValueError:
        docs = anchor_text(text)
        if not docs:
            raise SystemExit("fa_cl.plot: %s is neither JSON nor torch_sdpa_anchor.py output" % path)
        return docs


def load(paths):
    """{series: {label: [(seqlen, tflops), ...]}} from fa_cl_bench JSON and the anchor's JSON or
    printed output."""
    series = {}
    for doc in (d for path in paths for d in _documents(path)):
        rows = doc.get("rows", [])
        if "device" in doc:  # fa_cl_bench
            for r in rows:
                if r.get("failed") or r.get("cache_seqlens") or r.get("varlen_q") or r.get("page_size"):
                    continue
                s = series.setdefault(_series_key(r["dtype"], r["d"], r["causal"]), {})
                s.setdefault("fa_cl fused", []).append((r["Sq"], r["fused_tflops"]))
                if r.get("ref_tflops"):
                    s.setdefault("fa_cl reference (CLBlast)", []).append((r["Sq"], r["ref_tflops"]))
        elif "backend" in (rows[0] if rows else {}) or "Sq" in doc:  # torch_sdpa_anchor.py
            if doc.get("backward"):
                continue
            s = series.setdefault(_series_key(doc["dtype"], doc["d"], doc["causal"]), {})
            for r in rows:
                if r.get("backend") == "MATH":
                    continue
                s.setdefault("PyTorch " + r["backend"].replace("_ATTENTION", "").lower(), []).append(
                    (doc["Sq"], r["tflops"]))
        else:
            raise SystemExit("fa_cl.plot: a document is neither fa_cl_bench nor torch_sdpa_anchor.py JSON")
    return series


_COLORS = {"fa_cl fused": "tab:green", "fa_cl reference (CLBlast)": "tab:gray", "PyTorch flash": "tab:orange",
           "PyTorch cudnn": "tab:blue", "PyTorch efficient": "tab:purple"}


def draw(series, out, title=None):
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("fa_cl.plot needs matplotlib, which fa_cl itself does not: pip install fa_cl[plot]") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(series)
    if not keys:
        raise SystemExit("fa_cl.plot: no rows to draw")
    cols = min(len(keys), 4)
    rows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for label, pts in sorted(series[key].items()):
            pts = sorted(pts)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label, color=_COLORS.get(label),
                    linewidth=2.2 if label == "fa_cl fused" else 1.2)
        ax.set_xscale("log", base=2)
        ax.set_title(key, fontsize=10)
        ax.set_xlabel("sequence length")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m fa_cl.plot", description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+", help="fa_cl_bench --json files, then torch_sdpa_anchor.py --json files")
    p.add_argument("-o", "--output", required=True, help="the PNG to write")
    p.add_argument("--title", help="a title (default: the device from the fa_cl_bench JSON)")
    a = p.parse_args(argv)
    title = a.title
    if title is None:
        for path in a.json:
            try:
                with open(path) as f:
                    doc = json.load(f)
            except ValueError:
                continue
            if isinstance(doc.get("device"), str):
                title = doc["device"]
                break
            if isinstance(doc.get("device"), dict):
                title = doc["device"].get("name")
                break
    draw(load(a.json), a.output, title)
    print("fa_cl.plot: wrote %s" % a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
