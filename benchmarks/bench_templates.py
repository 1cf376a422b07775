"""Cost of the chat-template rules, and how they do on held-out templates.

Usage: python benchmarks/bench_templates.py [--files N] [--repeat R] [--corpus DIR] [--templates PATH...]
                                           [--render-only] [--sweep N] [--baseline CHECKOUT]

Prints the best check time of the carrier file without a template, with a real-sized template, with a 1 MiB
template, with a deeply nested one and with templates at the size limit that make the value analysis work hardest
(many tags; a long chain of names; a dict of many members looked up with unknown keys; thousands of costly
folds of 4096-character strings, which the fold_work budget bounds), with the time of jinja2's
parse of the same text for scale; the time to check N small files that each carry a chat template (written to a
temporary folder, checked one by one as ``gguf-construct check DIR`` does); and the verdicts on the held-out
templates and the followed-value payloads and benign forms of tests/template_corpus.py, on the chat templates of
the GGUF files under --corpus, and on the package templates of --templates (a llama-cpp-python sdist, a directory
of .jinja files or a .py file; see tests/test_template_taint.py).  Run it with
PYTHONPATH pointing at another checkout to compare (the template-free numbers are the speed before the rules).

The render oracle (issue #38), with --templates: the median check time of one file per package template with
rendering on and off (``--no-render``), measured in the same run and interleaved, their ratio, and with
--baseline the same median for another checkout (run in a subprocess, e.g. main before the oracle) and the ratio
to it; a sweep of --sweep files (1,000 by default) cycling the package templates, each made distinct so every
file is rendered (no cache hit), with rendering on and off; and the verdicts on the adversarial set of
tests/template_adversarial.py.  --render-only prints only these.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.environ.get("GGUF_CONSTRUCT_BENCH_CHECKOUT") or os.path.join(os.path.dirname(__file__), ".."))

import gguf_construct  # noqa: E402
from gguf_construct.breaking import crafting  # noqa: E402
from gguf_construct.checker import check  # noqa: E402

try:
    from gguf_construct.checker.jinja_scan import scan as _scan
except ImportError:  # a checkout before the template rules
    _scan = None


def uncached_check(data: bytes):
    """``check`` without the per-text cache of template analyses (the cost of a template seen first)."""
    if _scan is not None:
        _scan.cache_clear()
    return check(data)


def best(fn, repeat: int) -> float:
    """Fastest of ``repeat`` timed calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def with_template(text) -> bytes:
    """The carrier file with ``tokenizer.chat_template`` set (None: without it)."""
    raw = crafting.carrier()
    if text is not None:
        raw.set("tokenizer.chat_template", "STRING", text)
    return raw.to_bytes()


def _set_rendering(on: bool) -> None:
    try:
        from gguf_construct.checker import template_render
    except ImportError:  # a checkout before the render oracle
        return
    template_render.set_rendering(on)
    template_render.render.cache_clear()


def _uncached(data: bytes):
    try:
        from gguf_construct.checker import template_render

        template_render.render.cache_clear()
    except ImportError:
        pass
    return uncached_check(data)


def median_check_ms(texts: list, repeat: int) -> dict:
    """Median over ``texts`` of the best-of-``repeat`` uncached check time of a file carrying each, with
    rendering on and off, interleaved (on, off, on, off ... per file) so load drifts alike."""
    datas = [with_template(t) for t in texts]
    _set_rendering(True)
    check(datas[0])  # the render worker starts here, once
    on, off = [], []
    for data in datas:
        best_on = best_off = float("inf")
        for _ in range(repeat):
            _set_rendering(False)
            t0 = time.perf_counter()
            _uncached(data)
            best_off = min(best_off, time.perf_counter() - t0)
            _set_rendering(True)
            t0 = time.perf_counter()
            _uncached(data)
            best_on = min(best_on, time.perf_counter() - t0)
        on.append(best_on)
        off.append(best_off)
    return {"on": 1000 * statistics.median(on), "off": 1000 * statistics.median(off), "max_on": 1000 * max(on)}


def render_report(args, templates: dict) -> None:
    """The render oracle's cost and verdicts (see the module docstring)."""
    texts = [templates[k] for k in sorted(templates)]
    m = median_check_ms(texts, args.repeat)
    print(
        f"median check of {len(texts)} package templates: render on {m['on']:.1f} ms, off {m['off']:.1f} ms "
        f"(on/off {m['on'] / m['off']:.2f}x; slowest on {m['max_on']:.0f} ms)"
    )
    if args.baseline:
        env = dict(os.environ, GGUF_CONSTRUCT_BENCH_CHECKOUT=os.path.abspath(args.baseline))
        out = subprocess.run(
            [sys.executable, __file__, "--median-json", "--repeat", str(args.repeat), "--templates", *args.templates],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        base = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"baseline {args.baseline}: median {base['off']:.1f} ms; render on / baseline "
            f"{m['on'] / base['off']:.2f}x, render off / baseline {m['off'] / base['off']:.2f}x"
        )
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.sweep):
            with open(os.path.join(tmp, f"t{i:05d}.gguf"), "wb") as f:
                f.write(with_template(texts[i % len(texts)] + f"{{# file {i} #}}"))
        paths = sorted(glob.glob(os.path.join(tmp, "*.gguf")))
        for on in (True, False):
            _set_rendering(on)
            if _scan is not None:
                _scan.cache_clear()
            t0 = time.perf_counter()
            bad = sum(
                bool([f for f in check(p).findings if f.rule.startswith("TPL-") and f.severity != "info"])
                for p in paths
            )
            dt = time.perf_counter() - t0
            print(
                f"sweep of {len(paths)} distinct template files, render {'on ' if on else 'off'}: {dt:.2f} s "
                f"({dt / len(paths) * 1000:.1f} ms per file), {bad} with a TPL warning or error"
            )
    _set_rendering(True)
    try:
        from template_adversarial import BENIGN, GADGET, PAYLOADS
    except ImportError:
        return
    for on in (True, False):
        _set_rendering(on)
        errors = sum(
            bool({"TPL-ESCAPE", "TPL-GADGET"} & {f.rule for f in check(with_template(t)).errors()})
            for _, t, _ in PAYLOADS.values()
        )
        gadgets = [t for fam, t, _ in PAYLOADS.values() if fam == GADGET]
        as_gadget = sum("TPL-GADGET" in {f.rule for f in check(with_template(t)).errors()} for t in gadgets)
        silent = sum(
            not [f for f in check(with_template(t)).findings if f.rule.startswith("TPL-")] for t in BENIGN.values()
        )
        print(
            f"adversarial set, render {'on ' if on else 'off'}: {errors}/{len(PAYLOADS)} errors, "
            f"{as_gadget}/{len(gadgets)} gadgets as TPL-GADGET, {silent}/{len(BENIGN)} benign look-alikes silent"
        )
    _set_rendering(True)


def main() -> int:
    """Time the cases and print the verdicts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus"))
    ap.add_argument("--templates", nargs="*", default=[])
    ap.add_argument("--render-only", action="store_true", help="only the render oracle's numbers")
    ap.add_argument("--sweep", type=int, default=1000, help="files in the render sweep")
    ap.add_argument("--baseline", metavar="CHECKOUT", help="another checkout to time the same median with")
    ap.add_argument("--median-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.median_json or args.render_only:
        os.environ["GGUF_CONSTRUCT_REAL_TEMPLATES"] = os.pathsep.join(args.templates)
        from test_template_taint import _package_templates

        templates = _package_templates()
        if args.median_json:
            print(json.dumps(median_check_ms([templates[k] for k in sorted(templates)], args.repeat)))
        else:
            render_report(args, templates)
        return 0
    from template_corpus import HELD_OUT_MALICIOUS, HELD_OUT_REAL, REAL

    real = REAL["llama3.1-tools"]
    cases = {
        "no template": None,
        f"real template ({len(real)} chars)": real,
        "1 MiB template": "{# " + "lorem ipsum " * 90_000 + " #}" + real,
        "nesting 5000 deep": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
    }
    limit = 131072  # spec/templates.yaml limits.bytes: the largest template that is analysed
    heavy = {
        "128 KiB: 14563 tags": ("{{ a.b }}" * (limit // 9))[:limit],
        "128 KiB: chain of 3000 names": "".join(f"{{% set v{i} = v{i - 1} ~ 'x' %}}" for i in range(1, 3000))[
            : limit - 40
        ]
        + "{{ lipsum[v99] }}",
        "128 KiB: dict, unknown keys": (
            "{% set d = {" + ",".join(f"'k{i}': 'v{i}'" for i in range(4000)) + "} %}" + "{{ d[x] }}" * 5000
        )[:limit],
        "128 KiB: 4096-char wordwraps": "".join(
            f"{{{{ ('a b' * {1365 - i % 7})|wordwrap(1) }}}}" for i in range(limit // 40)
        ),
    }
    cases.update(heavy)
    print(
        f"{'case':32s} {'first check':>12s} {'best of ' + str(args.repeat):>12s} {'cached':>10s} {'jinja2 parse':>12s}"
    )
    for name, text in cases.items():
        data = with_template(text)
        t0 = time.perf_counter()
        check(data)
        first = time.perf_counter() - t0
        repeat = 1 if name in heavy else args.repeat
        parse = ""
        if name in heavy and _scan is not None:
            from gguf_construct.checker.jinja_scan import _environment

            parse = f"{best(lambda: _environment().parse(text), repeat) * 1000:10.2f}ms"
        print(
            f"{name:32s} {first * 1000:10.2f}ms {best(lambda: uncached_check(data), repeat) * 1000:10.2f}ms "
            f"{best(lambda: check(data), repeat) * 1000:8.2f}ms {parse:>12s}"
        )

    with tempfile.TemporaryDirectory() as tmp:
        variants = [with_template(t) for t in REAL.values()]
        for i in range(args.files):
            with open(os.path.join(tmp, f"m{i:05d}.gguf"), "wb") as f:
                f.write(variants[i % len(variants)])
        paths = sorted(glob.glob(os.path.join(tmp, "*.gguf")))
        t0 = time.perf_counter()
        bad = sum(not check(p).valid for p in paths)
        dt = time.perf_counter() - t0
        print(f"{len(paths)} files with templates: {dt:.2f} s ({dt / len(paths) * 1e6:.0f} us per file), {bad} invalid")
        plain = with_template(None)
        for p in paths:
            with open(p, "wb") as f:
                f.write(plain)
        t0 = time.perf_counter()
        for p in paths:
            check(p)
        dt = time.perf_counter() - t0
        print(f"{len(paths)} files without templates: {dt:.2f} s ({dt / len(paths) * 1e6:.0f} us per file)")

    if _scan is None:
        return 0
    clean = sum(
        not [f for f in check(with_template(t)).findings if f.rule.startswith("TPL-")] for t in HELD_OUT_REAL.values()
    )
    caught = sum(
        "TPL-ESCAPE" in {f.rule for f in check(with_template(t)).errors()} for t in HELD_OUT_MALICIOUS.values()
    )
    print(f"held-out real templates without finding: {clean}/{len(HELD_OUT_REAL)}")
    print(f"held-out malicious templates as errors: {caught}/{len(HELD_OUT_MALICIOUS)}")
    try:
        from template_corpus import FOLLOWED, FOLLOWED_BENIGN
    except ImportError:  # a checkout before issue #25
        FOLLOWED, FOLLOWED_BENIGN = {}, {}
    caught = sum("TPL-ESCAPE" in {f.rule for f in check(with_template(t)).errors()} for t, _ in FOLLOWED.values())
    clean = sum(
        not [f for f in check(with_template(t)).findings if f.rule.startswith("TPL-")] for t in FOLLOWED_BENIGN.values()
    )
    print(
        f"followed-value payloads as errors: {caught}/{len(FOLLOWED)}; "
        f"benign binding forms without finding: {clean}/{len(FOLLOWED_BENIGN)}"
    )
    if args.templates:
        os.environ["GGUF_CONSTRUCT_REAL_TEMPLATES"] = os.pathsep.join(args.templates)
        from test_template_taint import _package_templates

        found = _package_templates()
        t0 = time.perf_counter()
        flagged = [
            name
            for name, t in found.items()
            if [f for f in check(with_template(t)).findings if f.rule.startswith("TPL-") and f.severity != "info"]
        ]
        dt = time.perf_counter() - t0
        print(
            f"package templates: {len(found)}, {len(flagged)} with a TPL warning or error "
            f"({dt / max(len(found), 1) * 1000:.1f} ms per template) {flagged[:5]}"
        )
        render_report(args, found)
    files = sorted(glob.glob(os.path.join(args.corpus, "**", "*.gguf"), recursive=True))
    n_tpl = n_flag = 0
    for p in files:
        keys = [
            k
            for k in gguf_construct.load(p).metadata
            if k.startswith("tokenizer.chat_template") and k != "tokenizer.chat_templates"
        ]
        n_tpl += len(keys)
        n_flag += bool([f for f in check(p).findings if f.rule.startswith("TPL-")])
    print(f"corpus: {len(files)} files, {n_tpl} chat templates, {n_flag} files with a TPL finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
