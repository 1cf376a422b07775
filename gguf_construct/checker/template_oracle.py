"""The render oracle's verdicts: what the renders of a template (:mod:`.template_render`) prove, as
:class:`.jinja_scan.Issue` objects beside the static scan's.

- A canonical or trigger conversation whose render reaches an access jinja2's sandbox refuses is TPL-ESCAPE: an
  unsandboxed renderer would have made that access; the issue names the route (owner type and attribute) and the
  template line.
- An attack conversation whose render reaches a refused access no canonical render reached is TPL-GADGET: the
  template is harmless with ordinary messages and runs code for whoever writes that chat message; the issue
  quotes the content.
- One refused access on plain data (a dict the template built, indexed by a role that is ``__class__``) is inert
  and silent (spec/templates.yaml ``inert_owners``); the next hop of such a chain is refused on what the first
  gave (a hole) and reported.
- A render that passed its CPU, memory, wall-time or output limit is TPL-RESOURCE, and so is an ordinary or trigger
  render that ended in one of spec/templates.yaml ``resource_errors`` (unbounded recursion, an allocation past the
  worker's memory), or an attack conversation's render that does so when no ordinary one does (a count or width
  taken from message content).
"""

from __future__ import annotations

from dataclasses import replace

from . import template_contexts as _contexts
from .jinja_scan import ESCAPE, GADGET, RESOURCE, Issue

__all__ = ["render_issues", "annotate_lines"]

_FAILURES = {
    "timeout": "wall_seconds",
    "cpu": "cpu_seconds",
    "memory": "memory_bytes",
    "killed": "wall_seconds",
    "output": "response_bytes",
    "died": "memory_bytes",
}


def _route(access: list) -> str:
    what, owner, name, _ = access
    if what == "callable":
        return f"{name}() (an unsafe callable)"
    return f"(what a refused access gave).{name}" if owner == "_Hole" else f"{owner}.{name}"


def render_issues(result: dict) -> list[Issue]:
    """The issues the renders of one template prove (``result``: :func:`.template_render.render`)."""
    limits = _contexts.settings()
    if "failure" in result:
        key = _FAILURES.get(result["failure"], "wall_seconds")
        return [
            Issue(
                RESOURCE,
                f"rendering the template passed the render worker's {key} limit ({result['failure']})",
                "render",
                limits[key],
            )
        ]
    out: list[Issue] = []
    ordinary: set = set()
    exhausted_by: set = set()
    inert = set(limits["inert_owners"])
    for r in result.get("renders", []):
        if r["kind"] == "attack":
            continue
        for access in r["refused"]:
            if access[1] in inert:
                continue
            ordinary.add(tuple(access))
            how = (
                f"the {r['label']} conversation"
                if r["kind"] == "canonical"
                else f"a conversation with {r['label']!r} (a value the template compares its input with)"
            )
            out.append(
                Issue(
                    ESCAPE,
                    f"rendering {how} reaches {_route(access)}, which jinja2's sandbox refuses",
                    _route(access),
                    line=access[3] or None,
                )
            )
        exhausted = limits["resource_errors"].get(r["error"] or "")
        if exhausted and not r["stopped"] and r["error"] not in exhausted_by:
            exhausted_by.add(r["error"])  # one issue per kind of exhaustion: the first conversation that shows it
            out.append(
                Issue(
                    RESOURCE,
                    f"rendering the {r['label']} conversation ends in {r['error']} (past the render worker's "
                    f"{exhausted} limit)",
                    "render",
                    limits[exhausted],
                )
            )
        if r["stopped"] and r["kind"] == "canonical":
            out.append(
                Issue(
                    RESOURCE,
                    f"rendering the {r['label']} conversation writes past the output limit ({r['error'] or 'output'})",
                    "render",
                    limits["output_chars"],
                )
            )
    out_of_bounds = any(i.kind == RESOURCE for i in out)  # an ordinary render already exhausts a limit
    for r in result.get("renders", []):
        if r["kind"] != "attack":
            continue
        exhausted = limits["resource_errors"].get(r["error"] or "") or ("output_chars" if r["stopped"] else None)
        if exhausted and not out_of_bounds:
            out_of_bounds = True  # one issue: the first chat message that makes an ordinary template exhaust a limit
            out.append(
                Issue(
                    RESOURCE,
                    f"a chat message {r['label']!r} makes the render end in {r['error'] or 'output past the limit'} "
                    f"(past the render worker's {exhausted} limit), which ordinary conversations do not",
                    repr(r["label"]),
                    limits[exhausted],
                )
            )
        for access in r["refused"]:
            if tuple(access) not in ordinary and access[1] not in inert:
                out.append(
                    Issue(
                        GADGET,
                        f"a chat message {r['label']!r} makes the render reach {_route(access)}, "
                        f"which jinja2's sandbox refuses",
                        repr(r["label"]),
                        line=access[3] or None,
                    )
                )
    return list(dict.fromkeys(out))


def annotate_lines(issues: list[Issue], unrendered: set) -> list[Issue]:
    """Static issues with their line told apart: a line no context rendered is said to be so."""
    out = []
    for i in issues:
        if i.line is not None and i.line in unrendered and "no context rendered" not in i.problem:
            i = replace(i, problem=f"{i.problem} (line {i.line}, which no context rendered)")
        elif i.line is not None and "line " not in i.problem:
            i = replace(i, problem=f"{i.problem} (line {i.line})")
        out.append(i)
    return out
