// Score any GGUF reader on the suite with nothing but node: node score.mjs SUITE_DIR PROFILE READER [ARGS...]
// READER gets a case's path as its last argument; exit 0 = accept, 1-127 = reject, a signal = crash.  If it
// prints JSON {"metadata": [{"key", "value"}], ...} for an accepted file, the values of the keys are compared too.
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const [dir, profile, reader, ...args] = process.argv.slice(2);
const { cases } = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
const tally = {};
for (const c of cases) {
  const r = spawnSync(reader, [...args, join(dir, c.file)], { timeout: 30000, encoding: "utf8" });
  const got = r.error ? "hang" : r.signal || r.status >= 128 ? "crash" : r.status === 0 ? "accept" : "reject";
  const want = c.expect[profile];
  let verdict = got === "crash" || got === "hang" ? got
    : want === "either" || want === got ? "pass" : `false-${got}`;
  if (verdict === "pass" && got === "accept" && c.metadata && r.stdout.trim().startsWith("{")) {
    const theirs = new Map((JSON.parse(r.stdout).metadata ?? []).map((m) => [m.key, JSON.stringify(m.value)]));
    const wrong = c.metadata.filter((m) => m.type !== "ARRAY" && m.type !== "FLOAT32" && m.type !== "FLOAT64"
      && theirs.get(m.key) !== JSON.stringify(m.value));
    if (wrong.length) verdict = "wrong-values";
  }
  tally[verdict] = (tally[verdict] ?? 0) + 1;
  if (verdict !== "pass") console.log(`${verdict}\t${c.file}\t(expected ${want})`);
}
console.log(JSON.stringify(tally));
