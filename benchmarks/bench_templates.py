"""Cost of the chat-template rules, and how they do on held-out templates.

Usage: python benchmarks/bench_templates.py [--files N] [--repeat R] [--corpus DIR] [--templates PATH...]

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
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

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


def main() -> int:
    """Time the cases and print the verdicts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus"))
    ap.add_argument("--templates", nargs="*", default=[])
    args = ap.parse_args()
    from template_corpus import HELD_OUT_MALICIOUS, HELD_OUT_REAL, REAL

    real = REAL["llama3.1-tools"]
    cases = {"no template": None, f"real template ({len(real)} chars)": real,
             "1 MiB template": "{# " + "lorem ipsum " * 90_000 + " #}" + real,
             "nesting 5000 deep": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"}
    limit = 131072  # spec/templates.yaml limits.bytes: the largest template that is analysed
    heavy = {"128 KiB: 14563 tags": ("{{ a.b }}" * (limit // 9))[:limit],
             "128 KiB: chain of 3000 names": "".join(f"{{% set v{i} = v{i - 1} ~ 'x' %}}"
                                                     for i in range(1, 3000))[:limit - 40] + "{{ lipsum[v99] }}",
             "128 KiB: dict, unknown keys": ("{% set d = {" + ",".join(f"'k{i}': 'v{i}'" for i in range(4000))
                                            + "} %}" + "{{ d[x] }}" * 5000)[:limit],
             "128 KiB: 4096-char wordwraps": "".join(f"{{{{ ('a b' * {1365 - i % 7})|wordwrap(1) }}}}"
                                                      for i in range(limit // 40))}
    cases.update(heavy)
    print(f"{'case':32s} {'first check':>12s} {'best of ' + str(args.repeat):>12s} {'cached':>10s} "
          f"{'jinja2 parse':>12s}")
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
        print(f"{name:32s} {first * 1000:10.2f}ms {best(lambda: uncached_check(data), repeat) * 1000:10.2f}ms "
              f"{best(lambda: check(data), repeat) * 1000:8.2f}ms {parse:>12s}")

    with tempfile.TemporaryDirectory() as tmp:
        variants = [with_template(t) for t in REAL.values()]
        for i in range(args.files):
            with open(os.path.join(tmp, f"m{i:05d}.gguf"), "wb") as f:
                f.write(variants[i % len(variants)])
        paths = sorted(glob.glob(os.path.join(tmp, "*.gguf")))
        t0 = time.perf_counter()
        bad = sum(not check(p).valid for p in paths)
        dt = time.perf_counter() - t0
        print(f"{len(paths)} files with templates: {dt:.2f} s ({dt / len(paths) * 1e6:.0f} us per file), "
              f"{bad} invalid")
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
    clean = sum(not [f for f in check(with_template(t)).findings if f.rule.startswith("TPL-")]
                for t in HELD_OUT_REAL.values())
    caught = sum("TPL-ESCAPE" in {f.rule for f in check(with_template(t)).errors()}
                 for t in HELD_OUT_MALICIOUS.values())
    print(f"held-out real templates without finding: {clean}/{len(HELD_OUT_REAL)}")
    print(f"held-out malicious templates as errors: {caught}/{len(HELD_OUT_MALICIOUS)}")
    try:
        from template_corpus import FOLLOWED, FOLLOWED_BENIGN
    except ImportError:  # a checkout before issue #25
        FOLLOWED, FOLLOWED_BENIGN = {}, {}
    caught = sum("TPL-ESCAPE" in {f.rule for f in check(with_template(t)).errors()} for t, _ in FOLLOWED.values())
    clean = sum(not [f for f in check(with_template(t)).findings if f.rule.startswith("TPL-")]
                for t in FOLLOWED_BENIGN.values())
    print(f"followed-value payloads as errors: {caught}/{len(FOLLOWED)}; "
          f"benign binding forms without finding: {clean}/{len(FOLLOWED_BENIGN)}")
    if args.templates:
        os.environ["GGUF_CONSTRUCT_REAL_TEMPLATES"] = os.pathsep.join(args.templates)
        from test_template_taint import _package_templates
        found = _package_templates()
        t0 = time.perf_counter()
        flagged = [name for name, t in found.items() if [f for f in check(with_template(t)).findings
                                                           if f.rule.startswith("TPL-") and f.severity != "info"]]
        dt = time.perf_counter() - t0
        print(f"package templates: {len(found)}, {len(flagged)} with a TPL warning or error "
              f"({dt / max(len(found), 1) * 1000:.1f} ms per template) {flagged[:5]}")
    files = sorted(glob.glob(os.path.join(args.corpus, "**", "*.gguf"), recursive=True))
    n_tpl = n_flag = 0
    for p in files:
        keys = [k for k in gguf_construct.load(p).metadata if k.startswith("tokenizer.chat_template")
                and k != "tokenizer.chat_templates"]
        n_tpl += len(keys)
        n_flag += bool([f for f in check(p).findings if f.rule.startswith("TPL-")])
    print(f"corpus: {len(files)} files, {n_tpl} chat templates, {n_flag} files with a TPL finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
